"""Images in the emitted C: an image is a pointer to its stored channels, and each read
and write a ``static inline`` helper per (image type, coordinate type) that converts the
channels (``byte``/``short`` storage of float images is unsigned normalized: divided by
255 or 65535 on read, clamped to [0, 1], scaled and rounded to nearest on write). Width,
height (and a 3D image's depth) are constants of the image type. Checked helpers test
``x < width``, ``y < height`` (and ``z < depth``) and note a failure as buffer accesses
do, with ``x`` as the index and ``y`` (3D: ``z * 2**32`` plus the 32 bits of ``y``) as
the value of the report, and whether the coordinate is unsigned. A mixin of
:class:`~luisa_nb.kernels.c.emitter.CEmitter`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from luisa_nb.kernels import ir
from luisa_nb.kernels.type_system import ImageType, VectorType

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter

STORAGE_TYPES = {
    "uint8": "uint8_t",
    "int8": "int8_t",
    "uint16": "uint16_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "uint32": "uint32_t",
    "float32": "float",
}

READ = """\
{prefix} {texel} {name}(const {storage} *texels, {coord} coord{check_parameters}) {{
    const int64_t x = coord.x, y = coord.y{z};
{check}    const {storage} *t = texels + ({row} * {width} + x) * {channels};
    return {value};
}}"""

WRITE = """\
{prefix} void {name}({storage} *texels, {coord} coord, {texel} value{check_parameters}) {{
    const int64_t x = coord.x, y = coord.y{z};
{check}    {storage} *t = texels + ({row} * {width} + x) * {channels};
{stores}
}}"""

TEXEL_WHERE_3D = "(double)z * 4294967296.0 + (double)(uint32_t)y"

CHECK = """\
    const _Bool ok = ((uint64_t)x < {width}u) & ((uint64_t)y < {height}u){z_check};
    lnb_note(state, ok, LNB_INDEX_ERROR, line, slot, {access}, x, {unsigned}, {where});
    if ({skip}) return{zero};
"""


def image_label(image: ImageType) -> str:
    """The image type as part of a C identifier."""
    size = "x".join(map(str, image.size))
    return re.sub(r"\W+", "_", f"{image.texel}_{image.storage}_{size}")


class ImageEmission:
    """Mixin of :class:`CEmitter` for :class:`ir.ImageRead` and :class:`ir.ImageWrite`."""

    def image_helper(
        self: CEmitter, access: str, image: ImageType, coord: VectorType, *, checked: bool
    ) -> str:
        """The helper reading or writing one texel, defined on first use (after the
        checked buffer accesses, since it notes failures as they do); ``checked``: whether
        it checks the coordinate."""
        helper = "checked_image" if checked else "image"
        name = f"lnb_{helper}_{access}_{image_label(image)}_{coord}"
        if name in self.helper_names:
            return name
        self.helper_names.add(name)
        texel = self.type_name(image.texel)
        fields = {
            "prefix": self.function_prefix,
            "name": name,
            "texel": texel,
            "storage": STORAGE_TYPES[image.storage],
            "coord": self.type_name(coord),
            "width": image.width,
            "channels": image.channels,
            "check_parameters": "",
            "check": "",
            "z": ", z = coord.z" if image.depth else "",
            "row": f"(z * {image.height} + y)" if image.depth else "y",
        }
        if checked:
            fields["check_parameters"] = ", int32_t line, int32_t slot, lnb_thread *state"
            fields["check"] = CHECK.format(
                width=image.width,
                height=image.height,
                z_check=f" & ((uint64_t)z < {image.depth}u)" if image.depth else "",
                unsigned=int(not coord.element.is_signed),
                where=TEXEL_WHERE_3D if image.depth else "(double)y",
                access=0 if access == "read" else 1,
                skip="!ok" if access == "read" else "!ok | state->skip_writes",
                zero=(" 0" if image.channels == 1 else f" {self.compound(texel, '0')}")
                if access == "read"
                else "",
            )
        scale = float(np.iinfo(image.dtype).max) if image.normalized else None
        if scale is not None:
            self.uses_math = True
        kind = self.type_name(image.kind)
        fields_of = ("x", "y", "z", "w")[: image.channels]
        if access == "read":
            channels = [
                f"t[{i}] / {scale}f" if scale else f"({kind})t[{i}]" for i in range(image.channels)
            ]
            value = (
                channels[0] if image.channels == 1 else self.compound(texel, ", ".join(channels))
            )
            text = READ.format(value=value, **fields)
        else:
            components = ["value"] if image.channels == 1 else [f"value.{f}" for f in fields_of]
            storage = STORAGE_TYPES[image.storage]
            stores = [
                f"    t[{i}] = ({storage})roundf(fminf(fmaxf({c}, 0.0f), 1.0f) * {scale}f);"
                if scale
                else f"    t[{i}] = ({storage}){c};"
                for i, c in enumerate(components)
            ]
            text = WRITE.format(stores="\n".join(stores), **fields)
        self.image_helper_texts.append(text)
        return name

    def expression_imageread(self: CEmitter, expression: ir.ImageRead) -> str:
        image = self.kernel.buffers[expression.buffer].element
        helper = self.image_helper("read", image, expression.coord.type, checked=self.checks.bounds)
        arguments = [self.buffer_name(expression.buffer), self.expression(expression.coord)]
        if self.checks.bounds:
            arguments += [str(expression.line), str(expression.buffer), "lnb_state"]
        return f"{helper}({', '.join(arguments)})"

    def image_write(self: CEmitter, statement: ir.ImageWrite) -> str:
        image = self.kernel.buffers[statement.buffer].element
        helper = self.image_helper("write", image, statement.coord.type, checked=self.checks.bounds)
        arguments = [
            self.buffer_name(statement.buffer),
            self.expression(statement.coord),
            self.expression(statement.value),
        ]
        if self.checks.bounds:
            arguments += [str(statement.line), str(statement.buffer), "lnb_state"]
        return f"{helper}({', '.join(arguments)})"
