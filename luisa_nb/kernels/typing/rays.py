"""Typing of the methods kernels call on an acceleration structure:
``accel.trace_closest(ray, vis_mask)``, ``accel.trace_any(ray, vis_mask)``,
``accel.instance_transform(index)``, ``accel.instance_user_id(index)`` and
``accel.instance_visibility_mask(index)`` (luisa-python also names the last two
``user_id`` and ``visibility_mask``).

An acceleration structure reaches a kernel as a bindless array of three buffers (its
nodes, triangles and instances; see :mod:`luisa_nb.kernels.lang.rays`), so arguments,
captures and the dispatch's trace need nothing of their own. A method call becomes a call
of the traversal callable with those buffers."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.rays import (
    ACCEL_CALLABLES,
    ACCEL_METHOD_ALIASES,
    ACCEL_METHODS,
    BVH_NODE,
    RAY,
)
from luisa_nb.kernels.type_system import ScalarType, article

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

UNSUPPORTED_METHODS = {
    "trace_closest_cullback": "back-face culling",
    "trace_any_cullback": "back-face culling",
    "query_all": "ray queries",
    "query_any": "ray queries",
    "set_instance_transform": "changing instances in kernels",
    "set_instance_visibility": "changing instances in kernels",
    "set_instance_opacity": "changing instances in kernels",
    "set_instance_user_id": "changing instances in kernels",
}


class AccelTyping:
    """Mixin of :class:`KernelTyper` for acceleration structures."""

    def is_accel_heap(self: KernelTyper, heap: int) -> bool:
        """Whether bindless heap ``heap`` is an acceleration structure's buffers."""
        _, pairs = self.heaps[heap]
        return bool(pairs) and self.buffers[pairs[0][1]].element is BVH_NODE

    def accel_method(self: KernelTyper, node: ast.Call, heap: int) -> ir.Expression:
        """``accel.method(arguments)`` as a call of the method's traversal callable."""
        name, pairs = self.heaps[heap]
        method = ACCEL_METHOD_ALIASES.get(node.func.attr, node.func.attr)
        if method in UNSUPPORTED_METHODS:
            self.fail(
                node.func,
                f"{name}.{node.func.attr}: {UNSUPPORTED_METHODS[method]} is not supported by "
                f"luisa_nb; use {name}.trace_closest(ray, vis_mask) or "
                f"{name}.trace_any(ray, vis_mask)",
            )
        if method not in ACCEL_METHODS:
            listed = ", ".join(f".{usage}" for usage in ACCEL_METHODS.values())
            self.fail(node.func, f"acceleration structures have {listed}; not .{method}")
        usage = f"{name}.{ACCEL_METHODS[method]}"
        if node.keywords:
            self.fail(node.keywords[0], f"{usage} takes no keyword arguments")
        expected = usage.count(",") + 1
        if len(node.args) != expected:
            self.fail(node, f"{usage} takes {expected} argument(s), got {len(node.args)}")
        arguments = [self.visit(argument) for argument in node.args]
        if method.startswith("trace"):
            ray, mask = arguments
            if ray.type is not RAY:
                self.fail(
                    node.args[0], f"{usage}: ray must be a Ray (make_ray(...)), got {ray.type}"
                )
            arguments[1] = self.unsigned(mask, node.args[1], usage)
        else:
            arguments[0] = self.unsigned(arguments[0], node.args[0], usage)
        definition = ACCEL_CALLABLES[method].definition
        buffers = [ir.BufferArgument(slot, self.buffers[slot].element) for _, slot in pairs]
        types = [*buffers, *(argument.type for argument in arguments)]
        return self.typed_callable_call(definition, node, arguments, types, False)

    def unsigned(
        self: KernelTyper, value: ir.Expression, node: ast.AST, usage: str
    ) -> ir.Expression:
        """An integer scalar argument as a uint32 (``-1`` is every bit, as in luisa)."""
        value = self.scalar(value, node)
        if not value.type.is_integer:
            self.fail(node, f"{usage} takes an integer here, got {article(value.type)}")
        if value.type is ScalarType.UINT32:
            return value
        if isinstance(value, ir.Constant):
            return ir.Constant(ScalarType.UINT32, int(value.value) & 0xFFFFFFFF)
        return ir.Cast(ScalarType.UINT32, value)
