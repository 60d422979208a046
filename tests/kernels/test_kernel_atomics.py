"""Buffer atomics (luisa-python's ``atomic_*`` methods): exact under OpenMP in C, a plain
read-modify-write in Python mode, the old value returned, indices checked."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import KernelCompileError, KernelIndexError
from luisa_nb.kernels import (
    KernelDefinition,
    argument_type,
    compiler_available,
    dtype_of,
    float3,
)

from . import atomic_kernels
from .helpers import FakeBuffer, load_function, run

MODES = ["python", pytest.param("c", marks=pytest.mark.skipif(
    not compiler_available(), reason="no C compiler"))]  # fmt: skip
PARALLEL = 1 << 18  # C kernels with atomics run on OpenMP threads from 256 threads on


def threads(mode: str) -> int:
    """Enough threads to run in parallel in C; fewer in Python mode (one call each)."""
    return PARALLEL if mode == "c" else 2048


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("checks", [True, False])
def test_histogram_counts_are_exact(mode, checks):
    n = threads(mode)
    values = FakeBuffer(np.random.default_rng(1).integers(0, 1000, n).astype(np.int32))
    counts = FakeBuffer(np.zeros(16, np.int32))
    executable = run(
        KernelDefinition(atomic_kernels.histogram, mode=mode), n, values, counts, checks=checks
    )
    np.testing.assert_array_equal(counts.array, np.bincount(values.array % 16, minlength=16))
    access = {p.name: p.access for p in executable.buffer_parameters}
    assert access == {"values": "read", "counts": "read_write"}


@pytest.mark.parametrize("mode", MODES)
def test_float_sum_min_and_max(mode):
    n = threads(mode)
    rng = np.random.default_rng(2)
    # Multiples of 1/4 below 2**10: every partial sum is exact in float32, in any order.
    data = (rng.integers(-4096, 4096, n) / 4).astype(np.float32)
    values = FakeBuffer(data)
    totals = FakeBuffer(np.array([0, 0, np.inf, -np.inf], np.float32))
    run(KernelDefinition(atomic_kernels.float_reductions, mode=mode), n, values, totals)
    expected = [data.sum(dtype=np.float64), -data.sum(dtype=np.float64), data.min(), data.max()]
    np.testing.assert_array_equal(totals.array, np.array(expected, np.float32))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_integer_reductions(mode, dtype):
    n = threads(mode)
    info = np.iinfo(dtype)
    data = np.random.default_rng(3).integers(0, min(info.max, 2**40), n).astype(dtype)
    values = FakeBuffer(data)
    start = np.array([info.max, info.min, info.max, 0, 0, 0], dtype)
    totals = FakeBuffer(start.copy())
    run(KernelDefinition(atomic_kernels.int_reductions, mode=mode), n, values, totals)
    xor = np.bitwise_xor.reduce(data)
    with np.errstate(over="ignore"):
        sub = np.zeros(1, dtype) - data.sum(dtype=dtype)
    expected = [data.min(), data.max(), np.bitwise_and.reduce(data), np.bitwise_or.reduce(data)]
    np.testing.assert_array_equal(totals.array, np.array([*expected, xor, sub[0]], dtype))


@pytest.mark.parametrize("mode", MODES)
def test_each_atomic_returns_the_old_value(mode):
    n = 64
    rng = np.random.default_rng(4)
    cells = rng.integers(-50, 50, (n, 9)).astype(np.int32)
    cells[::2, 1] = 5  # compare_exchange(…, 5, v) succeeds on even threads
    operands = rng.integers(-50, 50, n).astype(np.int32)
    cell_buffer, olds = FakeBuffer(cells.ravel()), FakeBuffer(np.zeros(n * 9, np.int32))
    run(
        KernelDefinition(atomic_kernels.old_values, mode=mode),
        n,
        cell_buffer,
        FakeBuffer(operands),
        olds,
    )
    np.testing.assert_array_equal(olds.array, cells.ravel())
    v = operands
    after = np.stack(
        [
            v,
            np.where(cells[:, 1] == 5, v, cells[:, 1]),
            cells[:, 2] + v,
            cells[:, 3] - v,
            cells[:, 4] & v,
            cells[:, 5] | v,
            cells[:, 6] ^ v,
            np.minimum(cells[:, 7], v),
            np.maximum(cells[:, 8], v),
        ],
        axis=1,
    )
    np.testing.assert_array_equal(cell_buffer.array.reshape(n, 9), after)


@pytest.mark.parametrize("mode", MODES)
def test_compare_exchange_lets_exactly_one_thread_claim(mode):
    n = threads(mode)
    slot, winners = FakeBuffer(np.array([-1], np.int32)), FakeBuffer(np.zeros(1, np.int32))
    run(KernelDefinition(atomic_kernels.first_claim, mode=mode), n, slot, winners)
    assert winners.array[0] == 1
    assert 0 <= slot.array[0] < n


@pytest.mark.parametrize("mode", MODES)
def test_float_compare_exchange_compares_bits(mode):
    cells = FakeBuffer(np.array([0.0, -0.0, 2.0, np.nan], np.float32))
    run(KernelDefinition(atomic_kernels.float_compare_exchange, mode=mode), 4, cells)
    np.testing.assert_array_equal(cells.array, np.array([1.5, -0.0, 2.0, np.nan], np.float32))
    assert np.signbit(cells.array[1])


@pytest.mark.parametrize("mode", MODES)
def test_atomic_index_is_checked(mode):
    counts = FakeBuffer(np.zeros(8, np.int32))
    definition = KernelDefinition(atomic_kernels.out_of_range, mode=mode)
    with pytest.raises(KernelIndexError) as caught:
        run(definition, 8, counts, 4)
    error = caught.value
    assert (error.index, error.size, error.buffer, error.thread) == (8, 8, "counts", (4, 0, 0))
    assert "writes index 8 of buffer 'counts'" in str(error)
    assert "counts.atomic_fetch_add(i + n, 1)" in str(error)
    np.testing.assert_array_equal(counts.array, [0, 0, 0, 0, 1, 1, 1, 1])


@pytest.mark.parametrize("mode", MODES)
def test_operands_with_atomics_run_left_to_right(mode):
    counts, out = FakeBuffer(np.zeros(1, np.int32)), FakeBuffer(np.zeros(1, np.int32))
    run(KernelDefinition(atomic_kernels.sum_in_expression, mode=mode), 1, counts, out)
    assert (counts.array[0], out.array[0]) == (2, 0 - 1 + 1)


ERRORS = [
    ("floats.atomic_fetch_and(0, 1)", "needs a buffer of integers, but 'floats' is a buffer of "
     "float32"),
    ("vectors.atomic_fetch_add(0, 1)", "needs a buffer of int, uint or float elements, but "
     "'vectors' is a buffer of float3"),
    ("ints.atomic_fetch_add(0, 1.5)", "value is a float32 value but 'ints' is a buffer of int32"),
    ("ints.atomic_compare_exchange(0, 1)", "takes 3 arguments, got 2"),
    ("ints.atomic_fetch_add(0.5, 1)", "buffer index must be an integer, got float32"),
    ("ints.atomic_fetch_nand(0, 1)", "(.atomic_fetch_add(i, v), ...), not .atomic_fetch_nand"),
]  # fmt: skip


@pytest.mark.parametrize(("statement", "message"), ERRORS)
def test_atomic_type_errors(tmp_path, statement, message):
    source = f"def kernel_under_test(ints, floats, vectors):\n    {statement}\n"
    function = load_function(tmp_path, source)
    buffers = (
        FakeBuffer(np.zeros(2, np.int32)),
        FakeBuffer(np.zeros(2, np.float32)),
        FakeBuffer(np.zeros(2, dtype_of(float3))),
    )
    types = tuple(argument_type(b) for b in buffers)
    with pytest.raises(KernelCompileError) as caught:
        KernelDefinition(function, mode="python").executable(types)
    assert message in str(caught.value)
    assert "snippet.py:2:" in str(caught.value)
