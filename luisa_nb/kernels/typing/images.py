"""Typing of image methods in kernels, as luisa-python's ``Image2D`` has them:
``img.read(coord)``, ``img.write(coord, value)`` and ``img.texture_size()``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.type_system import (
    ImageType,
    ScalarType,
    VectorType,
    article,
    assignable,
    is_composite,
)
from luisa_nb.kernels.typing.expressions import is_weak

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

IMAGE_METHODS = {"read": "read(coord)", "write": "write(coord, value)", "texture_size": ""}
UINT2 = VectorType(ScalarType.UINT32, 2)
UINT3 = VectorType(ScalarType.UINT32, 3)
COORD_TYPES = (VectorType(ScalarType.INT32, 2), UINT2)
COORD_TYPES_3D = (VectorType(ScalarType.INT32, 3), UINT3)


class ImageTyping:
    """Mixin of :class:`KernelTyper` that types image methods."""

    def image_method(
        self: KernelTyper, node: ast.Call, slot: int, statement: bool
    ) -> ir.Expression | ir.ImageWrite:
        """``img.read(coord)``, ``img.write(coord, value)`` or ``img.texture_size()`` on
        the image in buffer ``slot``."""
        method = node.func.attr
        name = self.buffers[slot].name
        image: ImageType = self.buffers[slot].element
        if method not in IMAGE_METHODS:
            self.fail(
                node.func,
                f"images have only .read(coord), .write(coord, value) and .texture_size(), "
                f"not .{method}",
            )
        if node.keywords:
            self.fail(node.keywords[0], f"{name}.{method}() takes no keyword arguments")
        expected = {"read": 1, "write": 2, "texture_size": 0}[method]
        if len(node.args) != expected:
            usage = f"{name}.{IMAGE_METHODS[method] or method + '()'}"
            self.fail(node, f"{usage} takes {expected} argument(s), got {len(node.args)}")
        if method == "texture_size":
            size = tuple(ir.Constant(ScalarType.UINT32, extent) for extent in image.size)
            return ir.Construct(UINT3 if image.depth else UINT2, size)
        coord = self.visit(node.args[0])
        if coord.type not in (COORD_TYPES_3D if image.depth else COORD_TYPES):
            kinds = "an int3 or uint3" if image.depth else "an int2 or uint2"
            self.fail(
                node.args[0],
                f"{name}.{IMAGE_METHODS[method]} takes {kinds} coordinate, got {coord.type}",
            )
        if method == "read":
            return ir.ImageRead(image.texel, slot, coord, node.lineno)
        if not statement:
            self.fail(node, f"{name}.write(...) returns nothing; use it as a statement")
        value = self.visit(node.args[1])
        texel = image.texel
        if is_composite(texel) or is_composite(value.type):
            storable = is_composite(value.type) and self.storable(texel, value)
            if not storable:
                self.fail(
                    node.args[1],
                    f"cannot write {article(value.type)} value into {name!r}, an image of {texel} "
                    f"texels; write {article(texel)}",
                )
            value = value if value.type == texel else ir.Cast(texel, value)
        else:
            if not assignable(texel, value.type, is_weak(value)):
                self.fail(
                    node.args[1],
                    f"cannot write {article(value.type)} value into {name!r}, an image of {texel} "
                    f"texels; convert it explicitly",
                )
            value = self.convert(value, texel, node.args[1])
        return ir.ImageWrite(slot, coord, value, node.lineno)
