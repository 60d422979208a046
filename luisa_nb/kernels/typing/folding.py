"""Constant folding of operations on two literals (or captured Python numbers).

Folding uses Python arithmetic, which is also what Python mode computes when it runs the
kernel function, so both modes agree: ``2**31`` is 2147483648 (an int64 literal, as if
written out), ``7 / 2`` is 3.5, ``2 ** -1`` is 0.5. A folded integer must fit in int64.
Under luisa-python's rules the typer folds ``//`` and ``%`` of two ints as "div" and
"rem" (truncated), which Python mode's rewritten function computes too.
"""

from __future__ import annotations

import operator as python_operator

from luisa_nb.kernels.rules import truncated_quotient, truncated_remainder

INT64_RANGE = (-(2**63), 2**63 - 1)
BINARY_FUNCTIONS = {
    "add": python_operator.add,
    "sub": python_operator.sub,
    "mul": python_operator.mul,
    "truediv": python_operator.truediv,
    "floordiv": python_operator.floordiv,
    "mod": python_operator.mod,
    "div": truncated_quotient,  # luisa-python's integer // and % (see ``rules``)
    "rem": truncated_remainder,
    "pow": python_operator.pow,
    "bitand": python_operator.and_,
    "bitor": python_operator.or_,
    "bitxor": python_operator.xor,
    "lshift": python_operator.lshift,
    "rshift": python_operator.rshift,
}
COMPARISON_FUNCTIONS = {
    "eq": python_operator.eq,
    "ne": python_operator.ne,
    "lt": python_operator.lt,
    "le": python_operator.le,
    "gt": python_operator.gt,
    "ge": python_operator.ge,
}
INTEGER_ONLY = ("bitand", "bitor", "bitxor", "lshift", "rshift", "div", "rem")
HUGE_EXPONENT = 64  # |base| > 1 to a larger power, or 1 shifted further, exceeds int64


class FoldError(ValueError):
    """An operation on two literals has no kernel value; the message says why."""


def foldable(operator: str, left: int | float, right: int | float) -> bool:
    """Whether ``left <operator> right`` is folded (bitwise operators need two ints)."""
    if operator in COMPARISON_FUNCTIONS:
        return True
    if operator not in BINARY_FUNCTIONS:
        return False
    return operator not in INTEGER_ONLY or (isinstance(left, int) and isinstance(right, int))


def fold(operator: str, symbol: str, left: int | float, right: int | float) -> int | float | bool:
    """``left <symbol> right`` computed as Python does, or :class:`FoldError`."""
    expression = f"{left!r} {symbol} {right!r}"
    huge = isinstance(left, int) and isinstance(right, int) and right > HUGE_EXPONENT
    if huge and ((operator == "pow" and abs(left) > 1) or (operator == "lshift" and left != 0)):
        raise FoldError(f"{expression} does not fit in 64 bits")
    if operator in ("div", "rem") and right == 0:
        raise FoldError(f"division by zero in {expression}")
    function = COMPARISON_FUNCTIONS.get(operator) or BINARY_FUNCTIONS[operator]
    try:
        value = function(left, right)
    except ZeroDivisionError:
        raise FoldError(f"division by zero in {expression}") from None
    except (OverflowError, ValueError) as error:
        raise FoldError(f"{expression}: {error}") from None
    if isinstance(value, complex):
        raise FoldError(f"{expression} is a complex number; kernels have real numbers only")
    if isinstance(value, int) and not INT64_RANGE[0] <= value <= INT64_RANGE[1]:
        raise FoldError(
            f"{expression} = {value} does not fit in 64 bits; kernel integers are at most "
            f"int64 (use a float literal, e.g. 2.0 ** 70, for larger values)"
        )
    return value
