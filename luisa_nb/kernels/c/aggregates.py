"""Structs, arrays and callables in the emitted C. A mixin of
:class:`~luisa_nb.kernels.c.emitter.CEmitter`.

A struct is a C struct whose members are ``m_<field>`` (a member's type carries its
alignment, so C's layout is LuisaCompute's); an array is a struct holding a C array, so
that it is assigned and passed by value like any type. A callable is a ``static inline``
function that takes the thread's context (dispatch id and size, every buffer of the
kernel with its element count, the thread state) before its own parameters; structs and
arrays are passed by pointer (by reference), an argument that is not a place as a
pointer to a one-element compound literal.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.aggregates import StructType
from luisa_nb.kernels.type_system import ScalarType
from luisa_nb.kernels.typing.aggregates import is_place

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter


def has_call(expression: ir.Expression) -> bool:
    """Whether ``expression`` calls a callable (which may change its arguments) or an
    atomic (which changes a buffer)."""
    return any(
        isinstance(node, (ir.FunctionCall, ir.InitCall, ir.AtomicCall))
        for node in ir.walk_expression(expression)
    )


UNSEQUENCED = (
    ir.Binary,
    ir.Construct,
    ir.Call,
    ir.FunctionCall,
    ir.InitCall,
    ir.Element,
    ir.AtomicCall,
)


class AggregateEmission:
    """Mixin of :class:`CEmitter` for structs, arrays and callables."""

    def sequenced(self: CEmitter, expression: ir.Expression) -> str | None:
        """C evaluates the operands of a call or an operator in no set order; Python from
        left to right. When an operand calls a callable, the operands are evaluated into
        temporaries first, in order (a GNU statement expression). None otherwise."""
        if not isinstance(expression, UNSEQUENCED):
            return None
        if isinstance(expression, ir.Binary) and expression.operator in ("and", "or"):
            return None
        operands = ir.subexpressions(expression)
        if len(operands) < 2 or not any(has_call(operand) for operand in operands):
            return None
        if isinstance(expression, (ir.FunctionCall, ir.InitCall)) and any(expression.references):
            return None  # by-reference arguments must stay places
        lines, replacements = [], {}
        for operand in operands:
            name = f"lnb_s{self.sequence_counter}"
            self.sequence_counter += 1
            value = self.expression(operand)
            lines.append(f"{self.type_name(operand.type)} {self.variable_name(name)} = {value};")
            replacements[id(operand)] = ir.Local(operand.type, name)
        changes = {}
        for field_name in ("left", "right", "operand", "index", "arguments"):
            value = getattr(expression, field_name, None)
            if isinstance(value, tuple):
                changes[field_name] = tuple(replacements[id(v)] for v in value)
            elif isinstance(value, ir.Expression):
                changes[field_name] = replacements[id(value)]
        substituted = dataclasses.replace(expression, **changes)
        method = getattr(self, f"expression_{type(expression).__name__.lower()}")
        return self.statement_expression(lines, method(substituted))

    def aggregate_name(self: CEmitter, kind: Any) -> str:
        """The C type of a struct or array, defined (after its members' types) on first use."""
        name = self.aggregate_names.get(kind)
        if name is not None:
            return name
        if isinstance(kind, StructType):
            name = f"lnb_struct{kind.number}"
            members = [f"{self.type_name(t)} m_{field};" for field, t in kind.fields.items()]
            members[0] = f"{self.alignment(kind.alignment)} {members[0]}"
        else:
            name = f"lnb_array{len(self.aggregate_names)}_{kind.size}"
            members = [f"{self.type_name(kind.element)} a[{kind.size}];"]
        self.aggregate_definitions.append(f"typedef struct {{ {' '.join(members)} }} {name};")
        self.aggregate_names[kind] = name
        return name

    def zero_of(self: CEmitter, kind: Any) -> str:
        if isinstance(kind, ScalarType):
            return "0"
        return self.compound(self.type_name(kind), "0")

    def expression_field(self: CEmitter, expression: ir.Field) -> str:
        return f"{self.expression(expression.operand)}.m_{expression.name}"

    def array_element(self: CEmitter, expression: ir.Element) -> str:
        """``a[i]`` read: an index outside the array reads 0."""
        source = expression.operand.type
        operand, index = self.expression(expression.operand), self.expression(expression.index)
        if isinstance(expression.index, ir.Constant):
            return f"{operand}.a[{index}]"
        name = f"lnb_at_{self.type_name(source)}"

        def build() -> str:
            return self.helper_function(
                source.element,
                name,
                [source, ScalarType.INT64],
                f"(uint64_t)a1 < {source.size} ? a0.a[a1] : {self.zero_of(source.element)}",
            )

        return f"{self.define_helper(name, build)}({operand}, (int64_t){index})"

    def aggregate_construct(self: CEmitter, expression: ir.Construct) -> str:
        if not expression.arguments:
            return self.zero_of(expression.type)
        values = ", ".join(self.expression(argument) for argument in expression.arguments)
        return self.compound(self.type_name(expression.type), values)

    def context_arguments(self: CEmitter) -> list[str]:
        """What every callable takes first: the thread's context, by name."""
        buffers = range(len(self.kernel.buffers))
        names = ["dispatch_id", "dispatch_size", *(self.buffer_name(i) for i in buffers)]
        if self.checks.bounds:
            names += [self.count_name(i) for i in buffers]
        return [*names, "lnb_state"]

    def context_parameters(self: CEmitter) -> list[str]:
        buffers = range(len(self.kernel.buffers))
        parameters = ["lnb_int3 dispatch_id", "lnb_int3 dispatch_size"]
        parameters += [self.buffer_declaration(i) for i in buffers]
        if self.checks.bounds:
            parameters += [f"uint64_t {self.count_name(i)}" for i in buffers]
        return [*parameters, "lnb_thread *lnb_state"]

    def function_name(self: CEmitter, index: int) -> str:
        return f"lnb_{self.identifier(self.kernel.functions[index].name)}"

    def call_arguments(
        self: CEmitter, arguments: tuple[ir.Expression, ...], references: tuple[bool, ...]
    ) -> list[str]:
        texts = []
        for argument, reference in zip(arguments, references, strict=True):
            if not reference:
                texts.append(self.expression(argument))
            elif is_place(argument):
                texts.append(f"&{self.place(argument)[0]}")
            else:
                kind = self.type_name(argument.type)
                texts.append(self.temporary_reference(kind, self.expression(argument)))
        return texts

    def expression_functioncall(self: CEmitter, expression: ir.FunctionCall) -> str:
        arguments = self.call_arguments(expression.arguments, expression.references)
        name = self.function_name(expression.function)
        return f"{name}({', '.join([*self.context_arguments(), *arguments])})"

    def expression_initcall(self: CEmitter, expression: ir.InitCall) -> str:
        """``S(args)`` with ``__init__``: a zeroed ``S`` that the method fills, as a GNU
        statement expression."""
        arguments = self.call_arguments(expression.arguments, expression.references)
        name = self.function_name(expression.function)
        kind = self.type_name(expression.type)
        call = ", ".join([*self.context_arguments(), "&lnb_self", *arguments])
        return self.statement_expression(
            [f"{kind} lnb_self = {{0}};", f"{name}({call});"], "lnb_self"
        )

    def function_definition(self: CEmitter, index: int) -> str:
        """A callable as a ``static inline`` C function."""
        function = self.kernel.functions[index]
        if self.is_traversal(function):
            return self.traversal_definition(index)
        result = "void" if function.return_type is None else self.type_name(function.return_type)
        parameters = list(self.context_parameters())
        for name, kind, reference in function.parameters:
            pointer = "*" if reference else ""
            parameters.append(f"{self.type_name(kind)} {pointer}{self.variable_name(name)}")
        self.references = {name for name, _, reference in function.parameters if reference}
        self.return_type = function.return_type
        signature = f"{self.function_name(index)}({', '.join(parameters)})"
        lines = [f"{self.function_prefix} {result} {signature} {{"]
        for name, kind in function.locals.items():
            zero = "{0}" if not isinstance(kind, ScalarType) else "0"
            lines.append(f"    {self.type_name(kind)} {self.variable_name(name)} = {zero};")
        lines += self.statements(function.body, 1)
        lines.append("}")
        self.references, self.return_type = set(), None
        return "\n".join(lines)

    def return_statement(self: CEmitter, statement: ir.Return) -> str:
        if statement.value is None:
            return "return;"
        return f"return {self.expression(statement.value)};"

    def stopped_return(self: CEmitter) -> str:
        """How a stopped thread leaves the function being emitted."""
        if self.return_type is None:
            return "return;"
        return f"return {self.zero_of(self.return_type)};"
