"""numpy references for luisa-python programs, in float32 as their kernels compute."""

from __future__ import annotations

import struct
import zlib

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
    """The ``(height, width, channels)`` uint8 pixels of a PNG that luisa_nb wrote: one
    IDAT chunk, 8 bits, every row filtered with type 0 (none), which it checks."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert depth == 8
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[colour]
    start = data.index(b"IDAT") + 4
    (length,) = struct.unpack(">I", data[start - 8 : start - 4])
    rows = np.frombuffer(zlib.decompress(data[start : start + length]), np.uint8)
    rows = rows.reshape(height, 1 + width * channels)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, channels)
