"""Ctrl-C in ``synchronize()``: the running kernel stops, the trace says cancelled, and
the device keeps working."""

from __future__ import annotations

import time

import numpy as np
import pytest
from helpers.interrupts import interrupt_main_thread_after, needs_main_thread
from kernels.checked_kernels import spin_forever

import luisa_nb as lnb
from luisa_nb.kernels import compiler_available
from luisa_nb.recording.records import Status


def double(out):
    i = lnb.dispatch_id().x
    out.write(i, out.read(i) * 2)


@needs_main_thread
@pytest.mark.parametrize(
    "mode",
    [
        pytest.param(
            "c", marks=pytest.mark.skipif(not compiler_available(), reason="no C compiler")
        ),
        "python",
    ],
)
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
