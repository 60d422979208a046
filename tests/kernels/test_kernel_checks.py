"""Checked kernels: out-of-range indices and non-finite writes stop the launch with an
error naming the kernel, line, thread, index and buffer; ``checks`` settings."""

from __future__ import annotations

import inspect
import math
import mmap
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from luisa_nb.errors import (
    ConfigurationError,
    KernelArgumentError,
    KernelIndexError,
    KernelNonFiniteError,
)
from luisa_nb.kernels import BufferType, KernelDefinition, ScalarType, compiler_available
from luisa_nb.kernels.checks import KernelChecks

from . import checked_kernels
from .helpers import FakeBuffer, run

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
MODES = [pytest.param("c", marks=needs_compiler), "python"]
F32 = BufferType(ScalarType.FLOAT32)
REPOSITORY = Path(__file__).resolve().parents[2]


def line_of(function: object, text: str) -> int:
    """The file line number of the first line of ``function`` that contains ``text``."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def floats(count: int, fill: float = 0.0) -> FakeBuffer:
    return FakeBuffer(np.full(count, fill, np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_read_past_the_end_names_kernel_line_thread_index_and_buffer(mode: str) -> None:
    source, out = floats(10, 1.0), floats(16)
    definition = KernelDefinition(checked_kernels.shifted_copy, mode=mode)
    with pytest.raises(KernelIndexError) as raised:
        run(definition, 16, source, out, 0)
    error = raised.value
    assert (error.kernel, error.buffer, error.index, error.size) == (
        "shifted_copy",
        "source",
        10,
        10,
    )
    assert error.thread == (10, 0, 0)
    assert error.line == line_of(checked_kernels.shifted_copy, "source.read(i)")
    assert "checked_kernels.py" in str(error) and "reads index 10 of buffer 'source'" in str(error)
    assert "which has 10 elements" in str(error)


@pytest.mark.parametrize("mode", MODES)
def test_write_past_the_end_leaves_memory_beyond_untouched(mode: str) -> None:
    backing = np.full(24, -7.0, np.float32)
    out = FakeBuffer(np.zeros(0, np.float32))
    out.array = backing[:16]  # a view: elements 16.. must keep their -7
    definition = KernelDefinition(checked_kernels.shifted_copy, mode=mode)
    with pytest.raises(KernelIndexError) as raised:
        run(definition, 16, floats(16, 3.0), out, 4)
    assert (raised.value.index, raised.value.size, raised.value.buffer) == (16, 16, "out")
    assert raised.value.thread == (12, 0, 0)
    assert "writes index 16" in str(raised.value)
    np.testing.assert_array_equal(backing[16:], -7.0)


@pytest.mark.parametrize("mode", MODES)
def test_negative_index_is_an_error_not_a_wrap(mode: str) -> None:
    out = floats(64)
    definition = KernelDefinition(checked_kernels.grid_store, mode=mode)
    with pytest.raises(KernelIndexError) as raised:
        run(definition, (8, 4), out, 8)
    assert raised.value.thread == (5, 3, 0)
    assert raised.value.index == -1
    assert raised.value.line == line_of(checked_kernels.grid_store, "out.write(index")
    assert out.array[-1] == 0.0  # numpy would have written element 63


@pytest.mark.parametrize("mode", MODES)
def test_index_read_from_a_buffer_is_checked(mode: str) -> None:
    indices = FakeBuffer(np.array([0, 1, 2, 99, 4, 5, 6, 7], np.int32))
    with pytest.raises(KernelIndexError) as raised:
        run(KernelDefinition(checked_kernels.gather, mode=mode), 8, floats(8), indices, floats(8))
    assert (raised.value.thread, raised.value.index, raised.value.buffer) == (
        (3, 0, 0),
        99,
        "source",
    )


@pytest.mark.parametrize("mode", MODES)
def test_check_inside_a_loop(mode: str) -> None:
    definition = KernelDefinition(checked_kernels.looping_sum, mode=mode)
    with pytest.raises(KernelIndexError) as raised:
        run(definition, 200, floats(200, 1.0), floats(200), 4)  # serial: first failure wins
    assert raised.value.thread == (197, 0, 0)
    assert raised.value.index == 200
    assert raised.value.line == line_of(checked_kernels.looping_sum, "source.read(i + k)")


@needs_compiler
def test_first_failing_thread_of_a_large_parallel_dispatch() -> None:
    count = 1 << 19  # above the parallel threshold
    indices = FakeBuffer(np.arange(count, dtype=np.int32))
    indices.array[140000] = count + 5
    source, out = floats(count), floats(count)
    with pytest.raises(KernelIndexError) as raised:
        run(KernelDefinition(checked_kernels.gather, mode="c"), count, source, indices, out)
    assert (raised.value.thread, raised.value.index) == ((140000, 0, 0), count + 5)


@needs_compiler
def test_int64_index_beyond_int32_is_reported_exactly() -> None:
    definition = KernelDefinition(checked_kernels.wide_index, mode="c")
    with pytest.raises(KernelIndexError) as raised:
        run(definition, 2, floats(2), floats(2))
    assert raised.value.index == 3_000_000_000


@needs_compiler
def test_failure_that_does_not_happen_again_on_rerun_is_still_reported() -> None:
    """The block re-runs to find the failing access, but the failing thread's index came
    from a value it overwrote: the error says so instead of naming a wrong access."""
    data = FakeBuffer(np.array([0, 1, 2, 100], np.int32))
    definition = KernelDefinition(checked_kernels.overwrite_then_use, mode="c")
    with pytest.raises(KernelIndexError, match="no thread failed again") as raised:
        run(definition, 4, data, floats(4))
    assert (raised.value.thread, raised.value.line) == ((0, 0, 0), 0)


@needs_compiler
def test_valid_launch_after_a_failed_one() -> None:
    definition = KernelDefinition(checked_kernels.shifted_copy, mode="c")
    with pytest.raises(KernelIndexError):
        run(definition, 9000, floats(8000, 2.0), floats(9000), 0)
    out = floats(9000)
    run(definition, 9000, floats(9000, 2.0), out, 0)
    np.testing.assert_array_equal(out.array, 2.0)


@pytest.mark.parametrize("mode", MODES)
def test_nan_checks_reject_non_finite_writes(mode: str) -> None:
    source = FakeBuffer(np.array([1, 2, 0, 4], np.float32))
    out = floats(4)
    definition = KernelDefinition(checked_kernels.reciprocal, mode=mode)
    with pytest.raises(KernelNonFiniteError) as raised:
        run(definition, 4, source, out, checks="nan")
    error = raised.value
    assert (error.kernel, error.thread, error.index, error.buffer) == (
        "reciprocal",
        (2, 0, 0),
        2,
        "out",
    )
    assert error.value == math.inf
    assert error.line == line_of(checked_kernels.reciprocal, "out.write")
    assert "checks='nan'" in str(error)
    out = floats(4)
    run(definition, 4, source, out, checks=True)  # plain checks allow infinities
    assert out.array[2] == np.inf


@needs_compiler
def test_unchecked_kernel_has_plain_accesses() -> None:
    definition = KernelDefinition(checked_kernels.shifted_copy, mode="c")
    out = floats(16)
    unchecked = run(definition, 16, floats(16, 5.0), out, 0, checks=False)
    np.testing.assert_array_equal(out.array, 5.0)
    types = (F32, F32, ScalarType.INT32)
    checked = definition.executable(types, KernelChecks.BOUNDS)
    assert definition.executable(types, KernelChecks.OFF) is unchecked
    assert checked is not unchecked
    assert "lnb_read_" not in unchecked.source and "lnb_read_float32_int32" in checked.source
    assert [p.count_of for p in checked.scalar_parameters] == [None, 0, 1]
    assert [p.count_of for p in unchecked.scalar_parameters] == [None]


@pytest.mark.parametrize("checks", [1, "NaN", "index", None, 0.5])
def test_checks_setting_is_validated(checks: object) -> None:
    with pytest.raises(ConfigurationError, match="checks="):
        KernelChecks.parse(checks)


@needs_compiler
def test_c_entry_rejects_sizes_it_cannot_represent() -> None:
    executable = KernelDefinition(checked_kernels.shifted_copy, mode="c").executable(
        (F32, F32, ScalarType.INT32), KernelChecks.OFF
    )
    with pytest.raises(KernelArgumentError, match="2\\*\\*31"):
        executable.launch((2**31, 1, 1), [0, 0], [0])
    with pytest.raises(KernelArgumentError):
        executable.launch((2**31 - 1, 2**31 - 1, 2**31 - 1), [0, 0], [0])


GUARDED_READ = """
import ctypes, mmap, sys
import numpy as np
from luisa_nb.errors import KernelFaultError, KernelIndexError
from luisa_nb.kernels import KernelDefinition
from tests.kernels import checked_kernels
from tests.kernels.helpers import FakeBuffer, run

page = mmap.PAGESIZE
region = mmap.mmap(-1, 2 * page)
start = ctypes.addressof(ctypes.c_char.from_buffer(region))
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
assert libc.mprotect(start + page, page, 0) == 0  # the second page faults on any access
count = 1000
source = FakeBuffer(np.zeros(0, np.float32))
source.array = np.frombuffer(region, np.float32, count, page - 4 * count)
name, checks = sys.argv[1], sys.argv[2] == "True"
definition = KernelDefinition(getattr(checked_kernels, name), mode="c")
arguments = (source, FakeBuffer(np.zeros(4096, np.float32)))
arguments += (0,) if name == "shifted_copy" else (8,)
try:
    run(definition, 2048, *arguments, checks=checks)
except KernelIndexError as error:
    print("stopped at", error.index)
except KernelFaultError as error:
    print("faulted at", error.address - (start + page))
"""


@needs_compiler
@pytest.mark.skipif(sys.platform != "linux", reason="uses mprotect through libc")
@pytest.mark.parametrize("name", ["shifted_copy", "looping_sum"])
def test_checked_kernels_never_read_out_of_range_memory(name: str) -> None:
    def read_next_to_a_guard_page(checks: bool) -> subprocess.CompletedProcess:
        command = [sys.executable, "-c", GUARDED_READ, name, str(checks)]
        return subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True)

    checked = read_next_to_a_guard_page(True)
    assert checked.returncode == 0, checked.stderr
    first_word, index = checked.stdout.rsplit(maxsplit=1)
    assert first_word == "stopped at" and int(index) >= 1000  # threads run in parallel
    unchecked = read_next_to_a_guard_page(False)  # the guard page works:
    assert unchecked.returncode == 0, unchecked.stderr
    first_word, offset = unchecked.stdout.rsplit(maxsplit=1)
    assert first_word == "faulted at" and 0 <= int(offset) < mmap.PAGESIZE  # on that page
