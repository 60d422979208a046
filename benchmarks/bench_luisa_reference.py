"""luisa_nb's CPU backend beside the real LuisaCompute CPU backend, in one process.

    LUISA_CLANG_PATH=$(which clang++) python benchmarks/bench_luisa_reference.py

Needs `pip install luisa-python` (Python 3.11 wheels) and Debian's clang and libvulkan1;
prints why and exits when they are missing. Compares vecadd 2^24 float32 (with numpy
np.add(out=) as the common reference) and the cost per tiny dispatch, each submitted
on its own as luisa-python's `kernel(..., dispatch_size=n)` does.
"""

from __future__ import annotations

import sys

import numpy as np
from timing import best_of, print_table

import luisa_nb as lnb

SIZE = 1 << 24
TINY_COUNT = 10_000


def luisa_rows(a: np.ndarray, b: np.ndarray) -> list[list[object]]:
    import luisa

    luisa.init("cpu", support_gui=False)
    x = luisa.Buffer(SIZE, dtype=float)
    y = luisa.Buffer(SIZE, dtype=float)
    z = luisa.Buffer(SIZE, dtype=float)
    x.copy_from(a)
    y.copy_from(b)

    @luisa.func
    def vecadd(buf_z):
        tid = dispatch_id().x  # noqa: F821  (luisa-python resolves builtins by name)
        buf_z.write(tid, x.read(tid) + y.read(tid))

    @luisa.func
    def tiny(target):
        target.write(dispatch_id().x, 1.0)  # noqa: F821

    small = luisa.Buffer(16, dtype=float)

    def run_vecadd():
        vecadd(z, dispatch_size=SIZE)
        luisa.synchronize()

    def run_tiny():
        for _ in range(TINY_COUNT):
            tiny(small, dispatch_size=1)
        luisa.synchronize()

    vecadd_time = best_of(run_vecadd, 5)
    out = np.empty(SIZE, np.float32)
    z.copy_to(out)
    assert np.array_equal(out, a + b)
    return [["real LuisaCompute cpu", vecadd_time, best_of(run_tiny, 3) / TINY_COUNT]]


def luisa_nb_rows(a: np.ndarray, b: np.ndarray) -> list[list[object]]:
    device = lnb.create_device("cpu")
    x = device.create_buffer(SIZE, np.float32)
    y = device.create_buffer(SIZE, np.float32)
    z = device.create_buffer(SIZE, np.float32)
    x.copy_from(a)
    y.copy_from(b)
    small = device.create_buffer(16, np.float32)

    @lnb.kernel
    def vecadd(buf_z):
        tid = lnb.dispatch_id().x
        buf_z.write(tid, x.read(tid) + y.read(tid))

    @lnb.kernel
    def tiny(target):
        target.write(lnb.dispatch_id().x, 1.0)

    stream = device.default_stream

    def run_vecadd():
        vecadd(z, dispatch_size=SIZE)
        stream.synchronize()

    def run_tiny():
        for _ in range(TINY_COUNT):
            tiny(small, dispatch_size=1)
        stream.synchronize()

    vecadd_time = best_of(run_vecadd, 5)
    assert np.array_equal(z.numpy(), a + b)
    return [["luisa_nb cpu", vecadd_time, best_of(run_tiny, 3) / TINY_COUNT]]


def main() -> int:
    try:
        import luisa  # noqa: F401
    except ImportError as error:
        print(f"real LuisaCompute is not importable ({error}); pip install luisa-python")
        return 0
    rng = np.random.default_rng(0)
    a = rng.random(SIZE, dtype=np.float32)
    b = rng.random(SIZE, dtype=np.float32)
    out = np.empty_like(a)
    numpy_time = best_of(lambda: np.add(a, b, out=out), 10)
    rows = [["numpy np.add(out=)", numpy_time, None]]
    rows += luisa_nb_rows(a, b) + luisa_rows(a, b)
    print_table(
        "vecadd 2^24 float32 and tiny dispatches (best of runs)",
        ["runtime", "vecadd ms", "vecadd vs numpy", "µs per tiny dispatch"],
        [
            [name, t * 1e3, numpy_time / t, "" if tiny is None else tiny * 1e6]
            for name, t, tiny in rows
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
