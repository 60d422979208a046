"""Typing of vectors: constructors, swizzles, indexing, component stores and element-wise
operators with scalar broadcast. A mixin of :class:`~luisa_nb.kernels.typing.typer.KernelTyper`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.aggregates import ArrayType, StructType
from luisa_nb.kernels.type_system import (
    OPERATOR_VERBS,
    MatrixType,
    PromotionError,
    ScalarType,
    VectorType,
    article,
    assignable,
    elementwise_types,
    is_aggregate_type,
    is_composite,
)
from luisa_nb.kernels.typing.expressions import is_weak

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

SWIZZLE_LETTERS = "xyzw"


class VectorTyping:
    """Mixin of :class:`KernelTyper` for vector expressions and stores."""

    def elementwise(
        self: KernelTyper,
        operator: str,
        operands: list[ir.Expression],
        node: ast.AST,
    ) -> tuple[VectorType, VectorType, list[ir.Expression]]:
        """(operand type, result type, operands converted and broadcast) of ``operator``
        applied component-wise to scalars and vectors (at least one a vector)."""
        operand_type, result_type = operands[0].type, None
        weak = is_weak(operands[0])
        for operand in operands[1:]:
            if MatrixType in (type(operand_type), type(operand.type)):
                verb = OPERATOR_VERBS.get(operator, "compare")
                self.fail(
                    node,
                    f"cannot {verb} {operand_type} and {operand.type}: matrices have only "
                    f"*, @, + and - (and unary -)",
                )
            try:
                operand_type, result_type = elementwise_types(
                    operator, operand_type, operand.type, weak, is_weak(operand)
                )
            except PromotionError as error:
                self.fail(node, str(error))
            weak = False
        converted = [self.broadcast(operand, operand_type, node) for operand in operands]
        return operand_type, result_type, converted

    def broadcast(
        self: KernelTyper, expression: ir.Expression, target: VectorType, node: ast.AST
    ) -> ir.Expression:
        """``expression`` (a scalar or a vector of ``target``'s length) as ``target``."""
        if expression.type == target:
            return expression
        if isinstance(expression.type, VectorType):
            return ir.Cast(target, expression)
        scalar = self.convert(expression, target.element, node)
        return ir.Construct(target, (scalar,))

    def vector_arithmetic(
        self: KernelTyper,
        operator: str,
        left: ir.Expression,
        right: ir.Expression,
        node: ast.AST,
    ) -> ir.Expression:
        _, result_type, (left, right) = self.elementwise(operator, [left, right], node)
        return ir.Binary(result_type, operator, left, right)

    def vector_unary(
        self: KernelTyper, operator: ast.unaryop, operand: ir.Expression, node: ast.AST
    ) -> ir.Expression:
        kind = operand.type
        if isinstance(operator, ast.Not):
            self.fail(node, f"`not` needs a bool, got {kind}; use all(...) or any(...)")
        if isinstance(kind, MatrixType) and not isinstance(operator, ast.USub):
            self.fail(
                node,
                f"unary {'+' if isinstance(operator, ast.UAdd) else '~'} does not apply to {kind}",
            )
        if kind.element is ScalarType.BOOL:
            self.fail(node, f"unary -, + and ~ do not apply to {kind}")
        if isinstance(operator, ast.UAdd):
            return operand
        if isinstance(operator, ast.Invert):
            if not kind.element.is_integer:
                self.fail(node, f"~ needs an integer vector, got {kind}")
            return ir.Unary(kind, "invert", operand)
        return ir.Unary(kind, "neg", operand)

    def swizzle(
        self: KernelTyper, operand: ir.Expression, name: str, node: ast.AST
    ) -> ir.Expression:
        """``v.x`` (a component) or ``v.zyx`` (a new vector of up to 4 components)."""
        kind = operand.type
        fields = SWIZZLE_LETTERS[: kind.length]
        if not 1 <= len(name) <= 4 or any(letter not in fields for letter in name):
            self.fail(
                node,
                f"{kind} values have no attribute {name!r}; components are "
                f"{', '.join(fields)} and swizzles combine up to 4 of them",
            )
        if len(name) == 1:
            return ir.Member(kind.element, operand, name)
        return ir.Member(VectorType(kind.element, len(name)), operand, name)

    def visit_Subscript(self: KernelTyper, node: ast.Subscript) -> ir.Expression:
        if self.is_buffer(node.value):
            self.fail(node, "buffers are read with buf.read(i) and written with buf.write(i, v)")
        operand = self.visit(node.value)
        return self.element(operand, node.slice, node)

    def element(
        self: KernelTyper, operand: ir.Expression, index_node: ast.expr, node: ast.AST
    ) -> ir.Expression:
        """``v[i]`` (a component) or ``m[i]`` (a column); constant indices are checked."""
        kind = operand.type
        if not is_composite(kind) and not isinstance(kind, ArrayType):
            self.fail(node, f"{kind} values cannot be indexed")
        if isinstance(index_node, ast.Slice):
            self.fail(index_node, "slices are not supported; index one component")
        index = self.scalar(self.visit(index_node), index_node)
        if not index.type.is_integer:
            self.fail(index_node, f"an index must be an integer, got {index.type}")
        if isinstance(kind, ArrayType):
            return self.array_element(operand, index, index_node)
        count = kind.length if isinstance(kind, VectorType) else kind.size
        if isinstance(index, ir.Constant):
            if not 0 <= index.value < count:
                self.fail(index_node, f"index {index.value} is outside {kind} (0 <= i < {count})")
            if isinstance(kind, VectorType):
                return ir.Member(kind.element, operand, SWIZZLE_LETTERS[index.value])
        part = kind.element if isinstance(kind, VectorType) else kind.column
        return ir.Element(part, operand, index)

    def construct(
        self: KernelTyper, target: VectorType, arguments: list[ir.Expression], node: ast.Call
    ) -> ir.Expression:
        """``float3(...)``: zeros, a broadcast scalar, or scalars and vectors whose
        components add up to the length (converted like ``int()``/``float()``)."""
        label = ast.unparse(node.func)
        parts: list[ir.Expression] = []
        for argument, argument_node in zip(arguments, node.args, strict=True):
            kind = argument.type
            if isinstance(kind, MatrixType):
                self.fail(argument_node, f"{label}() takes scalars and vectors, got {kind}")
            parts.append(self.convert_elements(argument, target.element, argument_node))
        count = sum(p.type.length if isinstance(p.type, VectorType) else 1 for p in parts)
        if not parts:
            zero = ir.Constant(target.element, False if target.element is ScalarType.BOOL else 0)
            return ir.Construct(target, (zero,))
        if len(parts) == 1 and parts[0].type == target:
            return parts[0]
        if count != target.length and not (count == 1 and len(parts) == 1):
            self.fail(
                node,
                f"{label}() needs one scalar or {target.length} components in all, got {count}",
            )
        return ir.Construct(target, tuple(parts))

    def convert_elements(
        self: KernelTyper, expression: ir.Expression, element: ScalarType, node: ast.AST
    ) -> ir.Expression:
        """A scalar or vector with its elements converted to ``element`` explicitly (as
        ``float(...)``, ``int(...)`` and ``bool(...)`` convert)."""
        kind = expression.type
        if isinstance(kind, VectorType):
            if kind.element is element:
                return expression
            return ir.Cast(VectorType(element, kind.length), expression)
        if element is ScalarType.BOOL:
            return self.to_bool(expression, node)
        if is_weak(expression):
            return self.literal_as(expression.value, element, node)
        return expression if kind is element else ir.Cast(element, expression)

    def place(self: KernelTyper, node: ast.expr) -> ir.Expression:
        """The typed place a store writes: a component, swizzle or column of a local."""
        if isinstance(node, ast.Name):
            if node.id in self.buffer_arguments:
                self.fail(node, f"cannot assign to a component of buffer parameter {node.id!r}")
            if node.id not in self.local_names or node.id not in self.locals:
                self.fail(node, f"{node.id!r} is not a local variable; assign it first")
            return ir.Local(self.locals[node.id], node.id)
        if isinstance(node, ast.Attribute):
            operand = self.place(node.value)
            if isinstance(operand.type, StructType):
                return self.field(operand, node.attr, node)
            if not isinstance(operand.type, VectorType):
                self.fail(node, f"{operand.type} values have no attribute {node.attr!r}")
            if isinstance(operand, ir.Member) and len(operand.field) > 1:
                self.fail(node, "cannot assign through a swizzle of several components")
            return self.swizzle(operand, node.attr, node)
        if isinstance(node, ast.Subscript):
            if self.is_buffer(node.value):
                self.fail(node, "buffers are written with buf.write(i, value)")
            return self.element(self.place(node.value), node.slice, node)
        self.fail(node, "only names, components, swizzles and elements can be assigned")

    def store(
        self: KernelTyper, target: ast.expr, value: ir.Expression, node: ast.AST
    ) -> list[ir.Statement]:
        """``v.x = value``, ``v.xy = value``, ``v[i] = value``, ``m[i] = column``."""
        place = self.place(target)
        if isinstance(place, ir.Member) and len(place.field) > 1:
            if len(set(place.field)) != len(place.field):
                self.fail(
                    target, f"cannot assign to swizzle {place.field!r}: it repeats a component"
                )
            value = self.stored_value(place.type, value, target)
            temporary = self.temporary(value.type)
            statements: list[ir.Statement] = [ir.Assign(temporary, value)]
            source = ir.Local(value.type, temporary)
            element = place.type.element
            for index, letter in enumerate(place.field):
                component = ir.Member(element, source, SWIZZLE_LETTERS[index])
                statements.append(ir.Store(ir.Member(element, place.operand, letter), component))
            return statements
        return [ir.Store(place, self.stored_value(place.type, value, target))]

    def stored_value(
        self: KernelTyper, target: Any, value: ir.Expression, node: ast.AST
    ) -> ir.Expression:
        """``value`` converted for a store into a place of type ``target``: the same rules
        as buffer writes (integers into floats, weak literals that fit)."""
        if isinstance(target, ScalarType) and isinstance(value.type, ScalarType):
            if not assignable(target, value.type, is_weak(value)):
                self.fail(
                    node, f"cannot store {article(value.type)} value into {article(target)} place"
                )
            return self.convert(value, target, node)
        if is_aggregate_type(target) or is_aggregate_type(value.type):
            if target != value.type:
                self.fail(
                    node, f"cannot store {article(value.type)} value into {article(target)} place"
                )
            return value
        if not self.storable(target, value):
            self.fail(
                node, f"cannot store {article(value.type)} value into {article(target)} place"
            )
        return value if value.type == target else ir.Cast(target, value)

    def storable(self: KernelTyper, target: Any, value: ir.Expression) -> bool:
        """Whether a vector or matrix ``value`` may be stored into a place (or buffer) of
        type ``target``: the same type, or a vector of the same length whose elements
        convert implicitly (e.g. int3 into float3)."""
        kind = value.type
        if target == kind:
            return True
        return (
            isinstance(target, VectorType)
            and isinstance(kind, VectorType)
            and target.length == kind.length
            and assignable(target.element, kind.element, False)
        )

    def temporary(self: KernelTyper, kind: Any) -> str:
        """A fresh hidden local of type ``kind``."""
        name = f"lnb_tmp{len(self.temporaries)}"
        while name in self.local_names:
            name += "_"
        self.temporaries.append(name)
        self.locals[name] = kind
        return name

    def composite_arithmetic(
        self: KernelTyper,
        operator: str,
        left: ir.Expression,
        right: ir.Expression,
        node: ast.AST,
    ) -> ir.Expression:
        """A binary operator with a vector or matrix operand (or ``@``)."""
        if operator == "matmul" or MatrixType in (type(left.type), type(right.type)):
            return self.matrix_arithmetic(operator, left, right, node)
        return self.vector_arithmetic(operator, left, right, node)

    def composite_select(
        self: KernelTyper,
        condition: ir.Expression,
        if_true: ir.Expression,
        if_false: ir.Expression,
        node: ast.AST,
    ) -> ir.Expression:
        """``a if c else b`` with vector or matrix branches (a scalar branch is broadcast)."""
        if if_true.type == if_false.type:
            return ir.Select(if_true.type, condition, if_true, if_false)
        _, result, (if_true, if_false) = self.elementwise("select", [if_true, if_false], node)
        return ir.Select(result, condition, if_true, if_false)
