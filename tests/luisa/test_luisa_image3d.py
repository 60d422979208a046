"""luisa-python's Image3D on luisa_nb: copies of (volume, height, width, channels)
arrays, and kernels reading and writing texels at int3 or uint3 coordinates."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.errors import CommandFailedError, KernelCompileError, KernelIndexError
from luisa_nb.luisa.mathtypes import float4, int3, uint3
from tests.luisa.references import unorm8
from tests.luisa.running import require_real_luisa, run_python

F32 = np.float32
WIDTH, HEIGHT, VOLUME = 5, 4, 3


@pytest.mark.parametrize(
    ("dtype", "storage", "array_dtype"),
    [(float, None, np.float32), (float, "byte", np.uint8), (int, "short", np.int16)],
)
def test_copies_round_trip(fresh_session, dtype, storage, array_dtype):
    luisa.init("cpu")
    values = np.arange(VOLUME * HEIGHT * WIDTH * 2).reshape(VOLUME, HEIGHT, WIDTH, 2)
    values = (values % 100).astype(array_dtype)
    image = luisa.Image3D(WIDTH, HEIGHT, VOLUME, 2, dtype, storage=storage)
    image.copy_from(values)
    copy = luisa.Image3D.empty(WIDTH, HEIGHT, VOLUME, 2, dtype, storage)
    copy.copy_from(image)
    out = np.zeros_like(values)
    copy.copy_to(out)
    np.testing.assert_array_equal(out, values)
    assert copy.numpy().shape == (VOLUME, HEIGHT, WIDTH, 2)
    if array_dtype != np.int16:  # from_array makes byte, float, int and uint images
        np.testing.assert_array_equal(luisa.image3d(values).numpy(), values)
    assert (copy.width, copy.height, copy.volume, copy.channel) == (WIDTH, HEIGHT, VOLUME, 2)
    np.testing.assert_array_equal(luisa.Image3D.zeros(2, 2, 2, 1).numpy(), np.zeros((2, 2, 2, 1)))


def kernel_source(source, target):
    p = dispatch_id()  # noqa: F821 (luisa-python finds builtins by name)
    texel = source.read(p)
    size = target.texture_size()
    depth = float(p.z) / float(size.z)
    target.write(uint3(p), float4(texel.x, texel.y * 2.0, depth, float(size.x * 100 + size.y)))


@pytest.mark.parametrize("mode", ["c", "python"])
def test_kernels_read_and_write_texels(fresh_session, mode):
    luisa.init("cpu")
    values = np.random.default_rng(7).random((VOLUME, HEIGHT, WIDTH, 2), dtype=F32)
    source = luisa.Image3D.from_array(values)
    target = luisa.Image3D(WIDTH, HEIGHT, VOLUME, 4, float, storage="byte")
    kernel = lnb.kernel(kernel_source, mode=mode)
    luisa.synchronize()
    kernel.dispatch((WIDTH, HEIGHT, VOLUME), source, target, sync=True)
    depth = (np.arange(VOLUME, dtype=F32) / F32(VOLUME))[:, None, None]
    expected = np.stack(
        [
            values[..., 0],
            values[..., 1] * F32(2),
            np.broadcast_to(depth, (VOLUME, HEIGHT, WIDTH)),
            np.full((VOLUME, HEIGHT, WIDTH), 504, F32),
        ],
        axis=-1,
    )
    np.testing.assert_array_equal(target.numpy(), unorm8(expected))


def test_a_texel_outside_stops_the_dispatch(fresh_session):
    luisa.init("cpu")
    image = luisa.Image3D(WIDTH, HEIGHT, VOLUME, 1, int)

    @luisa.func
    def shifted(image):
        p = dispatch_id()  # noqa: F821
        image.write(p + int3(0, 0, 1), 7)

    shifted(image, dispatch_size=(WIDTH, HEIGHT, VOLUME))
    with pytest.raises(CommandFailedError, match=r"texel \(0, 0, 3\).*5x4x3") as caught:
        luisa.synchronize()
    error = caught.value.failures[0][2]
    assert isinstance(error, KernelIndexError)
    assert error.index == 3 * HEIGHT * WIDTH and error.size == VOLUME * HEIGHT * WIDTH


def test_a_2d_coordinate_is_a_compile_error(fresh_session):
    luisa.init("cpu")
    image = luisa.Image3D(2, 2, 2, 1, float)

    @luisa.func
    def flat(image):
        image.write(dispatch_id().xy, 1.0)  # noqa: F821

    with pytest.raises(KernelCompileError, match="int3 or uint3 coordinate, got uint2"):
        flat(image, dispatch_size=(2, 2))


def test_the_trace_keeps_the_shape(fresh_session):
    luisa.init("cpu")
    with lnb.trace() as trace:
        image = luisa.Image3D(WIDTH, HEIGHT, VOLUME, 4, float)
        image.copy_from(np.ones((VOLUME, HEIGHT, WIDTH, 4), F32))
        luisa.synchronize()
    assert tuple(trace.buffers[image.id].image) == (VOLUME, HEIGHT, WIDTH, 4)


def test_real_luisa_cannot_make_an_image3d():
    """luisa-python 0.3.7's Image3D constructor reads a missing attribute, so no kernel
    there can use one: luisa_nb's are compared with numpy only."""
    require_real_luisa()
    program = (
        "import luisa\n"
        "luisa.init('cpu', support_gui=False)\n"
        "try:\n"
        "    luisa.Image3D(4, 4, 4, 1, float)\n"
        "except AttributeError as error:\n"
        "    print('AttributeError', error)\n"
    )
    assert "AttributeError" in run_python("-c", program)
