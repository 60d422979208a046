"""Ctrl-C in ``synchronize()`` on a remote device: the kernel stops on the server, the
trace says cancelled, and the device keeps working."""

import os
import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("zmq")

from helpers.interrupts import interrupt_main_thread_after, needs_main_thread
from kernels.checked_kernels import spin_forever

import luisa_nb as lnb
from luisa_nb.kernels import compiler_available
from luisa_nb.recording.records import Status
from luisa_nb.remote.client import Channel
from luisa_nb.runtime import execution
from luisa_nb.runtime import stream as stream_module
from luisa_nb.runtime.execution import Executor

from .helpers import TOKEN, cpu_seconds, running

pytestmark = [
    needs_main_thread,
    pytest.mark.skipif(not compiler_available(), reason="no C compiler"),
    pytest.mark.timeout(120),  # a regression fails here instead of hanging
]
REPLY_SECONDS = 20.0
"""The device's timeout: without a cancel, the next synchronize() waits this long."""
SPIN_THREADS = 1000


def double(out):
    i = lnb.dispatch_id().x
    out.write(i, out.read(i) * 2)


def assert_doubles(device, size: int = 1000) -> None:
    """A new dispatch on ``device`` gives what numpy gives."""
    data = np.arange(size, dtype=np.int32)
    buffer = device.create_buffer(size, np.int32)
    buffer.copy_from(data)
    lnb.kernel(mode="c")(double)(buffer, dispatch_size=size, stream=device.default_stream)
    np.testing.assert_array_equal(buffer.numpy(), data * 2)


@pytest.fixture
def remote_device():
    device = lnb.create_device("remote", timeout=REPLY_SECONDS)
    yield device
    device.close()


@pytest.fixture
def device_on_thread_server(thread_server):
    device = lnb.create_device(thread_server.address, token=TOKEN)
    yield device
    device.close()


def interrupt_a_kernel_that_never_ends(device) -> None:
    """Run ``spin_forever`` on ``device`` and press Ctrl-C in ``synchronize()``."""
    spin = lnb.kernel(mode="c")(spin_forever)
    out = device.create_buffer(SPIN_THREADS, np.int32)
    device.default_stream.submit([spin.dispatch_async(SPIN_THREADS, out)])
    timer = interrupt_main_thread_after(0.5)
    with pytest.raises(KeyboardInterrupt):
        device.synchronize()
    timer.join()


def test_ctrl_c_cancels_the_kernel_on_the_server_and_the_device_keeps_working(remote_device):
    worker = remote_device.info["server_worker_pid"]
    with lnb.trace() as trace:
        started = time.perf_counter()
        interrupt_a_kernel_that_never_ends(remote_device)
        waited = time.perf_counter() - started
        remote_device.synchronize()  # the cancelled kernel is not reported as a failure
    assert waited < 10.0
    (command,) = trace.commands
    assert command.status is Status.CANCELLED
    assert "cancel" in command.error
    assert_doubles(remote_device)
    before = cpu_seconds(worker)
    time.sleep(1.0)
    assert cpu_seconds(worker) - before < 0.5  # the endless kernel no longer runs


def test_a_ctrl_c_that_reaches_the_server_process_too_leaves_it_serving(remote_device):
    # in a terminal, Ctrl-C interrupts the whole foreground process group, which holds
    # the server that create_device("remote") started
    server = remote_device.info["server_pid"]
    os.kill(server, signal.SIGINT)
    time.sleep(0.5)
    assert running(server)
    assert_doubles(remote_device)


def spin_while_set(flag, out):
    i = lnb.dispatch_id().x
    n = 0
    while flag.read(0) != 0:
        n += 1
    out.write(i, n)


def test_ctrl_c_in_a_synchronize_that_runs_the_work_itself_cancels_it_on_the_server(
    remote_device, monkeypatch
):
    # a launch that was quick is sent and waited for by the synchronizing thread itself;
    # Ctrl-C there must stop it on the server too, not only end the wait
    monkeypatch.setattr(execution, "QUICK_DISPATCH_NANOSECONDS", 10**12)  # no timing
    monkeypatch.setattr(stream_module, "QUICK_RUN_DELAY_NANOSECONDS", 10**11)  # for the caller
    threads = []
    execute_runs = Executor.execute_runs

    def noted(executor, runs):
        threads.append(threading.current_thread() is threading.main_thread())
        return execute_runs(executor, runs)

    monkeypatch.setattr(Executor, "execute_runs", noted)
    spin = lnb.kernel(mode="c")(spin_while_set)
    flag = remote_device.create_buffer(1, np.int32)
    out = remote_device.create_buffer(1, np.int32)
    flag.copy_from(np.zeros(1, np.int32))
    for _ in range(2):
        spin(flag, out, dispatch_size=1, stream=remote_device.default_stream)
        remote_device.synchronize()
    flag.copy_from(np.ones(1, np.int32))
    worker = remote_device.info["server_worker_pid"]
    threads.clear()
    with lnb.trace() as trace:
        remote_device.default_stream.submit([spin.dispatch_async(1, flag, out)])
        timer = interrupt_main_thread_after(0.5)
        with pytest.raises(KeyboardInterrupt):
            remote_device.synchronize()
        timer.join()
    assert threads == [True]  # the interrupted work ran on the synchronizing thread
    (command,) = trace.commands
    assert command.status is Status.FAILED
    before = cpu_seconds(worker)
    time.sleep(1.0)
    assert cpu_seconds(worker) - before < 0.5  # the endless kernel no longer runs
    assert_doubles(remote_device)


def interrupted(*arguments, **options):
    raise KeyboardInterrupt


def wait_until(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@pytest.mark.parametrize(
    "cut_short",
    ["the wait for cancel's reply", "resume, before it is sent"],
)
def test_an_interrupted_cancel_or_resume_leaves_no_kernel_cancelled(
    thread_server, device_on_thread_server, monkeypatch, cut_short
):
    # a second Ctrl-C can cut the requests short, and the server may then hold the
    # session's kernels cancelled; the next batch must resume them first
    device = device_on_thread_server
    backend, connection = device.backend, device.backend._connection
    flag = thread_server.server._sessions[connection.session].worker.cancel
    if cut_short == "the wait for cancel's reply":
        monkeypatch.setattr(Channel, "receive", interrupted)
        with pytest.raises(KeyboardInterrupt):
            backend.cancel()
    else:
        backend.cancel()
        monkeypatch.setattr(Channel, "_send", interrupted)
        with pytest.raises(KeyboardInterrupt):
            backend.resume()
    monkeypatch.undo()
    assert wait_until(lambda: flag.is_set)
    assert_doubles(device)
    assert not flag.is_set
    channel = connection.channels[threading.get_ident()]
    assert channel.in_flight == {} and channel.replies == {}  # the late reply was dropped
