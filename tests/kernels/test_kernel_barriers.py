"""``sync_block()`` inside loops and branches, in C and in Python mode: threads pause at
a barrier until their block got there; threads of a block at different barriers stop
the dispatch."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import KernelBarrierError, KernelCompileError
from luisa_nb.kernels import KernelDefinition, argument_type, compiler_available

from . import block_kernels
from .helpers import FakeBuffer, load_function, run

MODES = [
    "python",
    pytest.param("c", marks=pytest.mark.skipif(not compiler_available(), reason="no C compiler")),
]
F32 = np.float32


@pytest.mark.parametrize("mode", MODES)
def test_a_barrier_in_a_while_loop_reduces_each_block(mode) -> None:
    values = np.random.default_rng(3).integers(-50, 50, 256).astype(F32)
    sums = FakeBuffer(np.zeros(4, F32))
    run(KernelDefinition(block_kernels.block_reduction, mode=mode), 256, FakeBuffer(values), sums)
    np.testing.assert_array_equal(sums.array, values.reshape(4, 64).sum(axis=1))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("steps", [0, 3, 5])
def test_barriers_in_a_for_loop_and_a_branch_scan_each_block(mode, steps) -> None:
    values = np.arange(1, 71, dtype=F32)  # 70 threads: the third block has 6
    out = FakeBuffer(np.zeros(70, F32))
    run(KernelDefinition(block_kernels.prefix_scan, mode=mode), 70, FakeBuffer(values), out, steps)
    expected = values.copy()
    for start in range(0, 70, 32):
        block = values[start : start + 32]
        for step in range(steps):  # the scan after `steps` doubling steps
            offset = 1 << step
            shifted = np.zeros_like(block)
            shifted[offset:] = block[: max(block.size - offset, 0)]
            block = block + shifted
        expected[start : start + 32] = block
    np.testing.assert_array_equal(out.array, expected)
    if steps == 5:
        np.testing.assert_array_equal(out.array[:32], np.cumsum(values[:32]))


@pytest.mark.parametrize("mode", MODES)
def test_threads_of_a_block_at_different_barriers_stop_the_dispatch(mode) -> None:
    out = FakeBuffer(np.zeros(8, F32))
    with pytest.raises(KernelBarrierError) as caught:
        run(KernelDefinition(block_kernels.diverging_barriers, mode=mode), 8, out)
    error = caught.value
    first = block_kernels.diverging_barriers.__code__.co_firstlineno
    assert error.lines == (first + 4, first + 6)
    assert error.block == (0, 0, 0)
    message = str(error)
    assert "threads of block (0, 0, 0) paused at different sync_block() calls" in message
    assert f"block_kernels.py:{first + 4}: sync_block()" in message
    assert f"block_kernels.py:{first + 6}: sync_block()" in message
    assert not out.array.any()


def test_a_barrier_in_a_callable_is_a_compile_error(tmp_path) -> None:
    source = """\
import luisa_nb as lnb
from luisa_nb.kernels import dispatch_id, sync_block

@lnb.kernel
def wait():
    sync_block()

def kernel(out):
    wait()
    out.write(dispatch_id().x, 1.0)
"""
    function = load_function(tmp_path, source, "kernel")
    out = FakeBuffer(np.zeros(1, F32))
    with pytest.raises(KernelCompileError, match="sync_block\\(\\) in a kernel's body, not in"):
        KernelDefinition(function, mode="python").executable((argument_type(out),))
