"""Bindless arrays in the emitted C: each resource is a buffer slot of the kernel, and a
call is a ``switch`` over the slots that suit it (a GNU statement expression that
evaluates the slot and the arguments once). A slot that suits no ``case`` gives zero, and
with checks notes an index error whose buffer is ``-2 - site`` (``site``: the call's
index in ``bindless_sites``). A mixin of :class:`~luisa_nb.kernels.c.emitter.CEmitter`.

Sampling, with the slot's :class:`~luisa_nb.kernels.type_system.Sampler`, is one helper
per image type and sampler, written for any number of axes (2D and 3D images share it).
On each axis of extent ``n``: ``repeat`` first takes ``u - floor(u)``, ``mirror`` ``u -
2 floor(u / 2)``; ``linear`` filtering then has texel centres at ``(i + 0.5) / n``, so
the taps are ``floor(u n - 0.5)`` and the next, weighted by the fraction; ``point`` takes
``floor(u n)``. Each tap index is clamped to ``[-2, 2n]`` (no overflow; NaN gives 2n)
and then addressed: ``repeat`` wraps it, ``mirror`` reflects it with period ``2n``,
``edge`` clamps it and ``zero`` makes a tap outside the image read zero. Linear taps are
blended axis by axis, x first, as GPUs filter.
"""

from __future__ import annotations

from itertools import product
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.c.images import STORAGE_TYPES, image_label
from luisa_nb.kernels.type_system import ImageType, Sampler, ScalarType, VectorType
from luisa_nb.kernels.typing.bindless import texture_operation

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter

FLOAT4 = VectorType(ScalarType.FLOAT32, 4)
AXES = "xyz"

ADDRESS = {  # the index of tap ``i`` on an axis of ``n`` texels; -1 reads zero
    "repeat": "const int32_t r = i % n; return r < 0 ? r + n : r;",
    "mirror": "int32_t t = i % (2 * n); if (t < 0) t += 2 * n; return t < n ? t : 2 * n - 1 - t;",
    "edge": "return i < 0 ? 0 : i >= n ? n - 1 : i;",
    "zero": "return i < 0 || i >= n ? -1 : i;",
}

REDUCE = {"repeat": "{u} - floorf({u})", "mirror": "{u} - 2.0f * floorf({u} * 0.5f)"}

FETCH = """\
{prefix} {float4} {name}(const {storage} *texels, {parameters}) {{
    if (({any_negative}) < 0) return {zero};
    const {texel} t = {read}(texels, {coordinates});
    return {value};
}}"""


def blend(component: str, axis: int, taps: tuple[int, ...] = ()) -> str:
    """The linear blend of ``component`` of the taps, from ``axis`` down to x; ``taps``
    fixes the higher axes (tap 0 or 1 on each)."""
    if axis < 0:
        return f"t{''.join(map(str, taps))}.{component}"
    low, high = blend(component, axis - 1, (0, *taps)), blend(component, axis - 1, (1, *taps))
    return f"({low} * g{axis} + {high} * f{axis})"


class BindlessEmission:
    """Mixin of :class:`CEmitter` for :class:`ir.BindlessCall`."""

    def widened(self: CEmitter, image: ImageType, value: str) -> list[str]:
        """The four float components of texel ``value`` of ``image`` (missing ones 0)."""
        if image.channels == 1:
            return [value, "0.0f", "0.0f", "0.0f"]
        return [f"{value}.{c}" for c in "xyzw"[: image.channels]] + ["0.0f"] * (4 - image.channels)

    def texel_fetch(self: CEmitter, image: ImageType) -> str:
        """A helper reading a texel of a float image as a float4, zero where a coordinate
        is negative (the ``zero`` address of a tap outside)."""
        name = f"lnb_fetch4_{image_label(image)}"
        if name in self.helper_names:
            return name
        coordinates = AXES[: len(image.size)]
        int_n = VectorType(ScalarType.INT32, len(coordinates))
        read = self.image_helper("read", image, int_n, checked=False)
        self.helper_names.add(name)
        self.image_helper_texts.append(
            FETCH.format(
                prefix=self.function_prefix,
                name=name,
                storage=STORAGE_TYPES[image.storage],
                parameters=", ".join(f"int32_t {c}" for c in coordinates),
                any_negative=" | ".join(coordinates),
                float4=self.type_name(FLOAT4),
                zero=self.compound(self.type_name(FLOAT4), "0.0f, 0.0f, 0.0f, 0.0f"),
                texel=self.type_name(image.texel),
                read=read,
                coordinates=self.compound(self.type_name(int_n), ", ".join(coordinates)),
                value=self.compound(self.type_name(FLOAT4), ", ".join(self.widened(image, "t"))),
            )
        )
        return name

    def address_helper(self: CEmitter, address: str) -> str:
        """The helper giving a tap's index under ``address``."""
        name = f"lnb_address_{address}"
        if name not in self.helper_names:
            self.helper_names.add(name)
            self.image_helper_texts.append(
                f"{self.function_prefix} int32_t {name}(int32_t i, int32_t n) "
                f"{{ {ADDRESS[address]} }}"
            )
        return name

    def texel_sample(self: CEmitter, image: ImageType) -> str:
        """A helper sampling a float image at ``uv`` with its slot's sampler."""
        sampler = image.sampler or Sampler()
        name = f"lnb_sample_{image_label(image)}_{sampler.filter}_{sampler.address}"
        if name in self.helper_names:
            return name
        fetch = self.texel_fetch(image)
        address = self.address_helper(sampler.address)
        self.helper_names.add(name)
        self.uses_math = True
        linear = sampler.filter == "linear"
        lines = []
        for axis, extent in enumerate(image.size):
            u = f"uv.{AXES[axis]}"
            reduced = REDUCE.get(sampler.address, "{u}").format(u=u)
            lines.append(f"const float u{axis} = {reduced};")
            if linear:
                lines.append(f"const float x{axis} = u{axis} * {extent}.0f - 0.5f;")
                lines.append(f"const float c{axis} = floorf(x{axis});")
                lines.append(f"const float f{axis} = x{axis} - c{axis}, g{axis} = 1.0f - f{axis};")
            else:
                lines.append(f"const float c{axis} = floorf(u{axis} * {extent}.0f);")
            lines.append(
                f"const int32_t k{axis} = (int32_t)fmaxf(fminf(c{axis}, {2 * extent}.0f), -2.0f);"
            )
            lines.append(f"const int32_t i{axis}0 = {address}(k{axis}, {extent});")
            if linear:
                lines.append(f"const int32_t i{axis}1 = {address}(k{axis} + 1, {extent});")
        float4 = self.type_name(FLOAT4)
        dimensions = len(image.size)
        if linear:
            for taps in product((0, 1), repeat=dimensions):
                indices = ", ".join(f"i{axis}{tap}" for axis, tap in enumerate(taps))
                label = "".join(map(str, taps))
                lines.append(f"const {float4} t{label} = {fetch}(texels, {indices});")
            components = ", ".join(blend(c, dimensions - 1) for c in "xyzw")
            lines.append(f"return {self.compound(float4, components)};")
        else:
            indices = ", ".join(f"i{axis}0" for axis in range(dimensions))
            lines.append(f"return {fetch}(texels, {indices});")
        uv = self.type_name(VectorType(ScalarType.FLOAT32, dimensions))
        body = "\n".join(f"    {line}" for line in lines)
        self.image_helper_texts.append(
            f"{self.function_prefix} {float4} {name}(const {STORAGE_TYPES[image.storage]} "
            f"*texels, {uv} uv) {{\n{body}\n}}"
        )
        return name

    def bindless_case(
        self: CEmitter, call: ir.BindlessCall, position: int, arguments: list[ir.Expression]
    ) -> str:
        """The value of ``call`` on its ``position``-th suitable slot; ``arguments`` are
        the locals holding its arguments after the slot."""
        buffer = call.slots[position][1]
        element = self.kernel.buffers[buffer].element
        if call.method == "buffer_read":
            return self.expression(ir.BufferRead(call.type, buffer, arguments[0], call.line))
        if call.method == "buffer_size":
            return f"{call.sizes[position]}u"
        _, operation = texture_operation(call.method)
        if operation == "size":
            extents = ", ".join(f"{extent}u" for extent in element.size)
            return self.compound(self.type_name(call.type), extents)
        if operation == "sample":
            sampler = self.texel_sample(element)
            return f"{sampler}({self.buffer_name(buffer)}, {self.expression(arguments[0])})"
        texel = self.expression(ir.ImageRead(element.texel, buffer, arguments[0], call.line))
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
        arguments: list[ir.Expression] = []
        for index, value in enumerate(call.arguments):
            suffix = f"_{index}" if index else ""  # evaluated once, used or not
            argument = ir.Local(value.type, f"lnb_argument{number}{suffix}")
            variable = self.variable_name(argument.name)
            lines.append(
                f"const {self.type_name(value.type)} {variable} = {self.expression(value)};"
            )
            arguments.append(argument)
        lines.append(f"{self.type_name(call.type)} {result} = {{0}};")
        cases = [
            f"case {heap_slot}: {result} = {self.bindless_case(call, position, arguments)}; break;"
            for position, (heap_slot, _) in enumerate(call.slots)
        ]
        default = ""
        if self.checks.bounds:
            self.notes_checks = True
            default = (
                f"lnb_note(lnb_state, 0, LNB_INDEX_ERROR, {call.line}, {-2 - site}, 0, "
                f"{slot}, 0, 0.0); "
            )
        switch = f"switch ({slot}) {{ {' '.join(cases)} default: {default}break; }}"
        return self.statement_expression([*lines, switch], result)
