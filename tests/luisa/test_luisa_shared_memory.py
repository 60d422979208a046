"""Block-shared arrays (luisa-python's SharedArrayType), sync_block(), thread_id() and
block_id() on luisa_nb, in C and in Python mode, against numpy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.errors import KernelCompileError
from luisa_nb.luisa.mathtypes import int3
from tests.luisa.running import environment, require_real_luisa, run_on_luisa_nb

PROGRAM = Path(__file__).parent / "programs" / "shared_memory.py"
F32 = np.float32
MODES = ["c", "python"]
Tile = luisa.SharedArrayType(64, float)
Counts = luisa.SharedArrayType(4, int)


def printed(output: str, label: str) -> np.ndarray:
    line = next(line for line in output.splitlines() if line.startswith(label + " "))
    return np.asarray(line.split()[1:], np.float64)


def test_the_program_matches_numpy(fresh_session, capsys):
    run_on_luisa_nb(PROGRAM, "cpu")
    output = capsys.readouterr().out
    values = np.arange(256, dtype=F32) * F32(0.5) + F32(1)
    expected = values.reshape(4, 64)[:, ::-1].reshape(-1) * F32(2)
    np.testing.assert_array_equal(printed(output, "reversed"), expected)
    grid = values.reshape(16, 16)  # [y, x]
    sums = grid.reshape(4, 4, 2, 8).sum(axis=(1, 3))  # blocks of 8 x 4: [block y, block x]
    np.testing.assert_array_equal(printed(output, "sums"), sums.reshape(-1))


def test_real_luisa_cannot_compile_shared_arrays_on_its_cpu_backend():
    """luisa-python 0.3.7's CPU backend emits code that does not compile for a shared
    array, so luisa_nb's results are checked against numpy."""
    require_real_luisa()
    done = subprocess.run(
        [sys.executable, str(PROGRAM), "cpu"],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode != 0 and "compile failed" in done.stderr


def rotate(source, target):
    set_block_size(64, 1, 1)  # noqa: F821 (luisa-python finds builtins by name)
    tile = Tile()
    t = thread_id().x  # noqa: F821
    tile[t] = source.read(dispatch_id().x)  # noqa: F821
    sync_block()  # noqa: F821
    first = tile[(t + 1) % 64]
    sync_block()  # noqa: F821
    tile[t] = first * 10.0
    sync_block()  # noqa: F821
    target.write(dispatch_id().x, tile[(t + 1) % 64] + float(block_id().x))  # noqa: F821


@pytest.mark.parametrize("mode", MODES)
def test_threads_see_each_others_writes_after_each_barrier(fresh_session, mode):
    luisa.init("cpu")
    values = np.arange(160, dtype=F32)  # two full blocks and a partial one of 32 threads
    source = luisa.Buffer.from_array(values)
    target = luisa.Buffer(160, float)
    kernel = lnb.kernel(rotate, mode=mode)
    luisa.synchronize()
    kernel.dispatch(160, source, target, sync=True)
    expected = np.empty(160, F32)
    for block in range(3):
        start = block * 64
        tile = np.zeros(64, F32)
        count = min(64, 160 - start)
        tile[:count] = values[start : start + count]
        tile = np.roll(tile, -1) * F32(10)  # every thread wrote, partial or not
        tile[count:] = 0 if count < 64 else tile[count:]
        shifted = np.roll(tile, -1)
        expected[start : start + count] = shifted[:count] + F32(block)
    np.testing.assert_array_equal(target.numpy(), expected)


def counts(out):
    set_block_size(4, 2, 1)  # noqa: F821
    seen = Counts()
    t = thread_id()  # noqa: F821
    if t.y == 1:
        return
    seen[t.x] = t.x + 1
    sync_block()  # noqa: F821
    total = seen[0] + seen[1] + seen[2] + seen[3]
    b = block_id()  # noqa: F821
    out.write(dispatch_id().y * 8 + dispatch_id().x, total * 100 + b.x * 10 + b.y)  # noqa: F821


@pytest.mark.parametrize("mode", MODES)
def test_threads_that_return_skip_the_rest(fresh_session, mode):
    luisa.init("cpu")
    out = luisa.Buffer.from_array(np.full(8 * 4, -1, np.int32))
    kernel = lnb.kernel(counts, mode=mode)
    luisa.synchronize()
    kernel.dispatch((8, 4), out, sync=True)
    expected = np.full((4, 8), -1, np.int32)
    for y in range(0, 4, 2):  # rows with thread_id().y == 1 returned
        for x in range(8):
            expected[y, x] = 10 * 100 + (x // 4) * 10 + y // 2
    np.testing.assert_array_equal(out.numpy().reshape(4, 8), expected)


def ids(out):
    set_block_size(4, 2, 2)  # noqa: F821
    p = dispatch_id()  # noqa: F821
    t, b = thread_id(), block_id()  # noqa: F821
    index = (p.z * 6 + p.y) * 10 + p.x
    out.write(index, int3(t.x * 100 + t.y * 10 + t.z, b.x * 100 + b.y * 10 + b.z, 0))


@pytest.mark.parametrize("mode", MODES)
def test_thread_and_block_ids_follow_the_block_size(fresh_session, mode):
    luisa.init("cpu")
    out = luisa.Buffer(10 * 6 * 3, int3)
    kernel = lnb.kernel(ids, mode=mode)
    kernel.dispatch((10, 6, 3), out, sync=True)
    z, y, x = np.meshgrid(np.arange(3), np.arange(6), np.arange(10), indexing="ij")
    thread = (x % 4) * 100 + (y % 2) * 10 + z % 2
    block = (x // 4) * 100 + (y // 2) * 10 + z // 2
    result = out.numpy().view(np.int32).reshape(3, 6, 10, 4)
    np.testing.assert_array_equal(result[..., 0], thread)
    np.testing.assert_array_equal(result[..., 1], block)


def test_threads_that_skip_a_barrier_in_a_branch_finish(fresh_session):
    """Thread 0 skips the barrier and ends; the others wait there for each other only,
    as threads that exited do on a GPU."""
    luisa.init("cpu")
    out = luisa.Buffer(4, int)

    @luisa.func
    def nested(out):
        i = dispatch_id().x  # noqa: F821
        if i > 0:
            sync_block()  # noqa: F821
        out.write(i, i * 10)

    nested(out, dispatch_size=4)
    np.testing.assert_array_equal(out.numpy(), [0, 10, 20, 30])


def test_a_shared_array_is_made_once(fresh_session):
    luisa.init("cpu")
    out = luisa.Buffer(4, float)

    @luisa.func
    def twice(out):
        tile = Tile()
        tile = Tile()
        out.write(dispatch_id().x, tile[0])  # noqa: F821

    with pytest.raises(KernelCompileError, match="'tile' names a shared array"):
        twice(out, dispatch_size=4)


def test_the_cuda_emitter_gives_shared_memory_and_barriers(fresh_session):
    from luisa_nb.kernels import argument_type
    from luisa_nb.kernels.checks import KernelChecks
    from luisa_nb.kernels.cuda.emitter import CudaEmitter
    from luisa_nb.kernels.definition import KernelDefinition

    luisa.init("cpu")
    buffers = [luisa.Buffer(64, float) for _ in range(2)]
    types = tuple(argument_type(b) for b in buffers)
    executable = KernelDefinition(rotate, mode="c").executable(types, KernelChecks.BOUNDS)
    source = CudaEmitter(executable.kernel, KernelChecks.BOUNDS).emit()
    assert "__shared__ lnb_rotate_shared lnb_shared;" in source
    assert "__syncthreads();" in source
