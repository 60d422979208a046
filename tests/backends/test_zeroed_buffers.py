"""A new buffer holds zeros on every local backend, as on luisa-python's CPU backend, even
where its memory was another buffer's a moment ago."""

import gc

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa


@pytest.mark.parametrize("backend", ["cpu", "dx", "metal"])
@pytest.mark.parametrize("nbytes", [4096, 1 << 20])
def test_a_new_buffer_reads_zeros_after_freed_buffers_held_other_bytes(backend, nbytes):
    device = lnb.create_device(backend)
    for _ in range(8):
        used = device.create_buffer(nbytes // 4, np.float32)
        used.fill(7.0)
        used.numpy()
        del used
        gc.collect()
        fresh = device.create_buffer(nbytes // 4, np.float32)
        np.testing.assert_array_equal(fresh.numpy(), np.zeros(nbytes // 4, np.float32))


def test_a_luisa_buffer_and_image_start_as_zeros():
    luisa.init("cpu")
    buffer = luisa.Buffer(100, int)
    np.testing.assert_array_equal(buffer.numpy(), np.zeros(100, np.int32))
    image = luisa.Image2D(4, 3, 4, float)
    np.testing.assert_array_equal(image.numpy(), np.zeros((3, 4, 4), np.float32))
