"""Cancelling a running launch through its ``CancelFlag``."""

from __future__ import annotations

import ctypes
import threading
import time

import numpy as np
import pytest

from luisa_nb.errors import KernelCancelledError, KernelError
from luisa_nb.kernels import BufferType, KernelDefinition, ScalarType, compiler_available
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.executable import CancelFlag

from . import checked_kernels
from .helpers import FakeBuffer, run

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")


def test_cancel_flag_is_an_int32_at_a_fixed_address() -> None:
    flag = CancelFlag()
    value = ctypes.c_int32.from_address(flag.address)
    assert not flag.is_set and value.value == 0
    flag.set()
    assert flag.is_set and value.value == 1
    flag.clear()
    assert not flag.is_set and value.value == 0
    assert issubclass(KernelCancelledError, KernelError)


def launch_on_a_thread(definition: KernelDefinition, size: int, *arguments: object):
    """Start a launch on a Python thread; returns (flag, thread, outcome)."""
    flag = CancelFlag()
    outcome: dict[str, BaseException] = {}

    def launch() -> None:
        try:
            run(definition, size, *arguments, cancel=flag)
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=launch, daemon=True)
    thread.start()
    return flag, thread, outcome


@needs_compiler
@pytest.mark.parametrize("size", [4, 100_000])
def test_infinite_loop_stops_soon_after_the_flag_is_set(size: int) -> None:
    out = FakeBuffer(np.zeros(size, np.int32))
    definition = KernelDefinition(checked_kernels.spin_forever, mode="c")
    definition.executable((BufferType(ScalarType.INT32),))  # compile before timing
    flag, thread, outcome = launch_on_a_thread(definition, size, out)
    time.sleep(0.2)
    assert thread.is_alive()  # really spinning
    flag.set()
    started = time.perf_counter()
    thread.join(timeout=1.0)
    assert not thread.is_alive(), "the kernel did not stop within a second"
    assert time.perf_counter() - started < 1.0
    assert isinstance(outcome.get("error"), KernelCancelledError)


@pytest.mark.parametrize("mode", [pytest.param("c", marks=needs_compiler), "python"])
def test_flag_set_before_launch_runs_no_block(mode: str) -> None:
    flag = CancelFlag()
    flag.set()
    out = FakeBuffer(np.zeros(64, np.float32))
    definition = KernelDefinition(checked_kernels.shifted_copy, mode=mode)
    with pytest.raises(KernelCancelledError, match="shifted_copy"):
        run(definition, 64, FakeBuffer(np.ones(64, np.float32)), out, 0, cancel=flag)
    np.testing.assert_array_equal(out.array, 0.0)
    flag.clear()
    run(definition, 64, FakeBuffer(np.ones(64, np.float32)), out, 0, cancel=flag)
    np.testing.assert_array_equal(out.array, 1.0)


def test_python_mode_checks_the_flag_between_threads() -> None:
    size = 2_000_000  # minutes of Python-mode threads if nothing stopped them
    source = FakeBuffer(np.ones(size, np.float32))
    out = FakeBuffer(np.zeros(size, np.float32))
    definition = KernelDefinition(checked_kernels.shifted_copy, mode="python")
    flag, thread, outcome = launch_on_a_thread(definition, size, source, out, 0)
    time.sleep(0.1)
    flag.set()
    thread.join(timeout=1.0)
    assert not thread.is_alive()
    assert isinstance(outcome.get("error"), KernelCancelledError)
    assert 0 < np.count_nonzero(out.array) < size


HUGE = (2**20, 2**20, 2**20)  # 2**60 threads: years of work, whatever the kernel


@pytest.mark.parametrize(
    ("mode", "name", "checks"),
    [
        pytest.param("c", "mark_origin", True, marks=needs_compiler),
        pytest.param("c", "mark_origin", False, marks=needs_compiler),
        pytest.param("c", "mark_origin_looping", True, marks=needs_compiler),
        pytest.param("c", "mark_origin_looping", False, marks=needs_compiler),
        pytest.param("c", "mark_origin_in_blocks", True, marks=needs_compiler),
        pytest.param("c", "mark_origin_in_blocks", False, marks=needs_compiler),
        ("python", "mark_origin", True),
    ],
)
def test_a_huge_launch_stops_soon_after_the_flag_is_set(mode: str, name: str, checks: bool) -> None:
    out = FakeBuffer(np.zeros(4, np.float32))
    definition = KernelDefinition(getattr(checked_kernels, name), mode=mode)
    definition.executable(
        (BufferType(ScalarType.FLOAT32),), KernelChecks.parse(checks)
    )  # built before timing
    flag = CancelFlag()
    outcome: dict[str, BaseException] = {}

    def launch() -> None:
        try:
            run(definition, HUGE, out, checks=checks, cancel=flag)
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=launch, daemon=True)
    thread.start()
    time.sleep(0.2)
    flag.set()
    thread.join(timeout=10.0)
    assert not thread.is_alive(), "the launch did not stop within 10 s of the flag"
    assert isinstance(outcome.get("error"), KernelCancelledError)
    assert out.array[0] == 1.0  # it ran before it stopped


@pytest.mark.parametrize("mode", [pytest.param("c", marks=needs_compiler), "python"])
def test_a_launch_with_an_empty_axis_ends_at_once(mode: str) -> None:
    """No threads, but 2**62 rows of none of them: nothing to run and nothing to wait for."""
    definition = KernelDefinition(checked_kernels.mark_origin, mode=mode)
    out = FakeBuffer(np.zeros(4, np.float32))
    flag, thread, outcome = launch_on_a_thread(definition, (0, 2**31 - 1, 2**31 - 1), out)
    thread.join(timeout=10.0)
    still_running = thread.is_alive()
    flag.set()
    assert not still_running, "a launch of no threads did not end within 10 s"
    assert not outcome
    assert out.array[0] == 0.0
