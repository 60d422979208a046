"""On ``remote`` the runs queued behind one another share one flush: the worker stops a
flush at its first failure, so the runs behind a failed one have not run on the server,
and they run again, each recorded once. A run with uploads shares no flush with a run
before it, since its uploads read host memory as they are issued."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("zmq")

from xxhash import xxh3_128_digest

import luisa_nb as lnb
from luisa_nb.errors import CommandFailedError
from luisa_nb.kernels import compiler_available
from luisa_nb.recording import Status
from luisa_nb.recording.row_appender import rows_of
from luisa_nb.remote.channel import Channel
from luisa_nb.runtime.execution import Executor

from .helpers import TOKEN

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
SIZE = 64


@lnb.kernel(mode="c")
def double(values):
    index = lnb.dispatch_id().x
    values.write(index, values.read(index) * 2.0)


@lnb.kernel(mode="c")
def overrun(values):
    values.write(lnb.dispatch_id().x + SIZE, 1.0)


@pytest.fixture(params=["submit", "execute"])
def remote_device(thread_server, request):
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=request.param)
    yield device
    device.backend.close()


@pytest.fixture
def batches(monkeypatch) -> list[int]:
    """One entry per batch of operations sent to the server: a round trip each."""
    counted: list[int] = []
    send = Channel.send

    def counting(channel):
        counted.append(1)
        return send(channel)

    monkeypatch.setattr(Channel, "send", counting)
    return counted


def test_a_dispatch_and_the_download_behind_it_share_one_flush(remote_device, batches):
    buffer = remote_device.create_buffer(SIZE, np.float32)
    buffer.copy_from(np.arange(SIZE, dtype=np.float32))
    out = np.empty(SIZE, np.float32)
    double(buffer, dispatch_size=SIZE)  # its first launch: now the runtime knows it is quick
    buffer.copy_to(out)
    before = len(batches)
    for _ in range(10):
        double(buffer, dispatch_size=SIZE)  # queued, not run: the download waits for it
        buffer.copy_to(out)
    assert len(batches) - before == 10
    np.testing.assert_array_equal(out, np.arange(SIZE, dtype=np.float32) * 2.0**11)


def test_runs_behind_a_failed_run_run_again_and_are_recorded_once(remote_device, monkeypatch):
    joined = []
    run_steps = Executor._run_steps

    def noting(executor, order, recorder, ends):
        joined.append(len(ends))
        return run_steps(executor, order, recorder, ends)

    monkeypatch.setattr(Executor, "_run_steps", noting)
    buffer = remote_device.create_buffer(SIZE, np.float32)
    other = remote_device.create_buffer(SIZE, np.float32)
    values = np.arange(SIZE, dtype=np.float32)
    buffer.copy_from(values)
    other.copy_from(values + 100.0)
    stream = remote_device.default_stream
    out = np.empty(SIZE, np.float32)
    gate = threading.Event()
    with lnb.trace() as trace:
        stream.add_callback(gate.wait)  # the worker takes both runs once they are queued
        stream.submit([overrun.dispatch_async(SIZE, buffer), double.dispatch_async(SIZE, buffer)])
        stream.submit([double.dispatch_async(SIZE, other), other.copy_to_async(out)])
        gate.set()
        with pytest.raises(CommandFailedError, match="overrun"):
            stream.synchronize()
    assert joined[-2:] == [2, 1]  # both runs in one flush; the second again on its own
    np.testing.assert_array_equal(out, (values + 100.0) * 2.0)  # doubled once, not twice
    np.testing.assert_array_equal(buffer.numpy(), values)  # the failed run's rest skipped
    failed, skipped, doubled, download = trace.commands
    assert [failed.status, skipped.status] == [Status.FAILED, Status.SKIPPED]
    assert [doubled.status, download.status] == [Status.OK, Status.OK]
    assert download.data_capture.digest == xxh3_128_digest(out).hex()
    assert len(rows_of(trace.recorder.accesses)) == 1  # the download's host write, once
    assert all(c.finished is not None for c in (failed, doubled, download))


def test_a_run_with_uploads_takes_a_flush_of_its_own(remote_device, batches):
    buffer = remote_device.create_buffer(SIZE, np.float32)
    host = np.arange(SIZE, dtype=np.float32)
    stream = remote_device.default_stream
    before = len(batches)
    stream.submit([double.dispatch_async(SIZE, buffer)])
    stream.submit([buffer.copy_from_async(host)])
    stream.synchronize()
    assert len(batches) - before == 2
    np.testing.assert_array_equal(buffer.numpy(), host)
