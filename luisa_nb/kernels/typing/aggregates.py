"""Typing of callables, structs and arrays. A mixin of
:class:`~luisa_nb.kernels.typing.typer.KernelTyper`.

A callable is a kernel (an object whose ``__lnb_kernel_definition__`` is a
:class:`~luisa_nb.kernels.definition.KernelDefinition`) called inside another kernel.
Each is typed once per argument types within the kernel's specialisation; buffers it is
given or captures are the kernel's buffer slots, so that its C function reaches them as
the kernel's thread function does. Scalars and vectors are passed by value, structs and
arrays by reference (as in luisa-python): a callable may change them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.aggregates import ArrayType, StructType
from luisa_nb.kernels.lang.shared import is_shared_array_type
from luisa_nb.kernels.type_system import (
    MatrixType,
    ScalarType,
    VectorType,
    is_aggregate_type,
)
from luisa_nb.kernels.typing.expressions import is_weak

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper


@dataclass
class TypingContext:
    """What a kernel's specialisation and the callables it calls share while typed."""

    buffers: list[ir.BufferSlot] = field(default_factory=list)
    captured_buffers: dict[int, int] = field(default_factory=dict)
    heaps: list[tuple[str, tuple[tuple[int, int], ...]]] = field(default_factory=list)
    captured_heaps: dict[int, int] = field(default_factory=dict)
    heap_sizes: dict[int, int] = field(default_factory=dict)  # buffer slot -> element count
    functions: list[ir.FunctionIR] = field(default_factory=list)
    specialisations: dict[tuple[int, tuple[Any, ...]], int] = field(default_factory=dict)
    definitions: list[Any] = field(default_factory=list)  # keeps the ids above valid
    calling: list[Any] = field(default_factory=list)  # definitions being typed, outermost first


def callable_definition(value: Any) -> Any:
    """The KernelDefinition of a kernel object used as a callable, else None."""
    return getattr(value, "__lnb_kernel_definition__", None)


def is_place(expression: ir.Expression) -> bool:
    """Whether ``expression`` names storage a callee may change: a local, or fields and
    constant elements of one."""
    while isinstance(expression, (ir.Field, ir.Element)):
        if isinstance(expression, ir.Element) and not isinstance(expression.index, ir.Constant):
            return False
        expression = expression.operand
    return isinstance(expression, ir.Local)


def zero(kind: Any) -> ir.Expression:
    """The zero of ``kind``."""
    if isinstance(kind, ScalarType):
        return ir.Constant(kind, False if kind is ScalarType.BOOL else 0)
    return ir.Construct(kind, ())


class AggregateTyping:
    """Mixin of :class:`KernelTyper` for callables, structs and arrays."""

    def special_call(self: KernelTyper, node: ast.Call) -> ir.Expression | None:
        """A call of a callable, a struct method or a struct/array constructor, typed;
        None for any other call."""
        function = node.func
        if self.is_capture_chain(function):
            value = self.resolve(function)
            definition = callable_definition(value)
            if definition is not None:
                return self.call_callable(definition, node, node.args, None)
            if isinstance(value, StructType):
                return self.construct_struct(value, node)
            if isinstance(value, ArrayType):
                if node.args or node.keywords:
                    self.fail(node, f"{ast.unparse(function)}() takes no arguments in kernels")
                return ir.Construct(value, ())
            if is_shared_array_type(value):
                if node.args or node.keywords:
                    self.fail(node, f"{ast.unparse(function)}() takes no arguments")
                return ir.SharedArray(value.array_type)
            return None
        if isinstance(function, ast.Attribute) and not self.is_buffer(function.value):
            operand = self.visit(function.value)
            kind = operand.type
            if not isinstance(kind, StructType):
                self.fail(function, f"{kind} values have no method {function.attr!r}")
            method = kind.methods.get(function.attr)
            if method is None:
                self.fail(function, f"{kind!r} has no method {function.attr!r}")
            return self.call_callable(callable_definition(method), node, node.args, operand)
        return None

    def call_callable(
        self: KernelTyper,
        definition: Any,
        node: ast.Call,
        argument_nodes: list[ast.expr],
        receiver: ir.Expression | None,
    ) -> ir.Expression:
        """``f(arguments)``, or ``receiver.f(arguments)`` for a struct method."""
        label = ast.unparse(node.func)
        if node.keywords:
            self.fail(node.keywords[0], f"{label}() takes no keyword arguments in kernels")
        arguments, types = self.callable_arguments(argument_nodes, receiver)
        return self.typed_callable_call(definition, node, arguments, types, receiver is not None)

    def callable_arguments(
        self: KernelTyper, argument_nodes: list[ast.expr], receiver: ir.Expression | None
    ) -> tuple[list[ir.Expression], list[Any]]:
        """The typed value arguments and every argument's type (buffers as
        :class:`ir.BufferArgument`); weak literals take their own type."""
        arguments: list[ir.Expression] = [] if receiver is None else [receiver]
        types: list[Any] = [] if receiver is None else [receiver.type]
        for argument_node in argument_nodes:
            if self.is_buffer(argument_node):
                slot = self.buffer_slot(argument_node)
                types.append(ir.BufferArgument(slot, self.buffers[slot].element))
                continue
            value = self.visit(argument_node)
            if is_weak(value):
                value = ir.Constant(value.type, value.value)
            arguments.append(value)
            types.append(value.type)
        return arguments, types

    def typed_callable_call(
        self: KernelTyper,
        definition: Any,
        node: ast.Call,
        arguments: list[ir.Expression],
        types: list[Any],
        method: bool,
    ) -> ir.FunctionCall:
        label = ast.unparse(node.func)
        names = definition.parameter_names
        given = len(types) - (1 if method else 0)
        if len(types) != len(names):
            expected = len(names) - (1 if method else 0)
            self.fail(
                node, f"{label}() takes {expected} argument(s) ({', '.join(names)}), got {given}"
            )
        index = self.specialise(definition, tuple(types), node)
        function = self.context.functions[index]
        references = tuple(is_aggregate_type(argument.type) for argument in arguments)
        return ir.FunctionCall(function.return_type, index, tuple(arguments), references)

    def specialise(
        self: KernelTyper, definition: Any, types: tuple[Any, ...], node: ast.AST
    ) -> int:
        """The index of ``definition``'s function for ``types``, typed on first use (by a
        typer of this typer's class)."""
        context = self.context
        key = (id(definition), types)
        index = context.specialisations.get(key)
        if index is not None:
            return index
        if any(d is definition for d in context.calling):
            chain = " -> ".join(d.name for d in [*context.calling, definition])
            self.fail(
                node,
                f"callable {definition.name!r} calls itself ({chain}); callables cannot "
                f"recurse: rewrite the recursion as a loop",
            )
        context.calling.append(definition)
        try:
            typer = type(self)(
                definition.kernel_source,
                types,
                definition.capture_resolver(),
                self.target,
                context,
                definition.rules,
            )
            function = typer.run_function(definition)
        finally:
            context.calling.pop()
        index = context.specialisations[key] = len(context.functions)
        function.name = f"f{index}_{definition.name}"
        context.functions.append(function)
        context.definitions.append(definition)
        return index

    def construct_struct(self: KernelTyper, kind: StructType, node: ast.Call) -> ir.Expression:
        """``S(a=..., b=...)`` (fields not given are zero), ``S()``, or ``S(args)`` with an
        ``__init__`` method."""
        label = ast.unparse(node.func)
        initializer = kind.methods.get("__init__")
        if initializer is not None:
            if node.keywords:
                self.fail(
                    node.keywords[0], f"{label}() passes its arguments to __init__ by position"
                )
            receiver = ir.Construct(kind, ())
            arguments, types = self.callable_arguments(node.args, receiver)
            call = self.typed_callable_call(
                callable_definition(initializer), node, arguments, types, True
            )
            if call.type is not None:
                self.fail(node, f"{kind!r}.__init__ must return nothing")
            return ir.InitCall(kind, call.function, call.arguments[1:], call.references[1:])
        if node.args:
            self.fail(node.args[0], f"{label}() takes field values by name: {label}(a=..., b=...)")
        if not node.keywords:
            return ir.Construct(kind, ())
        given = {}
        for keyword in node.keywords:
            if keyword.arg not in kind.fields:
                self.fail(keyword, f"{kind!r} has no field {keyword.arg!r}")
            given[keyword.arg] = self.stored_value(
                kind.fields[keyword.arg], self.visit(keyword.value), keyword.value
            )
        values = tuple(given.get(name, zero(t)) for name, t in kind.fields.items())
        return ir.Construct(kind, values)

    def field(self: KernelTyper, operand: ir.Expression, name: str, node: ast.AST) -> ir.Expression:
        kind = operand.type
        if name not in kind.fields:
            what = "field or method" if name not in kind.methods else "field (methods are called)"
            self.fail(node, f"{kind!r} has no {what} {name!r}")
        return ir.Field(kind.fields[name], operand, name)

    def array_element(
        self: KernelTyper, operand: ir.Expression, index: ir.Expression, node: ast.AST
    ) -> ir.Expression:
        kind = operand.type
        if isinstance(index, ir.Constant) and not 0 <= index.value < kind.size:
            self.fail(node, f"index {index.value} is outside {kind} (0 <= i < {kind.size})")
        return ir.Element(kind.element, operand, index)

    def aggregate_constant(
        self: KernelTyper, kind: Any, value: Any, node: ast.AST
    ) -> ir.Expression:
        """A captured struct or array as a constant expression."""
        if isinstance(kind, ScalarType):
            return ir.Constant(kind, np.asarray(value, kind.dtype).item())
        if isinstance(kind, (VectorType, MatrixType)):
            components = np.asarray(value, dtype=kind.element.dtype).ravel(order="F").tolist()
            return ir.Construct(kind, tuple(ir.Constant(kind.element, c) for c in components))
        if isinstance(kind, StructType):
            return ir.Construct(
                kind,
                tuple(
                    self.aggregate_constant(t, getattr(value, name), node)
                    for name, t in kind.fields.items()
                ),
            )
        if isinstance(kind, ArrayType):
            return ir.Construct(
                kind, tuple(self.aggregate_constant(kind.element, v, node) for v in value)
            )
        self.fail(node, f"a captured {kind} cannot be used in kernels; pass it as an argument")
