"""luisa-python programs that read and write Image2D in kernels run on luisa_nb."""

from __future__ import annotations

import numpy as np

import luisa_nb.luisa as luisa
from luisa_nb.luisa.mathtypes import float2, float3, float4
from tests.luisa.references import unorm8

F32 = np.float32


def test_gradient_written_into_a_byte_image(fresh_session):
    luisa.init("cpu")
    width, height = 32, 20
    image = luisa.Image2D(width, height, 4, float, storage="byte")

    @luisa.func
    def fill():
        coord = dispatch_id().xy  # noqa: F821 (luisa-python finds builtins by name)
        size = image.texture_size()
        uv = (float2(coord) + 0.5) / float2(size)
        image.write(coord, float4(uv, 0.5, 1.0))

    fill(dispatch_size=(width, height))
    xs, ys = np.meshgrid(np.arange(width, dtype=F32), np.arange(height, dtype=F32))
    u, v = (xs + F32(0.5)) / F32(width), (ys + F32(0.5)) / F32(height)
    expected = unorm8(np.stack([u, v, np.full_like(u, 0.5), np.ones_like(u)], axis=-1))
    result = image.numpy()
    assert result.shape == (height, width, 4) and result.dtype == np.uint8
    np.testing.assert_array_equal(result, expected)


def test_mandelbrot_into_an_image_argument(fresh_session):
    luisa.init("cpu")
    width, height, max_iter = 64, 48, 40

    @luisa.func
    def mandelbrot(image):
        coord = dispatch_id().xy  # noqa: F821
        c = float2(3.0, 2.0) * float2(coord) / float2(dispatch_size().xy) - float2(2, 1)  # noqa: F821
        z = float2(0)
        itr = 0
        for itr in range(max_iter):  # noqa: B007 (itr is read after the loop)
            z = float2(z.x * z.x - z.y * z.y, 2 * z.x * z.y) + c
            if length(z) > 2:  # noqa: F821
                break
        image.write(coord, float4(float3(1 - itr / max_iter), 1))

    image = luisa.Image2D(width, height, 4, float, storage="byte")
    mandelbrot(image, dispatch_size=(width, height))
    xs, ys = np.meshgrid(np.arange(width, dtype=F32), np.arange(height, dtype=F32))
    cx, cy = F32(3) * xs / F32(width) - F32(2), F32(2) * ys / F32(height) - F32(1)
    zx, zy = np.zeros_like(cx), np.zeros_like(cy)
    itr = np.full(cx.shape, max_iter, np.int32)  # luisa's rules: max_iter after the loop
    running = np.ones(cx.shape, bool)
    for step in range(max_iter):
        new_x, new_y = zx * zx - zy * zy + cx, F32(2) * zx * zy + cy
        zx, zy = np.where(running, new_x, zx), np.where(running, new_y, zy)
        escaped = running & (np.sqrt(zx * zx + zy * zy) > F32(2))
        itr[escaped] = step
        running &= ~escaped
    shade = F32(1) - itr.astype(F32) / F32(max_iter)
    expected = unorm8(np.stack([shade, shade, shade, np.ones_like(shade)], axis=-1))
    np.testing.assert_array_equal(image.numpy(), expected)
