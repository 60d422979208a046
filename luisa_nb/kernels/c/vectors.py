"""Vectors and matrices in the emitted C: struct types laid out as LuisaCompute lays
them out (a ``float3`` is 16 bytes), and small ``static inline`` helpers, one per
operation and type, added on demand: ``lnb_add_float3(a, b)``, ``lnb_make_float4_2_1_1``,
``lnb_dot_float3``... A mixin of :class:`~luisa_nb.kernels.c.emitter.CEmitter`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.type_system import (
    INT3,
    MATRIX_TYPES,
    VECTOR_TYPES,
    KernelType,
    MatrixType,
    ScalarType,
    VectorType,
    is_aggregate_type,
)

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter

FIELDS = "xyzw"


def type_label(kind: KernelType) -> str:
    """The name of a type in helper names: ``float32``, ``float3``, ``float3x3``."""
    return kind.value if isinstance(kind, ScalarType) else str(kind)


class VectorEmission:
    """Mixin of :class:`CEmitter` for vector and matrix types and operations."""

    def composite_name(self: CEmitter, kind: VectorType | MatrixType) -> str:
        self.composite_types.add(kind)
        return f"lnb_{kind}"

    def type_definitions(self: CEmitter) -> list[str]:
        """The struct of each vector type the kernel uses (int3 always), of each matrix
        type, then those of its structs and arrays."""
        matrices = [kind for kind in MATRIX_TYPES if kind in self.composite_types]
        used = self.composite_types | {INT3} | {kind.column for kind in matrices}
        lines = []
        for kind in VECTOR_TYPES:
            if kind in used:
                element = self.type_names[kind.element]
                first, *rest = kind.fields
                members = f"{self.alignment(kind.alignment)} {element} {first}; {element} "
                members += ", ".join(rest)
                lines.append(f"typedef struct {{ {members}; }} lnb_{kind};")
        lines += [self.matrix_definition(kind) for kind in matrices]
        return lines + self.aggregate_definitions

    def define_helper(self: CEmitter, name: str, build: Callable[[], str]) -> str:
        """``name``, defining the helper the first time; helpers that ``build`` uses are
        defined (and placed) before it."""
        if name not in self.helper_names:
            self.helper_names.add(name)
            self.helper_texts.append(build())
        return name

    def components(self: CEmitter, kind: KernelType, text: str) -> list[str]:
        """C expressions for each scalar component of ``text``."""
        if isinstance(kind, VectorType):
            return [f"{text}.{field}" for field in kind.fields]
        if isinstance(kind, MatrixType):
            return [
                c
                for i in range(kind.size)
                for c in self.components(kind.column, f"{text}.cols[{i}]")
            ]
        return [text]

    def componentwise(
        self: CEmitter,
        name: str,
        result: VectorType,
        parameters: Sequence[KernelType],
        scalar: Callable[[list[str]], str],
    ) -> str:
        """A helper ``name`` returning ``result`` whose component i is ``scalar`` of the
        parameters' component i (a scalar parameter is the same for every component)."""

        def build() -> str:
            names = [f"a{index}" for index in range(len(parameters))]
            fields = []
            for field in result.fields:
                operands = [
                    f"{n}.{field}" if isinstance(p, VectorType) else n
                    for n, p in zip(names, parameters, strict=True)
                ]
                fields.append(scalar(operands))
            return self.helper_function(result, name, parameters, self.literal(result, fields))

        return self.define_helper(name, build)

    def literal(self: CEmitter, kind: KernelType, values: Sequence[str]) -> str:
        """A compound literal of a vector or matrix type."""
        return self.compound(self.type_name(kind), ", ".join(values))

    def helper_function(
        self: CEmitter,
        result: KernelType,
        name: str,
        parameters: Sequence[KernelType],
        expression: str,
        statements: Sequence[str] = (),
    ) -> str:
        declared = ", ".join(f"{self.type_name(p)} a{i}" for i, p in enumerate(parameters))
        body = "".join(f"    {statement}\n" for statement in statements)
        return (
            f"{self.function_prefix} {self.type_name(result)} {name}({declared}) {{\n"
            f"{body}    return {expression};\n}}"
        )

    def vector_binary(self: CEmitter, expression: ir.Binary) -> str:
        operand = expression.left.type
        name = f"lnb_{expression.operator}_{operand}"
        element = operand.element
        result_element = expression.type.element

        def scalar(operands: list[str]) -> str:
            return self.scalar_binary(expression.operator, result_element, element, *operands)

        helper = self.componentwise(name, expression.type, [operand, operand], scalar)
        return f"{helper}({self.expression(expression.left)}, {self.expression(expression.right)})"

    def vector_unary(self: CEmitter, expression: ir.Unary) -> str:
        kind = expression.type
        name = f"lnb_{expression.operator}_{kind}"
        symbol = {"neg": "-", "invert": "~"}[expression.operator]
        helper = self.componentwise(name, kind, [kind], lambda a: f"{symbol}{a[0]}")
        return f"{helper}({self.expression(expression.operand)})"

    def vector_cast(self: CEmitter, expression: ir.Cast) -> str:
        target, source = expression.type, expression.operand.type
        element = self.type_names[target.element]
        name = f"lnb_cast_{target}_{source}"
        helper = self.componentwise(name, target, [source], lambda a: f"({element}){a[0]}")
        return f"{helper}({self.expression(expression.operand)})"

    def construct(self: CEmitter, expression: ir.Construct) -> str:
        kind = expression.type
        parts = [argument.type for argument in expression.arguments]
        widths = "_".join(str(len(self.components(p, "a"))) for p in parts)
        name = f"lnb_make_{kind}_{widths}"

        def build() -> str:
            values = [c for i, p in enumerate(parts) for c in self.components(p, f"a{i}")]
            if len(values) == 1:
                values *= kind.length
            return self.helper_function(kind, name, parts, self.literal(kind, values))

        arguments = ", ".join(self.expression(argument) for argument in expression.arguments)
        return f"{self.define_helper(name, build)}({arguments})"

    def swizzle(self: CEmitter, expression: ir.Member) -> str:
        source = expression.operand.type
        name = f"lnb_{source}_{expression.field}"
        fields = ", ".join(f"a0.{letter}" for letter in expression.field)

        def build() -> str:
            value = self.compound(self.type_name(expression.type), fields)
            return self.helper_function(expression.type, name, [source], value)

        return f"{self.define_helper(name, build)}({self.expression(expression.operand)})"

    def element(self: CEmitter, expression: ir.Element) -> str:
        """``v[i]`` read: an index outside the vector reads 0."""
        source = expression.operand.type
        operand, index = self.expression(expression.operand), self.expression(expression.index)
        name = f"lnb_at_{source}"

        def build() -> str:
            value = f"((const {self.type_name(source.element)} *)&a0)[a1]"
            return self.helper_function(
                expression.type,
                name,
                [source, ScalarType.INT64],
                f"(uint64_t)a1 < {source.length} ? {value} : 0",
            )

        return f"{self.define_helper(name, build)}({operand}, (int64_t){index})"

    def place(self: CEmitter, place: ir.Expression) -> tuple[str, list[str]]:
        """The C lvalue of a store's place, and the index tests that must hold for it."""
        if isinstance(place, ir.Local):
            return self.variable_name(place.name), []
        inner, guards = self.place(place.operand)
        if isinstance(place, ir.Member):
            return f"{inner}.{place.field}", guards
        if isinstance(place, ir.Field):
            return f"{inner}.m_{place.name}", guards
        source = place.operand.type
        index = self.expression(place.index)
        if isinstance(source, MatrixType):
            if not isinstance(place.index, ir.Constant):
                guards = [*guards, f"(uint64_t)(int64_t)({index}) < {source.size}"]
            return f"{inner}.cols[{index}]", guards
        if is_aggregate_type(source):
            if not isinstance(place.index, ir.Constant):
                guards = [*guards, f"(uint64_t)(int64_t)({index}) < {source.size}"]
            return f"{inner}.a[{index}]", guards
        if not isinstance(place.index, ir.Constant):
            guards = [*guards, f"(uint64_t)(int64_t)({index}) < {source.length}"]
        return f"(({self.type_name(source.element)} *)&{inner})[{index}]", guards

    def store(self: CEmitter, statement: ir.Store, indent: str) -> list[str]:
        """A component or element store; an index outside the vector stores nothing."""
        target, guards = self.place(statement.place)
        assignment = f"{target} = {self.expression(statement.value)};"
        if not guards:
            return [f"{indent}{assignment}"]
        return [f"{indent}if ({' && '.join(guards)}) {assignment}"]

    def vector_call(self: CEmitter, expression: ir.Call) -> str:
        """A builtin on vectors: geometry and reductions have their own helpers, the
        rest apply the scalar function to each component."""
        function = expression.function
        kinds = [argument.type for argument in expression.arguments]
        arguments = ", ".join(self.expression(argument) for argument in expression.arguments)
        special = GEOMETRY.get(function)
        if special is not None:
            name = f"lnb_{function}_{kinds[0]}"
            return f"{self.define_helper(name, lambda: special(self, name, kinds[0]))}({arguments})"
        operand = kinds[0]
        name = f"lnb_{function}_{operand}"
        result_element = expression.type.element
        if function == "select":
            helper = self.componentwise(
                name, expression.type, kinds, lambda a: f"({a[2]} ? {a[1]} : {a[0]})"
            )
        else:
            helper = self.componentwise(
                name,
                expression.type,
                kinds,
                lambda a: self.call(function, result_element, a, operand.element),
            )
        return f"{helper}({arguments})"


def _sum(self: CEmitter, name: str, kind: VectorType, parameters: int, term: str) -> str:
    total = " + ".join(term.format(f=field) for field in kind.fields)
    return self.helper_function(kind.element, name, [kind] * parameters, total)


def _dot(self: CEmitter, name: str, kind: VectorType) -> str:
    return _sum(self, name, kind, 2, "a0.{f} * a1.{f}")


def _length_squared(self: CEmitter, name: str, kind: VectorType) -> str:
    return _sum(self, name, kind, 1, "a0.{f} * a0.{f}")


def _use_length_squared(self: CEmitter, kind: VectorType) -> str:
    name = f"lnb_length_squared_{kind}"
    return self.define_helper(name, lambda: _length_squared(self, name, kind))


def _length(self: CEmitter, name: str, kind: VectorType) -> str:
    self.uses_math = True
    squared = _use_length_squared(self, kind)
    return self.helper_function(kind.element, name, [kind], f"sqrtf({squared}(a0))")


def _normalize(self: CEmitter, name: str, kind: VectorType) -> str:
    self.uses_math = True
    squared = _use_length_squared(self, kind)
    fields = ", ".join(f"a0.{f} * s" for f in kind.fields)
    return self.helper_function(
        kind,
        name,
        [kind],
        self.compound(self.type_name(kind), fields),
        [f"const float s = 1.0f / sqrtf({squared}(a0));"],
    )


def _cross(self: CEmitter, name: str, kind: VectorType) -> str:
    value = self.compound(
        "lnb_float3",
        "a0.y * a1.z - a0.z * a1.y, a0.z * a1.x - a0.x * a1.z, a0.x * a1.y - a0.y * a1.x",
    )
    return self.helper_function(kind, name, [kind, kind], value)


def _reflect(self: CEmitter, name: str, kind: VectorType) -> str:
    dot = self.define_helper(f"lnb_dot_{kind}", lambda: _dot(self, f"lnb_dot_{kind}", kind))
    fields = ", ".join(f"a0.{f} - s * a1.{f}" for f in kind.fields)
    return self.helper_function(
        kind,
        name,
        [kind, kind],
        self.compound(self.type_name(kind), fields),
        [f"const float s = 2.0f * {dot}(a1, a0);"],
    )


def _faceforward(self: CEmitter, name: str, kind: VectorType) -> str:
    dot = self.define_helper(f"lnb_dot_{kind}", lambda: _dot(self, f"lnb_dot_{kind}", kind))
    negated = ", ".join(f"-a0.{f}" for f in kind.fields)
    return self.helper_function(
        kind,
        name,
        [kind, kind, kind],
        f"{dot}(a2, a1) < 0 ? a0 : {self.compound(self.type_name(kind), negated)}",
    )


def _any(self: CEmitter, name: str, kind: VectorType) -> str:
    any_true = " | ".join(f"a0.{field}" for field in kind.fields)
    return self.helper_function(ScalarType.BOOL, name, [kind], any_true)


def _all(self: CEmitter, name: str, kind: VectorType) -> str:
    all_true = " & ".join(f"a0.{field}" for field in kind.fields)
    return self.helper_function(ScalarType.BOOL, name, [kind], all_true)


GEOMETRY: dict[str, Callable[[CEmitter, str, VectorType], str]] = {
    "dot": _dot,
    "length": _length,
    "length_squared": _length_squared,
    "normalize": _normalize,
    "cross": _cross,
    "reflect": _reflect,
    "faceforward": _faceforward,
    "any": _any,
    "all": _all,
}
