"""Matrices in the emitted C: ``typedef struct { lnb_float3 cols[3]; } lnb_float3x3;``
(48 bytes, as in LuisaCompute), and one ``static inline`` helper per operation and type
(``lnb_mul_float3x3_float3``, ``lnb_inverse_float4x4`` ...), whose arithmetic comes from
the formulas of :mod:`~luisa_nb.kernels.lang.matrices`, which Python mode runs on float32
scalars: both modes do the same operations in the same order. A mixin of
:class:`~luisa_nb.kernels.c.emitter.CEmitter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.matrices import (
    determinant_formula,
    inverse_formula,
    product_formula,
    resized_formula,
)
from luisa_nb.kernels.type_system import MatrixType, ScalarType, VectorType

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter

FIELDS = "xyzw"


class CTerm:
    """A float C expression that builds bigger ones with ``+ - *`` and unary ``-``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __add__(self, other: CTerm) -> CTerm:
        return CTerm(f"({self.text} + {other.text})")

    def __sub__(self, other: CTerm) -> CTerm:
        return CTerm(f"({self.text} - {other.text})")

    def __mul__(self, other: CTerm) -> CTerm:
        return CTerm(f"({self.text} * {other.text})")

    def __neg__(self) -> CTerm:
        return CTerm(f"(-{self.text})")


def matrix_terms(parameter: str, kind: MatrixType) -> list[list[CTerm]]:
    """``terms[c][r]``: row ``r`` of column ``c`` of the matrix parameter ``parameter``."""
    return [
        [CTerm(f"{parameter}.cols[{c}].{FIELDS[r]}") for r in range(kind.size)]
        for c in range(kind.size)
    ]


def vector_terms(parameter: str, kind: VectorType) -> list[CTerm]:
    return [CTerm(f"{parameter}.{field}") for field in kind.fields]


class MatrixEmission:
    """Mixin of :class:`CEmitter` for matrix types and operations."""

    def matrix_definition(self: CEmitter, kind: MatrixType) -> str:
        return f"typedef struct {{ lnb_{kind.column} cols[{kind.size}]; }} lnb_{kind};"

    def matrix_literal(self: CEmitter, kind: MatrixType, columns: list[list[str]]) -> str:
        """A compound literal of ``kind`` from the C expressions of its columns."""
        inner = ", ".join("{" + ", ".join(column) + "}" for column in columns)
        return self.compound(self.type_name(kind), f"{{{inner}}}")

    def matrix_helper(
        self: CEmitter,
        name: str,
        result: object,
        parameters: list[object],
        body: str,
        statements: tuple[str, ...] = (),
    ) -> str:
        return self.define_helper(
            name, lambda: self.helper_function(result, name, parameters, body, statements)
        )

    def matrix_binary(self: CEmitter, expression: ir.Binary) -> str:
        """Products (matrix by vector, matrix, scalar), division by a scalar, and ``+``/``-``
        of matrices."""
        left, right = expression.left.type, expression.right.type
        operator, kind = expression.operator, expression.type
        arguments = f"{self.expression(expression.left)}, {self.expression(expression.right)}"
        if isinstance(right, VectorType):
            return f"{self.matrix_vector_product(left)}({arguments})"
        labels = [t.value if isinstance(t, ScalarType) else str(t) for t in (left, right)]
        name = f"lnb_{operator}_{labels[0]}_{labels[1]}"
        if operator in ("add", "sub"):
            symbol = "+" if operator == "add" else "-"
            pairs = zip(matrix_terms("a0", kind), matrix_terms("a1", kind), strict=True)
            columns = [
                [f"{x.text} {symbol} {y.text}" for x, y in zip(*p, strict=True)] for p in pairs
            ]
        elif isinstance(left, ScalarType):
            columns = [[f"a0 * {t.text}" for t in column] for column in matrix_terms("a1", kind)]
        elif isinstance(right, ScalarType):
            symbol = "/" if operator == "truediv" else "*"
            columns = [
                [f"{t.text} {symbol} a1" for t in column] for column in matrix_terms("a0", kind)
            ]
        else:
            product = self.matrix_vector_product(left)
            value = ", ".join(f"{product}(a0, a1.cols[{c}])" for c in range(kind.size))
            helper = self.matrix_helper(
                name, kind, [left, right], self.compound(self.type_name(kind), f"{{{value}}}")
            )
            return f"{helper}({arguments})"
        helper = self.matrix_helper(name, kind, [left, right], self.matrix_literal(kind, columns))
        return f"{helper}({arguments})"

    def matrix_vector_product(self: CEmitter, kind: MatrixType) -> str:
        """The helper ``m * v`` for matrices of ``kind``."""
        column = kind.column
        rows = product_formula(matrix_terms("a0", kind), vector_terms("a1", column))
        value = self.literal(column, [row.text for row in rows])
        return self.matrix_helper(f"lnb_mul_{kind}_{column}", column, [kind, column], value)

    def matrix_negation(self: CEmitter, expression: ir.Unary) -> str:
        kind = expression.type
        columns = [[f"-{t.text}" for t in column] for column in matrix_terms("a0", kind)]
        name = f"lnb_neg_{kind}"
        helper = self.matrix_helper(name, kind, [kind], self.matrix_literal(kind, columns))
        return f"{helper}({self.expression(expression.operand)})"

    def matrix_call(self: CEmitter, expression: ir.Call) -> str:
        """``transpose``, ``determinant`` and ``inverse``."""
        function = expression.function
        kind = expression.arguments[0].type
        name = f"lnb_{function}_{kind}"
        terms = matrix_terms("a0", kind)
        if function == "transpose":
            columns = [[terms[r][c].text for r in range(kind.size)] for c in range(kind.size)]
            helper = self.matrix_helper(name, kind, [kind], self.matrix_literal(kind, columns))
        elif function == "determinant":
            value = determinant_formula(terms).text
            helper = self.matrix_helper(name, ScalarType.FLOAT32, [kind], value)
        else:
            determinant = f"const float d = {determinant_formula(terms).text};"
            scale = "const float s = 1.0f / d;"
            inverse = inverse_formula(terms, CTerm("s"))
            columns = [[term.text for term in column] for column in inverse]
            value = self.matrix_literal(kind, columns)
            helper = self.matrix_helper(name, kind, [kind], value, (determinant, scale))
        return f"{helper}({self.expression(expression.arguments[0])})"

    def matrix_construct(self: CEmitter, expression: ir.Construct) -> str:
        """Zeros (one 0 argument), a resized matrix, numbers by columns, or columns."""
        kind = expression.type
        parts = [argument.type for argument in expression.arguments]
        arguments = ", ".join(self.expression(argument) for argument in expression.arguments)
        size = kind.size
        if len(parts) == 1 and isinstance(parts[0], ScalarType):
            return self.compound(self.type_name(kind), "0")
        if len(parts) == 1:
            source = parts[0]
            name = f"lnb_make_{kind}_{source}"
            terms = resized_formula(matrix_terms("a0", source), size, CTerm("0.0f"), CTerm("1.0f"))
            columns = [[term.text for term in column] for column in terms]
        elif isinstance(parts[0], VectorType):
            name = f"lnb_make_{kind}_columns"
            columns = [[f"a{c}.{FIELDS[r]}" for r in range(size)] for c in range(size)]
        else:
            name = f"lnb_make_{kind}_scalars"
            columns = [[f"a{c * size + r}" for r in range(size)] for c in range(size)]
        helper = self.matrix_helper(name, kind, parts, self.matrix_literal(kind, columns))
        return f"{helper}({arguments})"

    def matrix_column(self: CEmitter, expression: ir.Element) -> str:
        """``m[i]``: a column; a dynamic index outside the matrix reads zeros."""
        source = expression.operand.type
        operand, index = self.expression(expression.operand), self.expression(expression.index)
        if isinstance(expression.index, ir.Constant):
            return f"{operand}.cols[{index}]"
        name = f"lnb_at_{source}"
        zero = self.compound(self.type_name(source.column), "0")
        value = f"(uint64_t)a1 < {source.size} ? a0.cols[a1] : {zero}"
        helper = self.matrix_helper(name, source.column, [source, ScalarType.INT64], value)
        return f"{helper}({operand}, (int64_t){index})"
