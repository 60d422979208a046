"""Images in kernels (luisa-python's ``read``, ``write`` and ``texture_size``): storage
conversions, captured and argument images, checked coordinates, in C and Python mode."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import KernelCompileError, KernelIndexError
from luisa_nb.kernels import BufferType, KernelDefinition, argument_type, compiler_available
from luisa_nb.kernels.type_system import ImageType, ScalarType

from . import image_kernels
from .helpers import FakeBuffer, load_function, run

MODES = ["python", pytest.param("c", marks=pytest.mark.skipif(
    not compiler_available(), reason="no C compiler"))]  # fmt: skip
F32 = np.float32


class FakeImage(FakeBuffer):
    """Image-like by duck typing: a buffer of channels with a size and a kind."""

    __lnb_image__ = True

    def __init__(self, width: int, height: int, channels: int, kind: str, dtype) -> None:
        super().__init__(np.zeros(width * height * channels, dtype))
        self.width, self.height, self.channels, self.kind = width, height, channels, kind

    def pixels(self) -> np.ndarray:
        return self.array.reshape(self.height, self.width, self.channels)


def unorm8(values: np.ndarray) -> np.ndarray:
    """float32 values stored as bytes: clamped, scaled, rounded half up."""
    scaled = np.fmin(np.fmax(values.astype(F32), F32(0)), F32(1)) * F32(255)
    return np.floor(scaled.astype(np.float64) + 0.5).astype(np.uint8)


def test_argument_type_holds_kind_channels_storage_and_size():
    image = FakeImage(5, 3, 2, "float", np.uint16)
    kind = argument_type(image)
    assert kind == BufferType(ImageType(ScalarType.FLOAT32, 2, "uint16", 5, 3))
    assert kind.element.normalized and kind.dtype == np.uint16
    assert str(kind.element) == "image[float2, uint16, 5x3]"


@pytest.mark.parametrize("mode", MODES)
def test_gradient_into_a_byte_image(mode):
    width, height = 13, 7
    image = FakeImage(width, height, 4, "float", np.uint8)
    run(KernelDefinition(image_kernels.gradient, mode=mode), (width, height), image)
    xs, ys = np.meshgrid(np.arange(width, dtype=F32), np.arange(height, dtype=F32))
    u = (xs + F32(0.5)) / F32(width)
    v = (ys + F32(0.5)) / F32(height)
    expected = unorm8(np.stack([u, v, np.full_like(u, 0.5), np.ones_like(u)], axis=-1))
    np.testing.assert_array_equal(image.pixels(), expected)


def numpy_mandelbrot(width: int, height: int, max_iter: int) -> np.ndarray:
    xs, ys = np.meshgrid(np.arange(width, dtype=F32), np.arange(height, dtype=F32))
    cx = F32(3) * xs / F32(width) - F32(2)
    cy = F32(2) * ys / F32(height) - F32(1)
    zx, zy = np.zeros_like(cx), np.zeros_like(cy)
    itr = np.full(cx.shape, max_iter - 1, np.int32)
    running = np.ones(cx.shape, bool)
    for step in range(max_iter):
        new_x = zx * zx - zy * zy + cx
        new_y = F32(2) * zx * zy + cy
        zx, zy = np.where(running, new_x, zx), np.where(running, new_y, zy)
        escaped = running & (np.sqrt(zx * zx + zy * zy) > F32(2))
        itr[escaped] = step
        running &= ~escaped
    shade = F32(1) - itr.astype(F32) / F32(max_iter)
    return unorm8(np.stack([shade, shade, shade, np.ones_like(shade)], axis=-1))


@pytest.mark.parametrize("mode", MODES)
def test_float2_mandelbrot_into_a_byte_image(mode):
    width, height = (96, 64) if mode == "c" else (24, 16)
    image = FakeImage(width, height, 4, "float", np.uint8)
    run(KernelDefinition(image_kernels.mandelbrot, mode=mode), (width, height), image)
    expected = numpy_mandelbrot(width, height, image_kernels.MAX_ITER)
    np.testing.assert_array_equal(image.pixels(), expected)
    assert len(np.unique(expected[..., 0])) > 10


READS = [  # kind, storage dtype, stored values, what the kernel reads
    ("float", np.uint8, [0, 255, 51, 128], [0.0, 1.0, 0.2, F32(128) / F32(255)]),
    ("float", np.uint16, [0, 65535, 13107, 1], [0.0, 1.0, 0.2, F32(1) / F32(65535)]),
    ("float", np.float32, [-1.5, 2.5, 0.0, 7.0], [-1.5, 2.5, 0.0, 7.0]),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("kind", "dtype", "stored", "read"), READS)
def test_float_images_read_as_stored(mode, kind, dtype, stored, read):
    image = FakeImage(4, 1, 2, kind, dtype)
    image.array[:] = np.array(stored * 2, dtype)
    out = FakeBuffer(np.zeros(8, F32))
    run(KernelDefinition(image_kernels.copy_into_floats, mode=mode), (4, 1), image, out)
    np.testing.assert_array_equal(out.array, np.array(read * 2, F32))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("kind", "dtype", "out_dtype"),
    [("int", np.int8, np.int32), ("int", np.int16, np.int32), ("uint", np.uint8, np.uint32)],
)
def test_integer_images_read_and_write_whole_values(mode, kind, dtype, out_dtype):
    image = FakeImage(4, 2, 1, kind, dtype)
    info = np.iinfo(dtype)
    image.array[:] = np.array([info.min, info.max, 0, 1, 2, 3, info.max - 1, 5], dtype)
    out = FakeBuffer(np.zeros(8, out_dtype))
    run(KernelDefinition(image_kernels.copy_into_ints, mode=mode), (4, 2), image, out)
    np.testing.assert_array_equal(out.array, image.array.astype(out_dtype))
    values = FakeBuffer(np.array([300, -1, 7, 0, 1, 2, 3, 4]).astype(out_dtype))
    run(KernelDefinition(image_kernels.write_scalars, mode=mode), (4, 2), values, image)
    np.testing.assert_array_equal(image.array, values.array.astype(dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_float_writes_clamp_and_round_into_normalized_storage(mode, dtype):
    values = np.array([-0.5, 1.5, np.nan, 0.5, 0.2, 1 / 510, 0.998, 1.0], F32)
    image = FakeImage(4, 1, 2, "float", dtype)
    run(
        KernelDefinition(image_kernels.write_pairs, mode=mode),
        (4, 1),
        FakeBuffer(values),
        image,
    )
    if dtype is np.float32:
        np.testing.assert_array_equal(image.array, values)
        return
    scale = np.iinfo(dtype).max
    clamped = np.fmin(np.fmax(values, F32(0)), F32(1)) * F32(scale)
    np.testing.assert_array_equal(image.array, np.floor(clamped.astype(np.float64) + 0.5))
    assert image.array[2] == 0 and image.array[3] == (128 if dtype is np.uint8 else 32768)


@pytest.mark.parametrize("mode", MODES)
def test_captured_int_image(mode, monkeypatch):
    picture = FakeImage(3, 2, 4, "int", np.int32)
    picture.array[:] = np.arange(24)
    monkeypatch.setattr(image_kernels, "picture", picture)
    definition = KernelDefinition(image_kernels.brighten_captured, mode=mode)
    executable = run(definition, (3, 2), 10)
    np.testing.assert_array_equal(picture.array, np.arange(24) + 10)
    assert [(p.name, p.access) for p in executable.buffer_parameters] == [("picture", "read_write")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dx", [1, -1])
def test_coordinates_outside_the_image_stop_the_dispatch(mode, dx):
    image = FakeImage(4, 3, 4, "float", np.float32)
    with pytest.raises(KernelIndexError) as caught:
        run(KernelDefinition(image_kernels.outside, mode=mode), (4, 3), image, dx)
    error = caught.value
    x = 4 if dx == 1 else -1
    thread = (3, 0, 0) if dx == 1 else (0, 0, 0)
    assert error.thread == thread and error.buffer == "image" and error.size == 12
    assert f"writes texel ({x}, 0) of image 'image', which is 4x3" in str(error)
    assert "image.write(coord + int2(dx, 0), float4(1.0))" in str(error)


ERRORS = [
    ("image.write(dispatch_id().xy, float3(1.0))", "cannot write a float3 value into 'image', "
     "an image of float4 texels"),
    ("image.write(dispatch_id().xy, 1.0)", "cannot write a float32 value into 'image', an "
     "image of float4 texels"),
    ("v = image.read(float2(0.0))", "image.read(coord) takes an int2 or uint2 coordinate, got "
     "float2"),
    ("v = image.read(1)", "takes an int2 or uint2 coordinate, got int32"),
    ("v = image.sample(int2(0))", "images have only .read(coord), .write(coord, value) and "
     ".texture_size(), not .sample"),
    ("v = image.texture_size(1)", "takes 0 argument(s), got 1"),
]  # fmt: skip


@pytest.mark.parametrize(("statement", "message"), ERRORS)
def test_image_type_errors(tmp_path, statement, message):
    source = f"from luisa_nb.kernels import *\n\n\ndef kernel_under_test(image):\n    {statement}\n"
    function = load_function(tmp_path, source)
    types = (argument_type(FakeImage(2, 2, 4, "float", np.uint8)),)
    with pytest.raises(KernelCompileError) as caught:
        KernelDefinition(function, mode="python").executable(types)
    assert message in str(caught.value)
    assert "snippet.py:5:" in str(caught.value)
