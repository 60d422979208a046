"""Compiled kernels against numpy in the same run: vecadd 2^24 and mandelbrot 1024^2 x 256,
with and without checks, on a quiet machine and beside one busy process; a memcpy of the
same array size as a memory-bandwidth reference; the cold compile time of a kernel.
vecadd also runs built with ordinary stores instead of streaming ones (see "Streaming
stores" in docs/kernels.md), to show what those gain in the same run, and as hand-written
C (the widest non-temporal stores the CPU has, two OpenMP threads), compiled with the
kernels' compiler and flags: how close the kernel comes to what the machine gives.

    python benchmarks/bench_kernels.py

Timings depend on what else runs: the load average is printed beside each table.
"""

from __future__ import annotations

import ctypes
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from timing import print_table

import luisa_nb as lnb
from luisa_nb.backends.base import aligned_empty
from luisa_nb.kernels.c.emitter import CEmitter
from luisa_nb.kernels.c.toolchain import (
    TIERED_VARIABLE,
    compiler_flags,
    find_compiler,
    finish_background_builds,
)

VECADD_SIZE = 1 << 24
MANDELBROT_SIDE = 1024
MANDELBROT_ITERATIONS = 256
BUSY_SECONDS = 120  # the competing process stops by itself after this long
CHECK_SETTINGS = (False, True, "nan")
ORDINARY_STORES = "ordinary stores"
HAND_WRITTEN = "hand-written C"
HAND_WRITTEN_SOURCE = r"""
#if defined(__x86_64__)
#include <immintrin.h>
#endif
/* z = x + y over n floats (a multiple of 16), all three 64-byte aligned; z written with
   non-temporal stores where the CPU has them, one half per thread. */
void vecadd(const float *x, const float *y, float *z, long n) {
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (long i = 0; i < n; i += 16) {
#if defined(__AVX512F__)
            _mm512_stream_ps(z + i, _mm512_add_ps(_mm512_load_ps(x + i), _mm512_load_ps(y + i)));
#elif defined(__AVX__)
            for (int j = 0; j < 16; j += 8)
                _mm256_stream_ps(z + i + j, _mm256_add_ps(_mm256_load_ps(x + i + j),
                                                          _mm256_load_ps(y + i + j)));
#else
            for (int j = 0; j < 16; ++j) z[i + j] = x[i + j] + y[i + j];
#endif
        }
#if defined(__x86_64__)
        _mm_sfence();
#endif
    }
}
"""


def timings(
    functions: dict[Any, Callable[[], object]], rounds: int, runs_in_a_row: int = 1
) -> dict[Any, tuple[float, float]]:
    """(best, median) in ms of each function over ``rounds`` rounds. A round runs the
    functions in turn, in an order shuffled each round (seeded), so that all see the same
    background load. In a round each function runs once unmeasured, then
    ``runs_in_a_row`` times measured, as in a loop of it alone: a case that writes its
    output with ordinary stores leaves it dirty in the cache, and the next case to run
    pays for writing it back: right after ``np.add``, vecadd took 4-5% longer than right
    after itself, and ``np.add`` ran 1-2% faster after vecadd than after itself."""
    runs: dict[Any, list[float]] = {name: [] for name in functions}
    order = list(functions.items())
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for name, function in order:
            function()
            for _ in range(runs_in_a_row):
                start = time.perf_counter()
                function()
                runs[name].append(time.perf_counter() - start)
    return {name: (min(t) * 1e3, statistics.median(t) * 1e3) for name, t in runs.items()}


def row(case: str, measured: tuple[float, float], reference: float, gigabytes: float = 0.0):
    """A table row; ratio = reference median / this median (higher is faster)."""
    best, median = measured
    bandwidth = gigabytes / (median / 1e3) if gigabytes else ""
    return [case, best, median, bandwidth, reference / median]


def load_average() -> str:
    return "load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


@contextmanager
def ordinary_stores() -> Iterator[None]:
    """Kernels built inside write every buffer with ordinary stores."""
    threshold = CEmitter.streaming_bytes
    CEmitter.streaming_bytes = 1 << 62
    try:
        yield
    finally:
        CEmitter.streaming_bytes = threshold


@contextmanager
def busy_process() -> Iterator[None]:
    """One process spinning on a core; it stops after BUSY_SECONDS even if left behind."""
    spin = f"import time\nend = time.time() + {BUSY_SECONDS}\nwhile time.time() < end: pass"
    process = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.5)  # let the scheduler place it
        yield
    finally:
        process.terminate()
        process.wait()


def aligned_floats(values: np.ndarray) -> np.ndarray:
    """A copy of float32 ``values`` starting on a cache line, as the C loop needs."""
    copy = aligned_empty(values.nbytes).view(np.float32)
    copy[:] = values
    return copy


def hand_written_vecadd(folder: str) -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    """:data:`HAND_WRITTEN_SOURCE` built in ``folder`` with the kernels' compiler and flags."""
    compiler = find_compiler()
    if compiler is None:
        raise SystemExit("bench_kernels needs a C compiler ($CC or cc)")
    source, library = Path(folder, "vecadd.c"), Path(folder, "vecadd.so")
    source.write_text(HAND_WRITTEN_SOURCE)
    flags = compiler_flags(compiler)
    subprocess.run([*compiler, *flags, str(source), "-o", str(library)], check=True)
    function = ctypes.CDLL(str(library)).vecadd
    function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    function.restype = None
    return lambda x, y, z: function(x.ctypes.data, y.ctypes.data, z.ctypes.data, x.size)


class VecaddCase:
    """vecadd 2^24 float32 with each checks setting, numpy's np.add(out=), a memcpy and
    hand-written C."""

    def __init__(self, device: lnb.Device, folder: str) -> None:
        rng = np.random.default_rng(0)
        self.a = aligned_floats(rng.random(VECADD_SIZE, dtype=np.float32))
        self.b = aligned_floats(rng.random(VECADD_SIZE, dtype=np.float32))
        self.out = aligned_floats(np.zeros(VECADD_SIZE, np.float32))
        self.hand_written = hand_written_vecadd(folder)
        self.device = device
        self.x, self.y, self.z = (device.create_buffer(VECADD_SIZE, np.float32) for _ in "xyz")
        self.x.copy_from(self.a)
        self.y.copy_from(self.b, sync=True)
        self.kernels = {checks: self.make_kernel(checks) for checks in CHECK_SETTINGS}
        with ordinary_stores():
            self.kernels[ORDINARY_STORES] = self.make_kernel(False)
            self.run(ORDINARY_STORES)  # built now, while streaming is off

    @staticmethod
    def make_kernel(checks: bool | str):
        @lnb.kernel(checks=checks)
        def vecadd(source_x, source_y, target):
            i = lnb.dispatch_id().x
            target.write(i, source_x.read(i) + source_y.read(i))

        return vecadd

    def run(self, checks: bool | str) -> None:
        self.kernels[checks].dispatch(VECADD_SIZE, self.x, self.y, self.z)
        self.device.default_stream.synchronize()

    def rows(self, settings: tuple[bool | str, ...], rounds: int = 15) -> list[list]:
        gigabytes = 3 * self.a.nbytes / 1e9
        functions = {
            "memcpy": lambda: np.copyto(self.out, self.a),
            "numpy": lambda: np.add(self.a, self.b, out=self.out),
            HAND_WRITTEN: lambda: self.hand_written(self.a, self.b, self.out),
            **{checks: lambda checks=checks: self.run(checks) for checks in settings},
        }
        measured = timings(functions, rounds, runs_in_a_row=3)
        numpy_median = measured["numpy"][1]
        rows = [
            row(
                "memcpy 64 MiB (np.copyto)",
                measured["memcpy"],
                numpy_median,
                2 * self.a.nbytes / 1e9,
            ),
            row("vecadd 2^24 numpy np.add(out=)", measured["numpy"], numpy_median, gigabytes),
            row("vecadd 2^24 hand-written C", measured[HAND_WRITTEN], numpy_median, gigabytes),
        ]
        for checks in settings:
            name = (
                "vecadd 2^24 luisa_nb checks=False, ordinary stores"
                if checks == ORDINARY_STORES
                else f"vecadd 2^24 luisa_nb checks={checks}"
            )
            rows.append(row(name, measured[checks], numpy_median, gigabytes))
        assert np.array_equal(self.z.numpy(), self.a + self.b)
        self.hand_written(self.a, self.b, self.out)
        assert np.array_equal(self.out, self.a + self.b)
        return rows


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


class MandelbrotCase:
    """mandelbrot 1024^2 x 256 with and without checks, and a masked numpy version."""

    def __init__(self, device: lnb.Device) -> None:
        self.device = device
        self.image = device.create_buffer(MANDELBROT_SIDE * MANDELBROT_SIDE, np.int32)
        self.kernels = {checks: self.make_kernel(checks) for checks in (False, True)}

    @staticmethod
    def make_kernel(checks: bool):
        side, iterations = MANDELBROT_SIDE, MANDELBROT_ITERATIONS

        @lnb.kernel(checks=checks)
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

        return mandelbrot

    def run(self, checks: bool) -> None:
        self.kernels[checks].dispatch((MANDELBROT_SIDE, MANDELBROT_SIDE), self.image)
        self.device.default_stream.synchronize()

    def rows(self, repeats: int = 7) -> list[list]:
        side, iterations = MANDELBROT_SIDE, MANDELBROT_ITERATIONS
        numpy_time = timings({"numpy": lambda: numpy_mandelbrot(side, iterations)}, 2)["numpy"]
        measured = timings(
            {checks: lambda checks=checks: self.run(checks) for checks in (False, True)}, repeats
        )
        rows = [row("mandelbrot 1024^2x256 numpy (masked)", numpy_time, numpy_time[1])]
        for checks in (False, True):
            name = f"mandelbrot 1024^2x256 luisa_nb checks={checks}"
            rows.append(row(name, measured[checks], numpy_time[1]))
        return rows


def make_scale(offset: float):
    """A kernel whose C source differs per ``offset`` (a captured constant)."""

    @lnb.kernel
    def scale(target, factor):
        i = lnb.dispatch_id().x
        target.write(i, target.read(i) * factor + offset)

    return scale


def cold_compile_rows(device: lnb.Device) -> list[list]:
    """A new kernel's first dispatch from an empty cache: with the tiered compile (its fast
    build) and without (one optimised build); ratio = one build / tiered (higher is faster).
    """
    rows = []
    buffer = device.create_buffer(16, np.float32)
    saved = {name: os.environ.get(name) for name in ("LUISA_NB_CACHE_DIR", TIERED_VARIABLE)}
    for attempt in range(3):
        elapsed = {}
        for tiered in ("0", "1"):
            with tempfile.TemporaryDirectory() as cache:
                os.environ.update({"LUISA_NB_CACHE_DIR": cache, TIERED_VARIABLE: tiered})
                scale = make_scale(float(attempt) + 0.5 * int(tiered))
                start = time.perf_counter()
                scale.dispatch_async(16, buffer, 2.0)
                elapsed[tiered] = (time.perf_counter() - start) * 1e3
                finish_background_builds()
        rows.append([f"cold compile #{attempt + 1}, one build", elapsed["0"], "", "", ""])
        ratio = elapsed["0"] / elapsed["1"]
        rows.append([f"cold compile #{attempt + 1}, tiered", elapsed["1"], "", "", ratio])
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    return rows


def main() -> None:
    device = lnb.create_device("cpu")
    header = ["case", "best ms", "median ms", "GB/s", "ratio"]
    with tempfile.TemporaryDirectory() as folder:
        vecadd = VecaddCase(device, folder)
    mandelbrot = MandelbrotCase(device)
    print(f"{os.cpu_count()} CPUs; {load_average()}")
    settings = (*CHECK_SETTINGS, ORDINARY_STORES)
    quiet = vecadd.rows(settings) + mandelbrot.rows() + cold_compile_rows(device)
    print_table(
        f"quiet (ratio = numpy median / this median; higher is faster); {load_average()}",
        header,
        quiet,
    )
    with busy_process():
        busy = vecadd.rows((False, True, ORDINARY_STORES)) + mandelbrot.rows()
        print_table(f"beside one busy process; {load_average()}", header, busy)


if __name__ == "__main__":
    main()
