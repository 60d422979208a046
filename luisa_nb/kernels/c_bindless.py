"""Bindless arrays in the emitted C: each resource is a buffer slot of the kernel, and a
call is a ``switch`` over the slots that suit it (a GNU statement expression that
evaluates the slot and the argument once). A slot that suits no ``case`` gives zero, and
with checks notes an index error whose buffer is ``-2 - site`` (``site``: the call's
index in ``bindless_sites``). ``texture2d_sample`` filters bilinearly with repeat
addressing, as luisa-python's default sampler does: texel centres at ``(i + 0.5) / size``.
A mixin of :class:`~luisa_nb.kernels.c_emitter.CEmitter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.c_images import STORAGE_TYPES, image_label
from luisa_nb.kernels.type_system import ImageType, ScalarType, VectorType

if TYPE_CHECKING:
    from luisa_nb.kernels.c_emitter import CEmitter

FLOAT4 = VectorType(ScalarType.FLOAT32, 4)
INT2 = VectorType(ScalarType.INT32, 2)

SAMPLE = """\
{prefix} {float4} {name}(const {storage} *texels, {float2} uv) {{
    const float u = uv.x - floorf(uv.x), v = uv.y - floorf(uv.y);
    const float x = u * {width}.0f - 0.5f, y = v * {height}.0f - 0.5f;
    const float x0 = floorf(x), y0 = floorf(y);
    const float fx = x - x0, fy = y - y0, gx = 1.0f - fx, gy = 1.0f - fy;
    const int32_t i0 = ((int32_t)x0 + {width}) % {width}, i1 = (i0 + 1) % {width};
    const int32_t j0 = ((int32_t)y0 + {height}) % {height}, j1 = (j0 + 1) % {height};
    const {float4} a = {fetch}(texels, i0, j0), b = {fetch}(texels, i1, j0);
    const {float4} c = {fetch}(texels, i0, j1), d = {fetch}(texels, i1, j1);
    return {value};
}}"""

FETCH = """\
{prefix} {float4} {name}(const {storage} *texels, int32_t x, int32_t y) {{
    const {texel} t = {read}(texels, {coord});
    return {value};
}}"""


class BindlessEmission:
    """Mixin of :class:`CEmitter` for :class:`ir.BindlessCall`."""

    def widened(self: CEmitter, image: ImageType, value: str) -> list[str]:
        """The four float components of texel ``value`` of ``image`` (missing ones 0)."""
        if image.channels == 1:
            return [value, "0.0f", "0.0f", "0.0f"]
        return [f"{value}.{c}" for c in "xyzw"[: image.channels]] + ["0.0f"] * (4 - image.channels)

    def texel_fetch(self: CEmitter, image: ImageType) -> str:
        """A helper reading texel (x, y), in range, of a float image as a float4."""
        name = f"lnb_fetch4_{image_label(image)}"
        if name in self.helper_names:
            return name
        checks, self.checks = self.checks, False
        read = self.image_helper("read", image, INT2)
        self.checks = checks
        self.helper_names.add(name)
        self.image_helper_texts.append(
            FETCH.format(
                prefix=self.function_prefix,
                name=name,
                storage=STORAGE_TYPES[image.storage],
                float4=self.type_name(FLOAT4),
                texel=self.type_name(image.texel),
                read=read,
                coord=self.compound(self.type_name(INT2), "x, y"),
                value=self.compound(self.type_name(FLOAT4), ", ".join(self.widened(image, "t"))),
            )
        )
        return name

    def texel_sample(self: CEmitter, image: ImageType) -> str:
        """A helper sampling a float image bilinearly at ``uv`` with repeat addressing."""
        name = f"lnb_sample_{image_label(image)}"
        if name in self.helper_names:
            return name
        fetch = self.texel_fetch(image)
        self.helper_names.add(name)
        self.uses_math = True
        components = [
            f"(a.{c} * gx + b.{c} * fx) * gy + (c.{c} * gx + d.{c} * fx) * fy" for c in "xyzw"
        ]
        self.image_helper_texts.append(
            SAMPLE.format(
                prefix=self.function_prefix,
                name=name,
                storage=STORAGE_TYPES[image.storage],
                float4=self.type_name(FLOAT4),
                float2=self.type_name(VectorType(ScalarType.FLOAT32, 2)),
                width=image.width,
                height=image.height,
                fetch=fetch,
                value=self.compound(self.type_name(FLOAT4), ", ".join(components)),
            )
        )
        return name

    def bindless_case(
        self: CEmitter, call: ir.BindlessCall, position: int, argument: ir.Expression | None
    ) -> str:
        """The value of ``call`` on its ``position``-th suitable slot."""
        buffer = call.slots[position][1]
        element = self.kernel.buffers[buffer].element
        if call.method == "buffer_read":
            return self.expression(ir.BufferRead(call.type, buffer, argument, call.line))
        if call.method == "buffer_size":
            return f"{call.sizes[position]}u"
        if call.method == "texture2d_size":
            return self.compound(self.type_name(call.type), f"{element.width}u, {element.height}u")
        if call.method == "texture2d_sample":
            sampler = self.texel_sample(element)
            return f"{sampler}({self.buffer_name(buffer)}, {self.expression(argument)})"
        texel = self.expression(ir.ImageRead(element.texel, buffer, argument, call.line))
        if element.channels == 4:
            return texel
        temporary = f"lnb_t{self.sequence_counter}"
        self.sequence_counter += 1
        widened = self.compound(self.type_name(FLOAT4), ", ".join(self.widened(element, temporary)))
        texel_type = self.type_name(element.texel)
        return self.statement_expression([f"const {texel_type} {temporary} = {texel};"], widened)

    def expression_bindlesscall(self: CEmitter, call: ir.BindlessCall) -> str:
        site = len(self.bindless_sites)
        self.bindless_sites.append(call)
        number = self.sequence_counter
        self.sequence_counter += 1
        slot, result = f"lnb_slot{number}", f"lnb_result{number}"
        lines = [f"const int64_t {slot} = (int64_t)({self.expression(call.slot)});"]
        argument = None
        if call.arguments:
            value = call.arguments[0]
            argument = ir.Local(value.type, f"lnb_argument{number}")
            variable = self.variable_name(argument.name)
            lines.append(
                f"const {self.type_name(value.type)} {variable} = {self.expression(value)};"
            )
        lines.append(f"{self.type_name(call.type)} {result} = {{0}};")
        cases = [
            f"case {heap_slot}: {result} = {self.bindless_case(call, position, argument)}; break;"
            for position, (heap_slot, _) in enumerate(call.slots)
        ]
        default = ""
        if self.checks:
            self.notes_checks = True
            default = (
                f"lnb_note(lnb_state, 0, LNB_INDEX_ERROR, {call.line}, {-2 - site}, 0, "
                f"{slot}, 0, 0.0); "
            )
        switch = f"switch ({slot}) {{ {' '.join(cases)} default: {default}break; }}"
        return self.statement_expression([*lines, switch], result)
