"""Typing of expressions: one visitor method per construct, producing typed IR."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from luisa_nb.kernels import ir
from luisa_nb.kernels.frontend.validation import unsupported_feature
from luisa_nb.kernels.lang.aggregates import StructType
from luisa_nb.kernels.rules import (
    DIVISION_OPERATORS,
    float_remainder_message,
    is_float_valued,
    wrap_integer,
)
from luisa_nb.kernels.type_system import (
    INT32_RANGE,
    KernelType,
    MatrixType,
    PromotionError,
    ScalarType,
    VectorType,
    article,
    fits,
    is_aggregate_type,
    is_buffer_like,
    is_composite,
    luisa_types_active,
    promote,
    true_division_type,
)
from luisa_nb.kernels.typing.folding import INT64_RANGE, FoldError, fold, foldable

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

BUFFER_METHODS = (
    "buffers have only .read(i), .write(i, value) and atomics (.atomic_fetch_add(i, v), ...)"
)

BINARY_OPERATORS: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("add", "+"),
    ast.Sub: ("sub", "-"),
    ast.Mult: ("mul", "*"),
    ast.Div: ("truediv", "/"),
    ast.FloorDiv: ("floordiv", "//"),
    ast.Mod: ("mod", "%"),
    ast.Pow: ("pow", "**"),
    ast.BitAnd: ("bitand", "&"),
    ast.BitOr: ("bitor", "|"),
    ast.BitXor: ("bitxor", "^"),
    ast.LShift: ("lshift", "<<"),
    ast.RShift: ("rshift", ">>"),
    ast.MatMult: ("matmul", "@"),
}
COMPARISONS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Eq: ("eq", "=="),
    ast.NotEq: ("ne", "!="),
    ast.Lt: ("lt", "<"),
    ast.LtE: ("le", "<="),
    ast.Gt: ("gt", ">"),
    ast.GtE: ("ge", ">="),
}
BITWISE = ("bitand", "bitor", "bitxor", "lshift", "rshift")


def is_weak(expression: ir.Expression) -> bool:
    return isinstance(expression, ir.Constant) and expression.weak


class ExpressionTyping:
    """Mixin of :class:`KernelTyper` that types expressions."""

    def fail(self: KernelTyper, node: ast.AST, message: str) -> NoReturn:
        raise self.source.error(node, message)

    def literal(self: KernelTyper, value: Any, node: ast.AST) -> ir.Constant:
        """A Python bool/int/float as a constant; ints and floats are weak."""
        if isinstance(value, (bool, np.bool_)):
            return ir.Constant(ScalarType.BOOL, bool(value))
        if isinstance(value, int):
            if INT32_RANGE[0] <= value <= INT32_RANGE[1]:
                return ir.Constant(ScalarType.INT32, value, weak=True)
            if INT64_RANGE[0] <= value <= INT64_RANGE[1]:
                return ir.Constant(ScalarType.INT64, value, weak=True)
            self.fail(node, f"the integer {value} does not fit in 64 bits")
        return ir.Constant(ScalarType.FLOAT32, float(value), weak=True)

    def scalar(self: KernelTyper, expression: ir.Expression, node: ast.AST) -> ir.Expression:
        if is_composite(expression.type):
            self.fail(node, f"{article(expression.type)} value is used where a scalar is needed")
        return expression

    def convert(
        self: KernelTyper, expression: ir.Expression, target: KernelType, node: ast.AST
    ) -> ir.Expression:
        """``expression`` as type ``target``; weak literals are re-typed, others cast."""
        if expression.type == target:
            return expression
        if isinstance(target, VectorType):
            return self.broadcast(expression, target, node)
        if is_weak(expression):
            value = expression.value
            if luisa_types_active() and isinstance(value, float) and target.is_integer:
                return ir.Cast(target, expression)  # luisa-python stores 2.7 as 2
            return self.literal_as(value, target, node)
        return ir.Cast(target, expression)

    def literal_as(
        self: KernelTyper, value: int | float | bool, target: ScalarType, node: ast.AST
    ) -> ir.Constant:
        """A literal as a constant of ``target``, which must represent it; under C's sign
        mixing (luisa-python's rules) a negative int becomes an unsigned one by wrapping,
        as C converts it."""
        if fits(value, target):
            return ir.Constant(target, float(value) if target.is_float else int(value))
        wraps = self.rules.c_sign_mixing and target.is_integer and not target.is_signed
        if not (wraps and type(value) is int and -(1 << (target.bits - 1)) <= value < 0):
            self.fail(node, f"the literal {value!r} does not fit {target.value}")
        return ir.Constant(target, wrap_integer(value, target))

    def to_bool(self: KernelTyper, expression: ir.Expression, node: ast.AST) -> ir.Expression:
        """Python truthiness: numbers compare with zero."""
        if is_composite(expression.type):
            self.fail(
                node,
                f"{article(expression.type)} value is not a single condition; use any(...) or "
                f"all(...)",
            )
        if expression.type is ScalarType.BOOL:
            return expression
        zero = ir.Constant(expression.type, 0.0 if expression.type.is_float else 0)
        return ir.Binary(ScalarType.BOOL, "ne", expression, zero)

    def common_type(
        self: KernelTyper, expressions: list[ir.Expression], node: ast.AST, what: str
    ) -> ScalarType:
        """The promoted type of several operands (see ``type_system.promote``)."""
        result, weak = expressions[0].type, is_weak(expressions[0])
        for expression in expressions[1:]:
            if result is ScalarType.BOOL and expression.type is ScalarType.BOOL:
                continue
            try:
                result = promote(result, expression.type, weak, is_weak(expression))
            except PromotionError as error:
                self.fail(node, f"{what}: {error}")
            weak = weak and is_weak(expression)
        return result

    def arithmetic(
        self: KernelTyper,
        operator: str,
        symbol: str,
        left: ir.Expression,
        right: ir.Expression,
        node: ast.AST,
    ) -> ir.Expression:
        """Type ``left <symbol> right``, folding operations on two literals; ``//`` and
        ``%`` follow the kernel's rules (``rules.KernelRules.division_operator``)."""
        if operator in DIVISION_OPERATORS:
            floating = is_float_valued(left.type) or is_float_valued(right.type)
            ruled = self.rules.division_operator(operator, floating)
            if ruled is None:
                kinds = (left.type, right.type)
                names = [t.value if isinstance(t, ScalarType) else str(t) for t in kinds]
                self.fail(node, float_remainder_message(*names))
            operator = ruled
        if operator == "matmul" or is_composite(left.type) or is_composite(right.type):
            return self.composite_arithmetic(operator, left, right, node)
        if is_weak(left) and is_weak(right) and foldable(operator, left.value, right.value):
            return self.literal(self.folded(operator, symbol, left, right, node), node)
        both_bool = left.type is ScalarType.BOOL and right.type is ScalarType.BOOL
        if both_bool and operator in ("bitand", "bitor", "bitxor"):
            return ir.Binary(ScalarType.BOOL, operator, left, right)
        what = f"operator {symbol} on {left.type.value} and {right.type.value}"
        common = self.common_type([left, right], node, what)
        if operator in BITWISE and not common.is_integer:
            self.fail(node, f"{what}: bitwise operators need integer operands")
        if operator == "truediv":
            common = true_division_type(common)
        return ir.Binary(
            common, operator, self.convert(left, common, node), self.convert(right, common, node)
        )

    def folded(
        self: KernelTyper,
        operator: str,
        symbol: str,
        left: ir.Constant,
        right: ir.Constant,
        node: ast.AST,
    ) -> int | float | bool:
        try:
            return fold(operator, symbol, left.value, right.value)
        except FoldError as error:
            self.fail(node, str(error))

    def comparison(
        self: KernelTyper,
        operator: str,
        symbol: str,
        left: ir.Expression,
        right: ir.Expression,
        node: ast.AST,
    ) -> ir.Expression:
        if is_composite(left.type) or is_composite(right.type):
            return self.vector_arithmetic(operator, left, right, node)
        if is_weak(left) and is_weak(right):
            return self.literal(self.folded(operator, symbol, left, right, node), node)
        if (left.type is ScalarType.BOOL) != (right.type is ScalarType.BOOL):
            self.fail(
                node,
                f"cannot compare {left.type.value} with {right.type.value}; convert the bool "
                f"with int(...)",
            )
        what = f"comparison {symbol} of {left.type.value} and {right.type.value}"
        common = self.common_type([left, right], node, what)
        return ir.Binary(
            ScalarType.BOOL,
            operator,
            self.convert(left, common, node),
            self.convert(right, common, node),
        )

    def reject_unsupported(self: KernelTyper, value: Any, name: str, node: ast.AST) -> None:
        """A compile error for luisa-python features luisa_nb lacks
        (``validation.unsupported_feature``)."""
        message = unsupported_feature(value, name)
        if message is not None:
            self.fail(node, message)

    def captured_value(self: KernelTyper, value: Any, name: str, node: ast.AST) -> ir.Expression:
        """A captured Python object used as a value: it must be a scalar constant."""
        self.reject_unsupported(value, name, node)
        if is_buffer_like(value):
            self.fail(
                node,
                f"buffer {name!r} can only be used as {name}.read(i) or {name}.write(i, value)",
            )
        if isinstance(value, np.generic) and not isinstance(value, np.bool_):
            try:
                scalar_type = ScalarType.from_dtype(value.dtype)
            except ValueError as error:
                self.fail(node, f"captured {name!r}: {error}")
            return ir.Constant(scalar_type, value.item())
        if isinstance(value, (bool, int, float, np.bool_)):
            return self.literal(value, node)
        value_type = getattr(type(value), "__lnb_type__", None)
        if is_aggregate_type(value_type):
            return self.aggregate_constant(value_type, value, node)
        if isinstance(value_type, (VectorType, MatrixType)):
            element = value_type.element
            components = np.asarray(value, dtype=element.dtype).ravel(order="F").tolist()
            constants = tuple(ir.Constant(element, c) for c in components)
            return ir.Construct(value_type, constants)
        self.fail(
            node,
            f"{name!r} is {article(type(value).__name__)}, which kernels cannot use as a value; "
            f"kernels capture only buffers and bool/int/float constants",
        )

    def visit_Constant(self: KernelTyper, node: ast.Constant) -> ir.Expression:
        if isinstance(node.value, str):
            self.fail(node, "strings are only allowed as arguments of print(...)")
        return self.literal(node.value, node)

    def visit_Name(self: KernelTyper, node: ast.Name) -> ir.Expression:
        name = node.id
        if name in self.buffer_arguments:
            raise self.argument_mismatch(name, node)
        if name in self.local_names:
            if name not in self.locals:
                self.fail(node, f"local variable {name!r} is used before it is assigned")
            return ir.Local(self.locals[name], name)
        return self.captured_value(self.resolve(node), name, node)

    def visit_Attribute(self: KernelTyper, node: ast.Attribute) -> ir.Expression:
        if self.is_buffer(node.value):
            self.fail(node, f"{BUFFER_METHODS}, not .{node.attr}")
        if self.is_capture_chain(node):
            return self.captured_value(self.resolve(node), ast.unparse(node), node)
        operand = self.visit(node.value)
        if isinstance(operand.type, VectorType):
            return self.swizzle(operand, node.attr, node)
        if isinstance(operand.type, StructType):
            return self.field(operand, node.attr, node)
        self.fail(node, f"{operand.type} values have no attribute {node.attr!r}")

    def visit_BinOp(self: KernelTyper, node: ast.BinOp) -> ir.Expression:
        operator, symbol = BINARY_OPERATORS[type(node.op)]
        return self.arithmetic(
            operator, symbol, self.visit(node.left), self.visit(node.right), node
        )

    def visit_UnaryOp(self: KernelTyper, node: ast.UnaryOp) -> ir.Expression:
        operand = self.visit(node.operand)
        if is_composite(operand.type):
            return self.vector_unary(node.op, operand, node)
        if isinstance(node.op, ast.Not):
            return ir.Unary(ScalarType.BOOL, "not", self.to_bool(operand, node))
        if operand.type is ScalarType.BOOL:
            self.fail(node, "unary -, + and ~ do not apply to bool; convert with int(...)")
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            if is_weak(operand):
                return self.literal(-operand.value, node)
            return ir.Unary(operand.type, "neg", operand)
        if not operand.type.is_integer:
            self.fail(node, f"~ needs an integer operand, got {operand.type.value}")
        if is_weak(operand):
            return self.literal(~operand.value, node)
        return ir.Unary(operand.type, "invert", operand)

    def visit_BoolOp(self: KernelTyper, node: ast.BoolOp) -> ir.Expression:
        operator = "and" if isinstance(node.op, ast.And) else "or"
        if self.rules.vector_boolean_operators:
            operands = [self.visit(value_node) for value_node in node.values]
            if any(isinstance(operand.type, VectorType) for operand in operands):
                bitwise, symbol = ("bitand", "&") if operator == "and" else ("bitor", "|")
                result = operands[0]
                for operand in operands[1:]:
                    result = self.arithmetic(bitwise, symbol, result, operand, node)
                return result
        values = []
        for value_node in node.values:
            value = self.scalar(self.visit(value_node), value_node)
            if value.type is not ScalarType.BOOL:
                self.fail(
                    value_node,
                    f"`{operator}` needs bool operands, got {value.type.value}; compare "
                    f"explicitly (e.g. x != 0)",
                )
            values.append(value)
        result = values[0]
        combined = self.strict_operator(operator)
        for value in values[1:]:
            result = ir.Binary(ScalarType.BOOL, combined, result, value)
        return result

    def strict_operator(self: KernelTyper, operator: str) -> str:
        """``and``/``or`` of bool scalars; luisa-python evaluates both operands (so a
        callable in the second one runs, and prints, whatever the first gave)."""
        if not self.rules.vector_boolean_operators:
            return operator
        return "bitand" if operator == "and" else "bitor"

    def visit_Compare(self: KernelTyper, node: ast.Compare) -> ir.Expression:
        left = self.visit(node.left)
        result = None
        for operator_node, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.visit(right_node)
            operator, symbol = COMPARISONS[type(operator_node)]
            test = self.comparison(operator, symbol, left, right, node)
            if len(node.ops) > 1 and is_composite(test.type):
                self.fail(node, "chained comparisons need scalars; combine vector tests with &")
            combined = self.strict_operator("and")
            result = test if result is None else ir.Binary(ScalarType.BOOL, combined, result, test)
            left = right
        return result

    def visit_IfExp(self: KernelTyper, node: ast.IfExp) -> ir.Expression:
        condition = self.to_bool(self.visit(node.test), node.test)
        if_true, if_false = self.visit(node.body), self.visit(node.orelse)
        if is_composite(if_true.type) or is_composite(if_false.type):
            return self.composite_select(condition, if_true, if_false, node)
        if (if_true.type is ScalarType.BOOL) != (if_false.type is ScalarType.BOOL):
            self.fail(
                node,
                f"the branches of `if ... else` have types {if_true.type.value} and "
                f"{if_false.type.value}; make them the same type",
            )
        what = f"`if ... else` with branches {if_true.type.value} and {if_false.type.value}"
        common = self.common_type([if_true, if_false], node, what)
        return ir.Select(
            common,
            condition,
            self.convert(if_true, common, node),
            self.convert(if_false, common, node),
        )

    def visit_JoinedStr(self: KernelTyper, node: ast.JoinedStr) -> ir.Expression:
        self.fail(
            node,
            "f-strings are only allowed in print(...) in Python mode; a kernel's print takes "
            "values separated by commas",
        )
