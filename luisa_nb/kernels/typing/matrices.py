"""Typing of matrices: constructors, products, scaling, element-wise ``+``/``-``, unary
``-`` and ``transpose``/``determinant``/``inverse``, with luisa-python's rules. A mixin of
:class:`~luisa_nb.kernels.typing.typer.KernelTyper`; columns (``m[i]``) are typed with vector
elements in ``typing.vectors``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.matrices import CONSTRUCTOR_FORMS, DIVISION_HINT, multiply_hint
from luisa_nb.kernels.type_system import (
    OPERATOR_VERBS,
    MatrixType,
    PromotionError,
    ScalarType,
    promote,
)
from luisa_nb.kernels.typing.expressions import is_weak

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

MATRIX_FUNCTIONS = ("transpose", "determinant", "inverse")


class MatrixTyping:
    """Mixin of :class:`KernelTyper` for matrix expressions."""

    def matrix_arithmetic(
        self: KernelTyper,
        operator: str,
        left: ir.Expression,
        right: ir.Expression,
        node: ast.AST,
    ) -> ir.Expression:
        """``m * v``, ``m * m`` (also with ``@``), ``m * s``, ``s * m``, ``m / s``, ``m + m``,
        ``m - m``."""
        kinds = (left.type, right.type)
        verb = OPERATOR_VERBS.get(operator, "multiply" if operator == "matmul" else "combine")
        what = f"cannot {verb} {left.type} and {right.type}"
        if operator in ("mul", "matmul"):
            symbol = "*" if operator == "mul" else "@"
            matrix = left.type if isinstance(left.type, MatrixType) else right.type
            if isinstance(left.type, MatrixType) and right.type in (matrix, matrix.column):
                return ir.Binary(right.type, "mul", left, right)
            scalar = left if isinstance(right.type, MatrixType) else right
            if operator == "mul" and isinstance(scalar.type, ScalarType):
                scale = self.matrix_scale(scalar, what, node)
                pair = (scale, right) if scalar is left else (left, scale)
                return ir.Binary(matrix, "mul", *pair)
            self.fail(node, what + multiply_hint(*kinds, symbol))
        if operator == "truediv" and isinstance(right.type, ScalarType):
            return ir.Binary(left.type, "truediv", left, self.matrix_scale(right, what, node))
        if operator == "truediv":
            self.fail(node, what + DIVISION_HINT)
        if operator in ("add", "sub") and left.type == right.type:
            return ir.Binary(left.type, operator, left, right)
        if operator in ("add", "sub"):
            self.fail(node, f"{what}: matrices combine element by element only with matrices "
                      "of the same size")  # fmt: skip
        self.fail(node, f"{what}: matrices have only *, @, /, + and - (and unary -)")

    def matrix_scale(
        self: KernelTyper, scalar: ir.Expression, what: str, node: ast.AST
    ) -> ir.Expression:
        """A scalar that multiplies a matrix, as float32 (a float64 must be converted)."""
        try:
            element = promote(ScalarType.FLOAT32, scalar.type, False, is_weak(scalar))
        except PromotionError as error:
            self.fail(node, f"{what}: {error}")
        if element is not ScalarType.FLOAT32:
            self.fail(
                node,
                f"{what}: matrices hold float32 elements and the result would be {element}; "
                f"convert the scalar with float(...)",
            )
        return self.convert(scalar, ScalarType.FLOAT32, node)

    def construct_matrix(
        self: KernelTyper, target: MatrixType, arguments: list[ir.Expression], node: ast.Call
    ) -> ir.Expression:
        """``float3x3(...)`` as luisa-python types it: no arguments (zeros), 9 numbers
        (column by column, converted as ``float()`` converts), 3 ``float3`` columns, or a
        matrix (another size is resized as LuisaCompute resizes)."""
        label = ast.unparse(node.func)
        kinds = [argument.type for argument in arguments]
        size = target.size
        if not arguments:
            return ir.Construct(target, (ir.Constant(ScalarType.FLOAT32, 0.0),))
        if len(arguments) == 1 and isinstance(kinds[0], MatrixType):
            return arguments[0] if kinds[0] == target else ir.Construct(target, tuple(arguments))
        if len(arguments) == size * size and all(isinstance(k, ScalarType) for k in kinds):
            parts = []
            for argument, argument_node in zip(arguments, node.args, strict=True):
                if argument.type is ScalarType.BOOL:
                    self.fail(argument_node, f"{label}() takes numbers, got a bool")
                parts.append(self.convert_elements(argument, ScalarType.FLOAT32, argument_node))
            return ir.Construct(target, tuple(parts))
        if len(arguments) == size and all(kind == target.column for kind in kinds):
            return ir.Construct(target, tuple(arguments))
        forms = CONSTRUCTOR_FORMS.format(kind=target)
        got = ", ".join(str(kind) for kind in kinds)
        hint = ""
        if len(arguments) == 1 and isinstance(kinds[0], ScalarType):
            hint = (
                f" (luisa-python has no {label}(scalar) in kernels; luisa.util's "
                f"make_{target}_eye(s) makes a diagonal)"
            )
        self.fail(node, f"{label}() {forms}; got {got}{hint}")

    def matrix_builtin(
        self: KernelTyper, name: str, arguments: list[ir.Expression], node: ast.Call
    ) -> ir.Expression:
        """``transpose(m)``, ``inverse(m)`` (a matrix) and ``determinant(m)`` (a float)."""
        kind = arguments[0].type
        if not isinstance(kind, MatrixType):
            self.fail(node, f"{ast.unparse(node.func)}() takes a matrix, got {kind}")
        result = ScalarType.FLOAT32 if name == "determinant" else kind
        return ir.Call(result, name, (arguments[0],))
