"""On ``remote`` a synchronous call sends its stream's quick work and waits for the reply
itself, as it runs quick work on a local backend: a dispatch is quick by the device time
the server reports. The trace is the same whichever thread sends the work."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("zmq")

import luisa_nb as lnb
from luisa_nb.kernels import compiler_available
from luisa_nb.recording import CommandRecord, SyncRecord
from luisa_nb.runtime import execution
from luisa_nb.runtime import stream as stream_module
from luisa_nb.runtime.commands import DispatchCommand
from luisa_nb.runtime.execution import Executor

from .helpers import TOKEN

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
SIZE = 64
STEPS = 6


@lnb.kernel(mode="c")
def add_one(values):
    index = lnb.dispatch_id().x
    values.write(index, values.read(index) + 1.0)


@pytest.fixture
def run_threads(monkeypatch):
    """Whether each run of the executors with a dispatch in it ran on the main thread."""
    on_main: list[bool] = []
    execute_runs = Executor.execute_runs

    def noted(executor, runs):
        main = threading.current_thread() is threading.main_thread()
        for steps, _, _ in runs:
            if any(type(step) is DispatchCommand for step in steps):
                on_main.append(main)
        return execute_runs(executor, runs)

    monkeypatch.setattr(Executor, "execute_runs", noted)
    return on_main


@pytest.fixture(params=["submit", "execute"])
def remote_device(thread_server, request):
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=request.param)
    yield device
    device.backend.close()


def steps(device, buffer) -> np.ndarray:
    """Synchronous steps on ``buffer``: upload, two launches, download; what came back."""
    out = np.empty(SIZE, np.float32)
    results = []
    for step in range(STEPS):
        buffer.copy_from(np.full(SIZE, step, np.float32))
        add_one(buffer, dispatch_size=SIZE, stream=device.default_stream)
        add_one(buffer, dispatch_size=SIZE, stream=device.default_stream)
        buffer.copy_to(out)
        results.append(out.copy())
    return np.array(results)


def test_a_quick_launch_is_sent_by_the_thread_that_waits_for_it(
    remote_device, run_threads, monkeypatch
):
    monkeypatch.setattr(stream_module, "QUICK_RUN_DELAY_NANOSECONDS", 10**11)  # for the caller
    monkeypatch.setattr(execution, "QUICK_DISPATCH_NANOSECONDS", 10**12)  # no timing
    buffer = remote_device.create_buffer(SIZE, np.float32)
    steps(remote_device, buffer)  # the kernel built, its launches on this buffer timed
    run_threads.clear()
    np.testing.assert_array_equal(steps(remote_device, buffer)[:, 0], np.arange(STEPS) + 2.0)
    assert run_threads == [True] * 2 * STEPS


def test_a_launch_the_server_timed_as_slow_is_left_to_the_streams_thread(
    remote_device, run_threads, monkeypatch
):
    monkeypatch.setattr(execution, "QUICK_DISPATCH_NANOSECONDS", -1)  # no launch is quick
    add_one(remote_device.create_buffer(SIZE, np.float32), dispatch_size=SIZE)
    remote_device.synchronize()
    run_threads.clear()
    buffer = remote_device.create_buffer(SIZE, np.float32)
    for _ in range(3):
        add_one(buffer, dispatch_size=SIZE, stream=remote_device.default_stream)
        remote_device.synchronize()
    assert run_threads == [False] * 3  # timed as slow twice: the stream's thread sends it


def comparable(trace) -> list[tuple]:
    """What a trace says of each record, times and process-wide numbers left out."""
    rows: list[tuple] = []
    for record in trace.records:
        if isinstance(record, CommandRecord):
            host = record.host
            rows.append(
                (
                    record.id,
                    record.kind,
                    record.submission,
                    record.index,
                    record.label,
                    record.staging,
                    None if host is None else (host.name, host.nbytes),
                    record.status,
                    record.host_read is not None,
                    record.host_write is not None,
                    record.device_started is not None,
                )
            )
        elif isinstance(record, SyncRecord):
            rows.append((record.id, record.kind, record.status))
    return rows


def test_the_trace_is_the_same_whichever_thread_sends_the_work(remote_device, monkeypatch):
    buffer = remote_device.create_buffer(SIZE, np.float32)
    steps(remote_device, buffer)
    monkeypatch.setattr(stream_module, "QUICK_RUN_DELAY_NANOSECONDS", 10**11)
    monkeypatch.setattr(execution, "QUICK_DISPATCH_NANOSECONDS", 10**12)  # every launch quick
    with lnb.trace() as by_caller:
        from_caller = steps(remote_device, buffer)
    monkeypatch.setattr(stream_module, "runs_quickly", lambda steps: False)  # none quick
    with lnb.trace() as by_worker:
        from_worker = steps(remote_device, buffer)
    np.testing.assert_array_equal(from_caller, from_worker)
    assert len(by_caller.commands) == 4 * STEPS
    assert comparable(by_caller) == comparable(by_worker)
    assert [h.kind for h in by_caller.hazards] == [h.kind for h in by_worker.hazards]
