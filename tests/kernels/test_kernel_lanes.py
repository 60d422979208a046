"""Threads with loops run as lanes of a group (``luisa_nb/kernels/c/lanes.py``): the same
bytes as one thread at a time, the same first failing thread, and which kernels qualify."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import KernelIndexError
from luisa_nb.kernels import KernelDefinition, argument_type
from luisa_nb.kernels.c.emitter import CEmitter
from luisa_nb.kernels.c.lanes import runs_in_lanes
from luisa_nb.kernels.c.toolchain import TIERED_VARIABLE, compiler_available

from . import lane_kernels, sample_kernels
from .helpers import FakeBuffer, run
from .test_kernel_codegen import emitter_of

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")


@pytest.fixture(autouse=True)
def optimised_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lanes run only in optimised builds: no tiered compile's fast build first."""
    monkeypatch.setenv(TIERED_VARIABLE, "0")


def launch(function, size, arguments, lanes: bool, monkeypatch: pytest.MonkeyPatch):
    """``function`` run on copies of ``arguments``, as lanes or one thread at a time; the
    buffers afterwards and the executable's C source."""
    with monkeypatch.context() as patch:
        if not lanes:
            patch.setattr(CEmitter, "lane_width", 0)
        copies = [FakeBuffer(a.array.copy()) if isinstance(a, FakeBuffer) else a for a in arguments]
        executable = run(KernelDefinition(function, mode="c"), size, *copies)
    assert executable.tier == "optimised"
    return [a.array for a in copies if isinstance(a, FakeBuffer)], executable.source


CASES = {
    "escape_time": (
        lane_kernels.escape_time,
        (45, 7),  # rows of 45 threads: a full group and a partial one
        lambda: [FakeBuffer(np.zeros(45 * 7, np.float32)), 60, np.float32(0.07)],
    ),
    "every_exit": (
        lane_kernels.every_exit,
        77,
        lambda: [
            FakeBuffer(np.zeros(77, np.float32)),
            FakeBuffer(np.arange(77, dtype=np.int32) * 37 % 23 - 11),
            40,
        ],
    ),
    "control_flow": (
        sample_kernels.control_flow,
        70,
        lambda: [FakeBuffer(np.zeros(70, np.int32)), 23],
    ),
    "mandelbrot": (
        sample_kernels.mandelbrot,
        (50, 20),
        lambda: [FakeBuffer(np.zeros(1000, np.int32)), 50, 20, 80],
    ),
}


@needs_compiler
@pytest.mark.parametrize("case", sorted(CASES))
def test_lanes_give_the_bytes_of_one_thread_at_a_time(case, monkeypatch):
    function, size, make_arguments = CASES[case]
    arguments = make_arguments()
    in_lanes, lanes_source = launch(function, size, arguments, True, monkeypatch)
    one_by_one, thread_source = launch(function, size, arguments, False, monkeypatch)
    assert "_lanes(" in lanes_source and "_lanes(" not in thread_source
    for lane_result, thread_result in zip(in_lanes, one_by_one, strict=True):
        assert lane_result.tobytes() == thread_result.tobytes()
    assert any(np.any(result != 0) for result in in_lanes)


@needs_compiler
def test_every_exit_matches_python_mode():
    function, size, make_arguments = CASES["every_exit"]
    results = {}
    for mode in ("c", "python"):
        arguments = make_arguments()
        run(KernelDefinition(function, mode=mode), size, *arguments)
        results[mode] = arguments[0].array
    np.testing.assert_allclose(results["c"], results["python"], rtol=1e-5)
    assert results["c"][3] == -1.0 and results["c"][14] == -1.0  # the early returns


@needs_compiler
def test_a_failing_group_reports_its_first_failing_thread(monkeypatch):
    """Threads 12.. of a group of 32 write past the end: the report names thread 12, as
    when threads run one at a time, and memory beyond the buffer stays untouched."""
    reports = []
    for lanes in (True, False):
        backing = np.full(24, -7.0, np.float32)
        out = FakeBuffer(np.zeros(0, np.float32))
        out.array = backing[:16]
        with monkeypatch.context() as patch:
            if not lanes:
                patch.setattr(CEmitter, "lane_width", 0)
            definition = KernelDefinition(lane_kernels.looped_shifted_copy, mode="c")
            with pytest.raises(KernelIndexError) as raised:
                run(definition, 16, FakeBuffer(np.full(16, 3.0, np.float32)), out, 4)
        error = raised.value
        reports.append((error.thread, error.index, error.size, error.buffer, error.line))
        np.testing.assert_array_equal(backing[16:], -7.0)
    assert reports[0] == reports[1]
    assert reports[0][:4] == ((12, 0, 0), 16, 16, "out")


def test_which_kernels_run_as_lanes() -> None:
    int_buffer = argument_type(FakeBuffer(np.zeros(1, np.int32)))
    float_buffer = argument_type(FakeBuffer(np.zeros(1, np.float32)))
    assert emitter_of("mandelbrot", (int_buffer, *[argument_type(1)] * 3)).in_lanes
    assert emitter_of("control_flow", (int_buffer, argument_type(1))).in_lanes
    assert not emitter_of("vecadd", (float_buffer,)).in_lanes  # no loops: a simd loop
    shared = emitter_of("shared_shift", (float_buffer, float_buffer))
    assert not shared.in_lanes and not runs_in_lanes(shared.kernel)  # blocks


def test_locals_too_large_for_the_stack_run_one_thread_at_a_time(monkeypatch) -> None:
    arguments = (argument_type(FakeBuffer(np.zeros(1, np.int32))), *[argument_type(1)] * 3)
    # mandelbrot's 8 four-byte locals take 8 * 4 * 32 = 1024 bytes for a group
    monkeypatch.setattr(CEmitter, "lane_stack_bytes", 1024)
    assert emitter_of("mandelbrot", arguments).in_lanes
    monkeypatch.setattr(CEmitter, "lane_stack_bytes", 1023)
    emitter = emitter_of("mandelbrot", arguments)
    assert not emitter.in_lanes and "_lanes(" not in emitter.emit()
