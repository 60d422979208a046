"""Typing of bindless arrays in kernels, as luisa-python names their methods:
``heap.buffer_read(dtype, slot, index)``, ``heap.buffer_size(slot)``,
``heap.texture2d_read(slot, coord)``, ``heap.texture2d_sample(slot, uv)`` and
``heap.texture2d_size(slot)``. Each resource of the array is a buffer slot of the kernel
(read by every dispatch); a call becomes an :class:`ir.BindlessCall` over the slots whose
resource suits it."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels import ir
from luisa_nb.kernels.aggregates import kernel_type_of
from luisa_nb.kernels.type_system import (
    BindlessType,
    ImageType,
    KernelType,
    ScalarType,
    VectorType,
    argument_type,
    is_bindless_like,
)

if TYPE_CHECKING:
    from luisa_nb.kernels.typer import KernelTyper

FLOAT2 = VectorType(ScalarType.FLOAT32, 2)
FLOAT4 = VectorType(ScalarType.FLOAT32, 4)
UINT2 = VectorType(ScalarType.UINT32, 2)
COORD_TYPES = (VectorType(ScalarType.INT32, 2), UINT2)
BINDLESS_METHODS = {
    "buffer_read": "buffer_read(dtype, slot, index)",
    "buffer_size": "buffer_size(slot)",
    "texture2d_read": "texture2d_read(slot, coord)",
    "texture2d_sample": "texture2d_sample(slot, uv)",
    "texture2d_size": "texture2d_size(slot)",
}


def element_type_of(value: Any) -> KernelType | None:
    """The kernel type a type object names (``float``, ``float3``, a struct type, a
    numpy dtype, luisa's ``uint``, ...); None for anything else."""
    try:
        return kernel_type_of(value)
    except InvalidArgumentError:
        return None


class BindlessTyping:
    """Mixin of :class:`KernelTyper` for bindless array arguments and captures."""

    def add_heap(self: KernelTyper, name: str, heap: BindlessType, capture: Any = None) -> int:
        """Give each resource of bindless array ``name`` a buffer slot; its heap index."""
        pairs = []
        resources = capture.resources() if capture is not None else {}
        for slot, buffer_type, size in heap.entries:
            pairs.append((slot, len(self.buffers)))
            self.heap_sizes[len(self.buffers)] = size
            self.buffers.append(
                ir.BufferSlot(
                    f"{name}[{slot}]", buffer_type.element, resources.get(slot), heap=name
                )
            )
        self.heaps.append((name, tuple(pairs)))
        return len(self.heaps) - 1

    def is_heap(self: KernelTyper, node: ast.expr) -> bool:
        """Whether ``node`` names a bindless array argument or a captured one."""
        if not isinstance(node, ast.Name):
            return False
        if node.id in self.heap_arguments:
            return True
        return node.id not in self.local_names and is_bindless_like(self.resolve(node))

    def heap_index(self: KernelTyper, node: ast.Name) -> int:
        """The heap of a bindless array argument, or of a captured one (added on first
        use, with the resources it holds then)."""
        if node.id in self.heap_arguments:
            return self.heap_arguments[node.id]
        value = self.resolve(node)
        if id(value) not in self.captured_heaps:
            self.captured_heaps[id(value)] = self.add_heap(node.id, argument_type(value), value)
        return self.captured_heaps[id(value)]

    def heap_method(self: KernelTyper, node: ast.Call) -> ir.BindlessCall:
        """A method call on a bindless array."""
        method = node.func.attr
        heap = self.heap_index(node.func.value)
        name, pairs = self.heaps[heap]
        if method not in BINDLESS_METHODS:
            known = ", ".join(f".{usage}" for usage in BINDLESS_METHODS.values())
            self.fail(node.func, f"bindless arrays have {known}; not .{method}")
        if node.keywords:
            self.fail(node.keywords[0], f"{name}.{method}() takes no keyword arguments")
        usage = f"{name}.{BINDLESS_METHODS[method]}"
        expected = usage.count(",") + 1
        if len(node.args) != expected:
            self.fail(node, f"{usage} takes {expected} argument(s), got {len(node.args)}")
        arguments = list(node.args)
        result: KernelType = ScalarType.UINT32
        if method == "buffer_read":
            dtype_node = arguments.pop(0)
            result = element_type_of(self.resolve(dtype_node))
            if result is None:
                self.fail(dtype_node, f"{usage}: dtype must be a type (float, int, float3, ...)")
        slot_node = arguments.pop(0)
        slot = self.integer(self.visit(slot_node), slot_node, usage)
        typed: list[ir.Expression] = []
        if method == "buffer_read":
            typed.append(self.integer(self.visit(arguments[0]), arguments[0], usage))
        elif method == "texture2d_read":
            coord = self.visit(arguments[0])
            if coord.type not in COORD_TYPES:
                self.fail(arguments[0], f"{usage} takes a uint2 or int2 coord, got {coord.type}")
            typed.append(coord)
        elif method == "texture2d_sample":
            uv = self.visit(arguments[0])
            if uv.type != FLOAT2:
                self.fail(arguments[0], f"{usage} takes a float2 uv, got {uv.type}")
            typed.append(uv)
        if method.startswith("texture2d"):
            suits = [(s, b) for s, b in pairs if isinstance(self.buffers[b].element, ImageType)]
            result = FLOAT4 if method != "texture2d_size" else UINT2
        else:
            suits = [
                (s, b)
                for s, b in pairs
                if not isinstance(self.buffers[b].element, ImageType)
                and (method == "buffer_size" or self.buffers[b].element == result)
            ]
        sizes = tuple(self.heap_sizes[b] for _, b in suits) if method == "buffer_size" else ()
        return ir.BindlessCall(
            result, heap, method, tuple(suits), slot, tuple(typed), node.lineno, sizes
        )

    def integer(
        self: KernelTyper, value: ir.Expression, node: ast.AST, usage: str
    ) -> ir.Expression:
        """``value`` as a slot or element index: an integer scalar."""
        value = self.scalar(value, node)
        if not value.type.is_integer:
            self.fail(node, f"{usage}: slots and indices are integers, got {value.type}")
        return value
