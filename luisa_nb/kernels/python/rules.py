"""Python mode under luisa-python's rules (``rules.LUISA_RULES``).

Python mode runs the kernel function as Python, so a kernel with luisa-python's rules
runs a rewritten copy of its source (see ``python.value_copies.copying_function``) in which

- ``a // b`` and ``a % b`` (also ``a //= b``, ``a %= b``) call :func:`luisa_floordiv`
  and :func:`luisa_mod`, which compute what the compiled helpers compute;
- ``+ - * & | ^`` (also as ``+=`` and the like) and single comparisons call
  :func:`c_mixed`, which converts a signed and an unsigned integer operand as C does
  first (vectors do so in their own operators);
- ``a and b``, ``a or b`` call :func:`luisa_and`/:func:`luisa_or` (bool vectors combine
  component by component);
- ``for v in range(...): body`` becomes ``loop = range(...)``, then
  ``for v in loop: body`` with ``else: v = loop.end``: Python's ``else`` runs exactly when
  no ``break`` left the loop, which is when the C keeps the counter's end value.

The typer has checked the source by then: every ``for`` iterates over ``range`` and no
``%`` has a float operand.
"""

from __future__ import annotations

import ast
import copy
import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from luisa_nb.kernels.lang.device_print import format_python_value
from luisa_nb.kernels.lang.math_builtins import apply
from luisa_nb.kernels.lang.scalar_names import convert_scalar
from luisa_nb.kernels.lang.vectors import Vector, c_quotient, value_type
from luisa_nb.kernels.rules import (
    KernelRules,
    is_float_valued,
    truncated_quotient,
    truncated_remainder,
    wrap_integer,
)
from luisa_nb.kernels.type_system import ScalarType, c_sign_mixing, promote

DIVIDE_NAME = "__lnb_divide__"
REMAINDER_NAME = "__lnb_remainder__"
RANGE_NAME = "__lnb_range__"
MIXED_NAME = "__lnb_mixed__"
OPERATOR_NAME = "__lnb_operator__"
AND_NAME = "__lnb_and__"
OR_NAME = "__lnb_or__"
TEXT_NAME = "__lnb_device_text__"  # an f-string field in a device print
LOOP_PREFIX = "__lnb_loop"


def _is_float(value: Any) -> bool:
    kind = value_type(value)
    return kind is not None and is_float_valued(kind[0])


def _is_python_int(value: Any) -> bool:
    return type(value) is int


def luisa_floordiv(left: Any, right: Any) -> Any:
    """``left // right`` under luisa-python's rules: a true division when an operand is a
    float, else rounded toward zero in the operands' common type."""
    if _is_float(left) or _is_float(right):
        return left / right
    if _is_python_int(left) and _is_python_int(right):
        return truncated_quotient(left, right)
    return apply(c_quotient, (left, right), "//", floating=False)


def luisa_mod(left: Any, right: Any) -> Any:
    """``left % right`` under luisa-python's rules (integers only): the sign of ``left``."""
    if _is_python_int(left) and _is_python_int(right):
        return truncated_remainder(left, right)
    return apply(np.fmod, (left, right), "%", floating=False)


class KernelRange:
    """``range`` in Python mode: numpy integers of the bounds' common numpy type (int32
    when all are Python ints). ``end`` is ``start + iterations * step`` in that type,
    wrapped as C's counter wraps: the loop variable after the loop under luisa-python's
    rules."""

    __slots__ = ("scalar", "values")

    def __init__(self, *bounds: Any) -> None:
        typed = [bound for bound in bounds if isinstance(bound, np.integer)]
        self.scalar = np.result_type(*typed).type if typed else np.int32
        self.values = range(*(int(bound) for bound in bounds))

    def __iter__(self) -> Iterator[np.integer]:
        scalar = self.scalar
        for value in self.values:
            yield scalar(value)

    @property
    def end(self) -> np.integer:
        values = self.values
        end = values.start + len(values) * values.step
        return self.scalar(wrap_integer(end, ScalarType.from_dtype(np.dtype(self.scalar))))


def c_operands(left: Any, right: Any) -> tuple[Any, Any]:
    """Scalar operands of which one is a signed and the other an unsigned integer, both
    converted to their C common type (see ``type_system.promote``); others unchanged.
    Vectors convert in their own operators."""
    typed = value_type(left), value_type(right)
    if None in typed or not all(isinstance(kind, ScalarType) for kind, _ in typed):
        return left, right
    (left_kind, left_weak), (right_kind, right_weak) = typed
    if not (left_kind.is_integer and right_kind.is_integer):
        return left, right
    if left_kind.is_signed == right_kind.is_signed:
        return left, right
    with c_sign_mixing():
        common = promote(left_kind, right_kind, left_weak, right_weak)
    return convert_scalar(left, common), convert_scalar(right, common)


def luisa_and(*operands: Any) -> Any:
    """``a and b and ...`` under luisa-python's rules: every operand evaluated, bool
    vectors combined component by component."""
    return _combined(operands, operator.and_, lambda left, right: left and right)


def luisa_or(*operands: Any) -> Any:
    """``a or b or ...`` under luisa-python's rules (see :func:`luisa_and`)."""
    return _combined(operands, operator.or_, lambda left, right: left or right)


def _combined(
    operands: tuple[Any, ...],
    on_vectors: Callable[[Any, Any], Any],
    on_scalars: Callable[[Any, Any], Any],
) -> Any:
    result = operands[0]
    for operand in operands[1:]:
        vectors = isinstance(result, Vector) or isinstance(operand, Vector)
        result = (on_vectors if vectors else on_scalars)(result, operand)
    return result


def c_mixed(operation: Callable[[Any, Any], Any], left: Any, right: Any) -> Any:
    """``operation(left, right)`` after :func:`c_operands`."""
    return operation(*c_operands(left, right))


HELPERS = {
    DIVIDE_NAME: luisa_floordiv,
    REMAINDER_NAME: luisa_mod,
    RANGE_NAME: KernelRange,
    MIXED_NAME: c_mixed,
    AND_NAME: luisa_and,
    OR_NAME: luisa_or,
    OPERATOR_NAME: operator,
    TEXT_NAME: format_python_value,
}
DIVISIONS = {ast.FloorDiv: DIVIDE_NAME, ast.Mod: REMAINDER_NAME}
MIXED_OPERATORS = {  # operators whose integer operands C converts to a common type
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.BitAnd: "and_",
    ast.BitOr: "or_",
    ast.BitXor: "xor",
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
    ast.Eq: "eq",
    ast.NotEq: "ne",
}


class RulesRewriter(ast.NodeTransformer):
    """Rewrites a kernel's function so that Python computes what ``rules`` say."""

    def __init__(self, rules: KernelRules) -> None:
        self.rules = rules
        self.loops = 0

    def division(self, operator: ast.operator, left: ast.expr, right: ast.expr) -> ast.expr:
        call = ast.Call(ast.Name(DIVISIONS[type(operator)], ast.Load()), [left, right], [])
        return ast.copy_location(call, left)

    def mixed(self, operator: ast.AST, left: ast.expr, right: ast.expr, at: ast.AST) -> ast.expr:
        """``operator.<name>`` applied through :func:`c_mixed`."""
        function = ast.Attribute(
            ast.Name(OPERATOR_NAME, ast.Load()), MIXED_OPERATORS[type(operator)], ast.Load()
        )
        call = ast.Call(ast.Name(MIXED_NAME, ast.Load()), [function, left, right], [])
        return ast.copy_location(call, at)

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        if self.rules.truncated_division and type(node.op) in DIVISIONS:
            return ast.copy_location(self.division(node.op, node.left, node.right), node)
        if self.rules.c_sign_mixing and type(node.op) in MIXED_OPERATORS:
            return self.mixed(node.op, node.left, node.right, node)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        self.generic_visit(node)
        if not self.rules.vector_boolean_operators:
            return node
        name = AND_NAME if isinstance(node.op, ast.And) else OR_NAME
        call = ast.Call(ast.Name(name, ast.Load()), node.values, [])
        return ast.copy_location(call, node)

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)
        if len(node.ops) > 1 and self.rules.vector_boolean_operators:
            return self.strict_chain(node)
        (operator,) = node.ops if len(node.ops) == 1 else (None,)
        if self.rules.c_sign_mixing and type(operator) in MIXED_OPERATORS:
            return self.mixed(operator, node.left, node.comparators[0], node)
        return node

    def strict_chain(self, node: ast.Compare) -> ast.expr:
        """``a < b < c`` as luisa-python computes it: every comparison made (``b``, an
        operand of two, is evaluated for each)."""
        operands = [node.left, *node.comparators]
        tests = [
            self.visit_Compare(
                ast.copy_location(ast.Compare(copy.deepcopy(left), [operator], [right]), node)
            )
            for left, operator, right in zip(operands[:-1], node.ops, operands[1:], strict=True)
        ]
        return ast.copy_location(ast.Call(ast.Name(AND_NAME, ast.Load()), tests, []), node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        self.generic_visit(node)
        rules, kind = self.rules, type(node.op)
        divides = rules.truncated_division and kind in DIVISIONS
        mixes = rules.c_sign_mixing and kind in MIXED_OPERATORS
        if not (divides or mixes):
            return node
        current = copy.deepcopy(node.target)
        current.ctx = ast.Load()
        if divides:
            value = self.division(node.op, current, node.value)
        else:
            value = self.mixed(node.op, current, node.value, node.value)
        return ast.copy_location(ast.Assign([node.target], value), node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.expr:
        """A field of an f-string (which kernels allow only in ``print``) formatted as a
        device print formats values, under luisa-python's types."""
        self.generic_visit(node)
        if self.rules.luisa_types:
            call = ast.Call(ast.Name(TEXT_NAME, ast.Load()), [node.value], [])
            node.value = ast.copy_location(call, node.value)
        return node

    def visit_For(self, node: ast.For) -> ast.stmt | list[ast.stmt]:
        self.generic_visit(node)
        call = node.iter
        ranged = isinstance(call, ast.Call) and ast.unparse(call.func).endswith("range")
        if not self.rules.loop_end_values or not ranged:
            return node  # a loop over an array, vector or matrix ends on its last element
        holder = f"{LOOP_PREFIX}{self.loops}__"
        self.loops += 1
        bounds = ast.Call(ast.Name(RANGE_NAME, ast.Load()), node.iter.args, [])
        made = ast.copy_location(ast.Assign([ast.Name(holder, ast.Store())], bounds), node)
        node.iter = ast.copy_location(ast.Name(holder, ast.Load()), node.iter)
        end = ast.Attribute(ast.Name(holder, ast.Load()), "end", ast.Load())
        target = ast.Name(node.target.id, ast.Store())
        node.orelse = [ast.copy_location(ast.Assign([target], end), node)]
        return [made, node]
