"""Ctrl-C in ``synchronize()``: the running kernel stops, the trace says cancelled, and
the device keeps working."""

from __future__ import annotations

import time

import numpy as np
import pytest
from helpers.interrupts import interrupt_main_thread_after, needs_main_thread
from kernels import checked_kernels
from kernels.checked_kernels import spin_forever

import luisa_nb as lnb
from luisa_nb.kernels import compiler_available
from luisa_nb.recording.records import Status
from luisa_nb.runtime import stream as stream_module

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")


def double(out):
    i = lnb.dispatch_id().x
    out.write(i, out.read(i) * 2)


@needs_main_thread
@pytest.mark.parametrize("mode", [pytest.param("c", marks=needs_compiler), "python"])
@pytest.mark.parametrize("backend", ["cpu", "dx"])
def test_ctrl_c_cancels_a_kernel_that_never_ends(backend: str, mode: str) -> None:
    spin = lnb.kernel(mode=mode)(spin_forever)
    device = lnb.create_device(backend)
    out = device.create_buffer(1000, np.int32)
    with lnb.trace() as trace:
        device.default_stream.submit([spin.dispatch_async(1000, out)])
        timer = interrupt_main_thread_after(0.3)
        started = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            device.synchronize()
        waited = time.perf_counter() - started
        timer.join()
        device.synchronize()  # the cancelled kernel is not reported as a failure
    assert waited < 5.0
    (command,) = trace.commands
    assert command.status is Status.CANCELLED
    assert "cancel" in command.error
    data = np.arange(1000, dtype=np.int32)
    out.copy_from(data)
    lnb.kernel(mode=mode)(double)(out, dispatch_size=1000)
    np.testing.assert_array_equal(out.numpy(), data * 2)
    device.close()


def doubles_correctly(device: lnb.Device, mode: str) -> None:
    """A new dispatch on ``device`` runs to the end and gives the right result."""
    out = device.create_buffer(1000, np.int32)
    data = np.arange(1000, dtype=np.int32)
    out.copy_from(data)
    lnb.kernel(mode=mode)(double)(out, dispatch_size=1000)
    np.testing.assert_array_equal(out.numpy(), data * 2)


HUGE = (2**20, 2**20, 2**20)  # 2**60 threads: years of work, whatever the kernel
INT32_LIMIT = 2**31 - 1


@needs_main_thread
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("mode", "name", "checks", "size"),
    [
        pytest.param("c", "mark_origin", True, HUGE, marks=needs_compiler, id="c-checked"),
        pytest.param("c", "mark_origin", False, HUGE, marks=needs_compiler, id="c"),
        pytest.param(
            "c", "mark_origin_looping", True, HUGE, marks=needs_compiler, id="c-loops-checked"
        ),
        pytest.param("c", "mark_origin_looping", False, HUGE, marks=needs_compiler, id="c-loops"),
        pytest.param(
            "c", "mark_origin_in_blocks", True, HUGE, marks=needs_compiler, id="c-blocks-checked"
        ),
        pytest.param(
            "c", "mark_origin", False, INT32_LIMIT, marks=needs_compiler, id="c-int32-limit"
        ),
        pytest.param(
            "c",
            "mark_origin_looping",
            True,
            INT32_LIMIT,
            marks=needs_compiler,
            id="c-loops-checked-int32-limit",
        ),
        pytest.param("python", "mark_origin", True, HUGE, id="python"),
        pytest.param("python", "mark_origin_in_blocks", True, HUGE, id="python-blocks"),
    ],
)
def test_ctrl_c_stops_a_dispatch_of_any_size(
    monkeypatch: pytest.MonkeyPatch, mode: str, name: str, checks: bool, size: object
) -> None:
    """The interrupted synchronize() returns once the kernel has stopped, long before a
    grace period that would hide a kernel that does not stop."""
    monkeypatch.setattr(stream_module, "CANCEL_GRACE_SECONDS", 600.0)
    kernel = lnb.kernel(mode=mode, checks=checks)(getattr(checked_kernels, name))
    device = lnb.create_device("cpu")
    out = device.create_buffer(4, np.float32)
    kernel.dispatch(1, out, sync=True)  # built before the clock starts
    with lnb.trace() as trace:
        timer = interrupt_main_thread_after(0.3)
        started = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            kernel.dispatch(size, out, sync=True)
        waited = time.perf_counter() - started
        timer.join()
        device.synchronize()
    assert waited < 10.0, f"the dispatch stopped {waited:.1f} s after it started"
    (command,) = trace.commands
    assert command.status is Status.CANCELLED
    doubles_correctly(device, mode)
    device.close()


@needs_main_thread
@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", [pytest.param("c", marks=needs_compiler), "python"])
def test_kernels_stay_cancelled_until_the_interrupted_work_has_stopped(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """With no grace period the interrupted synchronize() returns at once; the kernel that
    never ends must still stop, so that the next synchronize() returns."""
    monkeypatch.setattr(stream_module, "CANCEL_GRACE_SECONDS", 0.0)
    spin = lnb.kernel(mode=mode)(spin_forever)
    device = lnb.create_device("cpu")
    out = device.create_buffer(1000, np.int32)
    spin.source(out)  # built before the clock starts
    with lnb.trace() as trace:
        device.default_stream.submit([spin.dispatch_async(1000, out)])
        timer = interrupt_main_thread_after(0.3)
        with pytest.raises(KeyboardInterrupt):
            device.synchronize()
        timer.join()
        device.synchronize()  # the cancelled kernel is not reported as a failure
    (command,) = trace.commands
    assert command.status is Status.CANCELLED
    doubles_correctly(device, mode)
    device.close()


class CountingBackend:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def resume(self) -> None:
        self.cancelled = False


def test_a_backend_stays_cancelled_until_every_interrupted_wait_resumed() -> None:
    waits = stream_module._InterruptedWaits()
    backend = CountingBackend()
    waits.cancel(backend)
    waits.cancel(backend)  # a second Ctrl-C before the first one's work stopped
    waits.resume(backend)
    assert backend.cancelled
    waits.resume(backend)
    assert not backend.cancelled
    waits.cancel(backend)
    assert backend.cancelled
