"""The rules a kernel's source is read by, where Python and luisa-python differ.

A :class:`KernelDefinition` carries one :class:`KernelRules`; the typer, constant folding,
the C emitter and Python mode all follow it, and it is part of the compile cache key.
``PYTHON_RULES`` (luisa_nb's own kernels) compute what Python computes. ``LUISA_RULES``
(kernels made by ``luisa_nb.luisa.func``) compute what real luisa-python 0.3.7 does:

- integer ``//`` and ``%`` truncate toward zero, as in C (``-7 // 2 == -3``,
  ``-7 % 2 == -1``); float ``//`` is a true division (``-7.5 // 2.0 == -3.75``) and float
  ``%`` is a compile error, as LuisaCompute rejects it;
- after a ``for v in range(...)`` loop that ran to its end (no ``break``), ``v`` is
  ``start + iterations * step``, the value of C's loop counter; a loop that never ran
  leaves ``start``. The number of iterations stays Python's (luisa-python's loop
  condition is always ``<``, so its negative-step ranges never run);
- signed and unsigned integers combine as C's usual conversions say: int32 with uint32
  is uint32 (so ``int2(-1, 3) < uint2(2, 2)`` is ``(False, False)``);
- ``a and b``, ``a or b`` with bool vectors combine them component by component (as
  ``&``, ``|``); luisa-python evaluates both operands.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from luisa_nb.kernels.type_system import (
    MatrixType,
    ScalarType,
    VectorType,
    c_sign_mixing,
    element_of,
    luisa_types,
)

DIVISION_OPERATORS = ("floordiv", "mod")


@dataclass(frozen=True)
class KernelRules:
    """How a kernel reads ``//``, ``%`` and a ``for`` variable after its loop.

    ``truncated_division``: integer ``//``/``%`` truncate (C), float ``//`` divides and
    float ``%`` is rejected. ``loop_end_values``: a ``for`` variable ends at
    ``start + iterations * step`` after a loop that was not left by ``break``.
    ``c_sign_mixing``: signed and unsigned integers combine as in C (``int2 < uint2``
    compares as uint2) instead of being rejected. ``luisa_types``: ``dispatch_id()``,
    ``dispatch_size()``, ``thread_id()`` and ``block_id()`` are ``uint3``; a number stores
    into any numeric place as a C cast.
    ``vector_boolean_operators``: ``and`` and ``or`` with a bool vector operand work
    component by component, as ``&`` and ``|``.
    """

    name: str
    truncated_division: bool
    loop_end_values: bool
    c_sign_mixing: bool
    vector_boolean_operators: bool
    luisa_types: bool = False

    @contextmanager
    def applied(self) -> Iterator[None]:
        """The block in which these rules' typing applies (while a kernel is typed, and
        while Python mode runs it): C's mixing of signed and unsigned integers, and
        luisa-python's conversions (``type_system.luisa_types``)."""
        with c_sign_mixing(self.c_sign_mixing), luisa_types(self.luisa_types):
            yield

    def __repr__(self) -> str:
        return f"<KernelRules {self.name}>"

    def division_operator(self, operator: str, floating: bool) -> str | None:
        """The IR operator of ``operator`` ("floordiv", "mod" or any other) on operands of
        which one is a float when ``floating``; None where these rules have no such
        operation (float ``%`` under luisa-python's rules)."""
        if not self.truncated_division or operator not in DIVISION_OPERATORS:
            return operator
        if floating:
            return "truediv" if operator == "floordiv" else None
        return "div" if operator == "floordiv" else "rem"

    @property
    def rewrites_python(self) -> bool:
        """Whether Python mode runs a rewritten copy of the function (see ``python.rules``)."""
        return (
            self.truncated_division
            or self.loop_end_values
            or self.c_sign_mixing
            or self.vector_boolean_operators
        )


PYTHON_RULES = KernelRules(
    "python",
    truncated_division=False,
    loop_end_values=False,
    c_sign_mixing=False,
    vector_boolean_operators=False,
)
LUISA_RULES = KernelRules(
    "luisa",
    truncated_division=True,
    loop_end_values=True,
    c_sign_mixing=True,
    vector_boolean_operators=True,
    luisa_types=True,
)


def is_float_valued(kind: object) -> bool:
    """Whether ``kind`` is a float scalar, vector or matrix type."""
    numeric = isinstance(kind, (ScalarType, VectorType, MatrixType))
    return numeric and element_of(kind).is_float


def float_remainder_message(left: str, right: str) -> str:
    """The compile error of ``%`` with a float operand under luisa-python's rules."""
    return (
        f"operator % on {left} and {right}: luisa-python's kernels take % only on int and "
        f"uint values (LuisaCompute rejects it: 'operator Mod only supports int and uint "
        f"types'); write x - y * trunc(x / y) for C's fmod or x - y * floor(x / y) for a "
        f"floored remainder (luisa_nb also has fmod(x, y) and mod(x, y))"
    )


def truncated_quotient(left: int, right: int) -> int:
    """``left / right`` rounded toward zero, on Python ints (0 when ``right`` is 0, as the
    compiled helper gives)."""
    if right == 0:
        return 0
    quotient = abs(left) // abs(right)
    return quotient if (left < 0) == (right < 0) else -quotient


def truncated_remainder(left: int, right: int) -> int:
    """C's ``left % right`` on Python ints: the sign of ``left`` (0 when ``right`` is 0)."""
    return left - right * truncated_quotient(left, right) if right else 0


def wrap_integer(value: int, kind: ScalarType) -> int:
    """``value`` wrapped into integer type ``kind`` as a C cast (or -fwrapv) does."""
    modulus = 1 << kind.bits
    wrapped = value % modulus
    if kind.is_signed and wrapped >= modulus >> 1:
        wrapped -= modulus
    return wrapped
