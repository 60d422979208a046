"""Typing of bindless arrays in kernels, as luisa-python names their methods:
``heap.buffer_read(dtype, slot, index)``, ``heap.buffer_size(slot)`` and, for 2D and
3D images (``texture2d_*``, ``texture3d_*``), ``_read(slot, coord)``,
``_sample(slot, uv)``, ``_sample_mip(slot, uv, level)``, ``_sample_grad(slot, uv, ddx,
ddy)``, ``_sample_grad_level(slot, uv, ddx, ddy, min_level)``, ``_size(slot)`` and
``_size_mip(slot, level)``. Images have one mip level, so the level and gradient
arguments are evaluated and the call works on level 0. Each resource of the array is a
buffer slot of the kernel (read by every dispatch); a call becomes an
:class:`ir.BindlessCall` over the slots whose resource of the call's kind suits it
(``buffer_*`` calls use a slot's buffer, ``texture2d_*`` its 2D image, ``texture3d_*``
its 3D image: a slot holds one of each, so each slot is one case of a call)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.aggregates import kernel_type_of
from luisa_nb.kernels.type_system import (
    BindlessType,
    ImageType,
    KernelType,
    ScalarType,
    VectorType,
    argument_type,
    is_bindless_like,
    resource_kind_of,
)

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

FLOAT4 = VectorType(ScalarType.FLOAT32, 4)
TEXTURE_ARGUMENTS = {  # texture method -> its arguments after the slot
    "read": ("coord",),
    "sample": ("uv",),
    "sample_mip": ("uv", "sample_level"),
    "sample_grad": ("uv", "ddx", "ddy"),
    "sample_grad_level": ("uv", "ddx", "ddy", "min_level"),
    "size": (),
    "size_mip": ("level",),
}
BINDLESS_METHODS = {
    "buffer_read": "buffer_read(dtype, slot, index)",
    "buffer_size": "buffer_size(slot)",
    **{
        f"texture{d}d_{method}": f"texture{d}d_{method}({', '.join(('slot', *arguments))})"
        for d in (2, 3)
        for method, arguments in TEXTURE_ARGUMENTS.items()
    },
}


def texture_operation(method: str) -> tuple[int, str] | None:
    """``(dimension, "read" | "sample" | "size")`` of a texture method (all sampling
    forms sample level 0); None for buffer methods."""
    if not method.startswith("texture"):
        return None
    return int(method[7]), method[10:].split("_")[0]


def suits(image: Any, dimension: int) -> bool:
    """Whether a resource's element type is an image a ``texture{dimension}d`` call uses."""
    return isinstance(image, ImageType) and (image.depth > 0) == (dimension == 3)


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
                    f"{name}[{slot}]",
                    buffer_type.element,
                    resources.get((slot, resource_kind_of(buffer_type.element))),
                    heap=name,
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

    def heap_method(self: KernelTyper, node: ast.Call) -> ir.Expression:
        """A method call on a bindless array (or on an acceleration structure, which
        kernels see as one: ``typing/rays.py``)."""
        method = node.func.attr
        heap = self.heap_index(node.func.value)
        if self.is_accel_heap(heap):
            return self.accel_method(node, heap)
        name, pairs = self.heaps[heap]
        if method == "byte_buffer_read":
            self.fail(
                node.func,
                f"{name}.byte_buffer_read: byte buffers are not supported by luisa_nb; read a "
                f"typed buffer with {name}.buffer_read(dtype, slot, index)",
            )
        if method not in BINDLESS_METHODS:
            forms = ", ".join(TEXTURE_ARGUMENTS)
            self.fail(
                node.func,
                f"bindless arrays have .buffer_read(dtype, slot, index), .buffer_size(slot) "
                f"and .texture2d_* and .texture3d_* ({forms}); not .{method}",
            )
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
        if method == "buffer_read":
            typed = [self.integer(self.visit(arguments[0]), arguments[0], usage)]
        elif method == "buffer_size":
            typed = []
        else:
            typed = [
                self.texture_argument(kind, argument, usage, int(method[7]))
                for kind, argument in zip(TEXTURE_ARGUMENTS[method[10:]], arguments, strict=True)
            ]
        operation = texture_operation(method)
        if operation is not None:
            dimension, kind = operation
            chosen = [(s, b) for s, b in pairs if suits(self.buffers[b].element, dimension)]
            size_type = VectorType(ScalarType.UINT32, dimension)
            result = size_type if kind == "size" else FLOAT4
        else:
            chosen = [
                (s, b)
                for s, b in pairs
                if not isinstance(self.buffers[b].element, ImageType)
                and (method == "buffer_size" or self.buffers[b].element == result)
            ]
        sizes = tuple(self.heap_sizes[b] for _, b in chosen) if method == "buffer_size" else ()
        return ir.BindlessCall(
            result, heap, method, tuple(chosen), slot, tuple(typed), node.lineno, sizes
        )

    def texture_argument(
        self: KernelTyper, kind: str, node: ast.expr, usage: str, dimension: int
    ) -> ir.Expression:
        """Argument ``kind`` (see :data:`TEXTURE_ARGUMENTS`) of a texture method."""
        value = self.visit(node)
        if kind == "coord":
            if value.type not in (
                VectorType(ScalarType.INT32, dimension),
                VectorType(ScalarType.UINT32, dimension),
            ):
                self.fail(
                    node,
                    f"{usage} takes a uint{dimension} or int{dimension} coord, got {value.type}",
                )
        elif kind == "level":
            value = self.integer(value, node, usage)
        elif kind == "sample_level":  # a float in luisa-python; an integer converts
            value = self.scalar(value, node)
            if not value.type.is_numeric:
                self.fail(node, f"{usage}: level is a number, got {value.type}")
        elif kind == "min_level":
            value = self.scalar(value, node)
            if not value.type.is_float:
                self.fail(node, f"{usage}: min_level is a float, got {value.type}")
        elif value.type != VectorType(ScalarType.FLOAT32, dimension):
            self.fail(node, f"{usage} takes a float{dimension} {kind}, got {value.type}")
        return value

    def integer(
        self: KernelTyper, value: ir.Expression, node: ast.AST, usage: str
    ) -> ir.Expression:
        """``value`` as a slot or element index: an integer scalar."""
        value = self.scalar(value, node)
        if not value.type.is_integer:
            self.fail(node, f"{usage}: slots and indices are integers, got {value.type}")
        return value
