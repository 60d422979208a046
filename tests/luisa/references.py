"""numpy references for luisa-python programs, in float32 as their kernels compute."""

from __future__ import annotations

import io

import numpy as np

F32 = np.float32


def unorm8(values: np.ndarray) -> np.ndarray:
    """Float channels as byte storage keeps them: clamped to [0, 1], scaled, rounded."""
    scaled = np.fmin(np.fmax(values.astype(F32), F32(0)), F32(1)) * F32(255)
    return np.floor(scaled.astype(np.float64) + 0.5).astype(np.uint8)


def mandelbrot_escapes(xs: np.ndarray, ys: np.ndarray, n: int, max_iter: int) -> np.ndarray:
    """At pixels ``(xs, ys)`` of a mandelbrot with ``c = 2 p / n - (2, 1)`` and
    ``z = z*z + c`` from 0, the iteration at which ``length(z) > 20`` first held, or -1."""
    cx = (2 * xs).astype(F32) / F32(n) - F32(2)
    cy = (2 * ys).astype(F32) / F32(n) - F32(1)
    zx, zy = np.zeros_like(cx), np.zeros_like(cy)
    escapes = np.full(cx.shape, -1, np.int32)
    running = np.ones(cx.shape, bool)
    for step in range(max_iter):
        zx, zy = (
            np.where(running, zx * zx - zy * zy + cx, zx),
            np.where(running, F32(2) * zx * zy + cy, zy),
        )
        escaped = running & (np.sqrt(zx * zx + zy * zy) > F32(20))
        escapes[escaped] = step
        running &= ~escaped
    return escapes


def julia(width: int, height: int, t: float) -> np.ndarray:
    """The grey level LuisaCompute's fractal.py paints at time ``t``."""
    ys, xs = np.mgrid[0:height, 0:width]
    c = (F32(-0.8), F32(np.cos(F32(t))) * F32(0.2))
    zx = F32(2) * xs.astype(F32) / F32(height) - F32(2)
    zy = F32(2) * ys.astype(F32) / F32(height) - F32(1)
    iterations = np.zeros(xs.shape, np.int32)
    for _ in range(50):
        running = (np.sqrt(zx * zx + zy * zy) < F32(20)) & (iterations < 50)
        new_x = zx * zx - zy * zy + c[0]
        new_y = zy * zx * F32(2) + c[1]
        zx, zy = np.where(running, new_x, zx), np.where(running, new_y, zy)
        iterations += running
    return F32(1) - iterations.astype(F32) * F32(0.02)


def png_pixels(data: bytes) -> np.ndarray:
    """The ``(height, width, channels)`` uint8 pixels of a PNG file (read with Pillow)."""
    from PIL import Image

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(io.BytesIO(data)))


def aces(color: np.ndarray) -> np.ndarray:
    """ACES tone mapping, as LuisaCompute's examples write it, in float32."""
    a, b, c, d, e = (F32(v) for v in (2.51, 0.03, 2.43, 0.59, 0.14))
    return np.clip((color * (a * color + b)) / (color * (c * color + d) + e), F32(0), F32(1))


def mirrored_uv_display(width: int, height: int) -> np.ndarray:
    """The display image of LuisaCompute's test-bindless.py at ``width`` x ``height``
    (byte storage, (height, width, 4)): a 16x16 byte texture holding ``(uv, 0.5, 1)`` at
    texel centres, point-sampled with mirror addressing at ``(1 - uv) * 2``, tone-mapped."""
    centres = (np.arange(16, dtype=F32) + F32(0.5)) / F32(16)
    texture = np.zeros((16, 16, 4), F32)
    texture[..., 0], texture[..., 1] = centres[None, :], centres[:, None]
    texture[..., 2], texture[..., 3] = 0.5, 1
    texture = unorm8(texture).astype(F32) / F32(255)
    taps = []
    for extent in (width, height):
        uv = (np.arange(extent, dtype=F32) + F32(0.5)) / F32(extent)
        uv = (F32(1) - uv) * F32(2)
        reduced = uv - F32(2) * np.floor(uv * F32(0.5))
        tap = np.minimum(np.floor(reduced * F32(16)).astype(np.int64), 31)
        taps.append(np.where(tap < 16, tap, 31 - tap))
    color = texture[taps[1][:, None], taps[0][None, :], :3]
    display = np.ones((height, width, 4), F32)
    display[..., :3] = aces(color)
    return unorm8(display)
