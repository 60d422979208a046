"""Compiled kernels against numpy in the same run: vecadd 2^24, mandelbrot 1024^2 x 256,
and the cold compile time of a kernel.

    python benchmarks/bench_kernels.py
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
from timing import best_of, print_table

import luisa_nb as lnb

VECADD_SIZE = 1 << 24
MANDELBROT_SIDE = 1024
MANDELBROT_ITERATIONS = 256


def vecadd_rows(device):
    a = np.random.default_rng(0).random(VECADD_SIZE, dtype=np.float32)
    b = np.random.default_rng(1).random(VECADD_SIZE, dtype=np.float32)
    out = np.empty_like(a)
    x = device.create_buffer(VECADD_SIZE, np.float32)
    y = device.create_buffer(VECADD_SIZE, np.float32)
    z = device.create_buffer(VECADD_SIZE, np.float32)
    x.copy_from(a)
    y.copy_from(b, sync=True)

    @lnb.kernel
    def vecadd(target):
        i = lnb.dispatch_id().x
        target.write(i, x.read(i) + y.read(i))

    stream = device.default_stream

    def run_kernel():
        vecadd.dispatch(VECADD_SIZE, z)
        stream.synchronize()

    numpy_time = best_of(lambda: np.add(a, b, out=out), 10)
    kernel_time = best_of(run_kernel, 10)
    assert np.array_equal(z.numpy(), a + b)
    gigabytes = 3 * a.nbytes / 1e9
    return [
        ["vecadd 2^24 numpy np.add(out=)", numpy_time * 1e3, gigabytes / numpy_time, 1.0],
        [
            "vecadd 2^24 luisa_nb cpu",
            kernel_time * 1e3,
            gigabytes / kernel_time,
            numpy_time / kernel_time,
        ],
    ]


def numpy_mandelbrot(side: int, iterations: int) -> np.ndarray:
    ys, xs = np.mgrid[0:side, 0:side].astype(np.float32)
    c = (xs / side * 3.0 - 2.0) + 1j * (ys / side * 3.0 - 1.5)
    c = c.astype(np.complex64).reshape(-1)
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, np.int32)
    alive = np.arange(c.size)
    for _ in range(iterations):
        z[alive] = z[alive] * z[alive] + c[alive]
        inside = np.abs(z[alive]) <= 2.0
        counts[alive[inside]] += 1
        alive = alive[inside]
    return counts


def mandelbrot_rows(device):
    side, iterations = MANDELBROT_SIDE, MANDELBROT_ITERATIONS
    image = device.create_buffer(side * side, np.int32)

    @lnb.kernel
    def mandelbrot(out):
        p = lnb.dispatch_id()
        cx = float(p.x) / side * 3.0 - 2.0
        cy = float(p.y) / side * 3.0 - 1.5
        zx = 0.0
        zy = 0.0
        n = 0
        while n < iterations:
            t = zx * zx - zy * zy + cx
            zy = 2.0 * zx * zy + cy
            zx = t
            if zx * zx + zy * zy > 4.0:
                break
            n += 1
        out.write(p.y * side + p.x, n)

    def run_kernel():
        mandelbrot.dispatch((side, side), image)
        device.default_stream.synchronize()

    numpy_time = best_of(lambda: numpy_mandelbrot(side, iterations), 2)
    kernel_time = best_of(run_kernel, 5)
    return [
        ["mandelbrot 1024^2x256 numpy", numpy_time * 1e3, "", 1.0],
        ["mandelbrot 1024^2x256 luisa_nb cpu", kernel_time * 1e3, "", numpy_time / kernel_time],
    ]


def make_scale(offset: float):
    """A kernel whose C source differs per ``offset`` (a captured constant)."""

    @lnb.kernel
    def scale(target, factor):
        i = lnb.dispatch_id().x
        target.write(i, target.read(i) * factor + offset)

    return scale


def cold_compile_rows(device):
    rows = []
    buffer = device.create_buffer(16, np.float32)
    for attempt in range(3):
        with tempfile.TemporaryDirectory() as cache:
            os.environ["LUISA_NB_CACHE_DIR"] = cache
            scale = make_scale(float(attempt))
            start = time.perf_counter()
            scale.dispatch_async(16, buffer, 2.0)
            elapsed = time.perf_counter() - start
        rows.append([f"cold compile #{attempt + 1} (empty cache)", elapsed * 1e3, "", ""])
    return rows


def main() -> None:
    device = lnb.create_device("cpu")
    rows = vecadd_rows(device) + mandelbrot_rows(device) + cold_compile_rows(device)
    print_table(
        "kernels (best of runs; ratio = reference time / this time, higher is faster)",
        ["case", "ms", "GB/s", "ratio"],
        rows,
    )


if __name__ == "__main__":
    main()
