"""Samplers of bindless arrays' image slots: part of the kernel type, one generated
sampling helper per image type and sampler for 2D and 3D alike, checked by the runtime."""

from __future__ import annotations

import re

import pytest

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels import BufferType, KernelDefinition, ScalarType, argument_type
from luisa_nb.kernels.c.emitter import CEmitter
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.frontend.captures import CaptureResolver
from luisa_nb.kernels.lang.vectors import float2, float3
from luisa_nb.kernels.type_system import BindlessType, ImageType, Sampler
from luisa_nb.kernels.typing.typer import KernelTyper
from luisa_nb.runtime import BindlessArray, create_device

F32 = BufferType(ScalarType.FLOAT32)


def image(depth: int, sampler: Sampler) -> BufferType:
    return BufferType(ImageType(ScalarType.FLOAT32, 4, "float32", 4, 2, depth, sampler))


def sample_both(heap, out):
    flat = heap.texture2d_sample(0, float2(0.25, 0.5))
    volume = heap.texture3d_sample(1, float3(0.25, 0.5, 0.75))
    out.write(0, flat.x + volume.x)


def emitted_c(heap: BindlessType) -> str:
    definition = KernelDefinition(sample_both, mode="c")
    kernel = KernelTyper(
        definition.kernel_source, (heap, F32), CaptureResolver(sample_both), "c"
    ).run()
    return CEmitter(kernel, KernelChecks.BOUNDS).emit()


@pytest.mark.parametrize(
    ("sampler", "taps_2d", "taps_3d"),
    [(Sampler("linear", "mirror"), 4, 8), (Sampler("point", "zero"), 1, 1)],
)
def test_one_generator_samples_both_dimensions(sampler, taps_2d, taps_3d):
    source = emitted_c(BindlessType(((0, image(0, sampler), 32), (1, image(3, sampler), 96))))
    helpers = {
        name: body
        for name, body in re.findall(
            r"(lnb_sample_\w+)\(const float \*texels, lnb_float\d uv\) \{(.*?)\n\}", source, re.S
        )
    }
    assert len(helpers) == 2 and all(
        name.endswith(str(sampler).replace("/", "_")) for name in helpers
    )
    flat, volume = sorted(helpers.values(), key=len)
    assert flat.count("lnb_fetch4_") == taps_2d and volume.count("lnb_fetch4_") == taps_3d
    assert source.count(f"lnb_address_{sampler.address}(int32_t i, int32_t n)") == 1


def test_the_sampler_is_part_of_the_kernel_type():
    device = create_device("cpu")
    try:
        texels = device.create_image(4, 2, 4, "float", depth=3)
        heap = BindlessArray(device, 4)
        heap.emplace(1, texels)
        heap.update()
        default = argument_type(heap)
        heap.emplace(1, texels, Sampler("point", "edge"))
        heap.update()
        point = argument_type(heap)
        assert default != point
        assert default.entries[0][1].element.sampler == Sampler("linear", "repeat")
        assert "point/edge" in str(point)
        with pytest.raises(InvalidArgumentError, match="only images take a sampler"):
            heap.emplace(0, device.create_buffer(4, "float32"), Sampler())
        with pytest.raises(InvalidArgumentError, match="'cubic', 'edge'"):
            heap.emplace(0, texels, Sampler("cubic", "edge"))
    finally:
        device.close()


def test_each_image_of_a_slot_has_its_own_sampler_and_kernel_type_entry():
    device = create_device("cpu")
    try:
        flat = device.create_image(4, 2, 4, "float")
        volume = device.create_image(4, 2, 4, "float", depth=3)
        values = device.create_buffer(5, "float32")
        heap = BindlessArray(device, 2)
        heap.emplace(1, volume, Sampler("point", "edge"))
        heap.emplace(1, flat, Sampler("linear", "mirror"))
        heap.emplace(1, values)
        heap.update()
        assert list(heap.resources()) == [(1, "buffer"), (1, "texture2d"), (1, "texture3d")]
        assert heap.views() == [values, flat, volume]
        entries = argument_type(heap).entries
        assert [(slot, size) for slot, _, size in entries] == [(1, 5), (1, 32), (1, 96)]
        assert entries[1][1].element.sampler == Sampler("linear", "mirror")
        assert entries[2][1].element.sampler == Sampler("point", "edge")
        before = argument_type(heap)
        heap.emplace(1, flat, Sampler("point", "zero"))  # the 2D image only
        heap.update()
        after = argument_type(heap).entries
        assert before != argument_type(heap) and after[2] == entries[2]
        assert after[1][1].element.sampler == Sampler("point", "zero")
    finally:
        device.close()
