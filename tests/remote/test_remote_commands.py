"""Commands on a remote device give what numpy gives; device times land in the trace."""

import threading

import numpy as np
import pytest

pytest.importorskip("zmq")

import luisa_nb as lnb
from luisa_nb.errors import CommandFailedError, ConfigurationError
from luisa_nb.recording.records import Status
from luisa_nb.runtime.commands import FillCommand


@lnb.kernel(mode="c")
def saxpy(y, x, a):
    i = lnb.dispatch_id().x
    y.write(i, a * x.read(i) + y.read(i))


@lnb.kernel(mode="python")
def double_in_python(y):
    i = lnb.dispatch_id().x
    y.write(i, 2.0 * y.read(i))


def make_vecadd(x, y):
    @lnb.kernel(mode="c")
    def vecadd(z):
        i = lnb.dispatch_id().x
        z.write(i, x.read(i) + y.read(i))

    return vecadd


def test_upload_download_copy_fill_and_views(device):
    n = 1000
    data = np.arange(n, dtype=np.float32)
    a = device.create_buffer(n, np.float32)
    b = device.create_buffer(n, np.float32)
    a.copy_from(data)
    a.copy_to_buffer(b)
    b.view(100, 200).fill(-1.5)
    a.view(0, 10).copy_to_buffer(b.view(990, 1000))
    expected = data.copy()
    expected[100:200] = -1.5
    expected[990:] = data[:10]
    assert np.array_equal(b.numpy(), expected)
    assert np.array_equal(a.view(500, 503).numpy(), data[500:503])
    ints = device.create_buffer(7, np.int64)
    ints.fill(-(2**40))
    assert np.array_equal(ints.numpy(), np.full(7, -(2**40), np.int64))


def test_large_upload_and_download_travel_in_chunks(device):
    # the session server refuses payloads above 4 MiB: 12 MiB takes 3 chunks
    data = np.random.default_rng(1).random(3 << 20, dtype=np.float32)
    buffer = device.create_buffer(data.size, np.float32)
    buffer.copy_from(data)
    assert device.backend._connection.chunk_bytes == 4 << 20
    assert np.array_equal(buffer.numpy(), data)


def test_kernels_with_captured_buffers_and_scalars(device):
    n = 4096
    x_host = np.arange(n, dtype=np.float32)
    y_host = np.float32(1000.0) * np.arange(n, dtype=np.float32)
    x = device.create_buffer(n, np.float32)
    y = device.create_buffer(n, np.float32)
    z = device.create_buffer(n, np.float32)
    x.copy_from(x_host)
    y.copy_from(y_host)
    make_vecadd(x, y).dispatch(n, z)
    assert np.array_equal(z.numpy(), x_host + y_host)
    saxpy.dispatch(n, z, x, 0.5)
    saxpy(z, x, np.float32(2.0), dispatch_size=n)
    assert np.array_equal(z.numpy(), (x_host + y_host + 0.5 * x_host) + 2.0 * x_host)


def test_device_times_are_filled_ordered_and_on_the_host_clock(device):
    n = 256
    buffer = device.create_buffer(n, np.float32)
    host = np.ones(n, np.float32)
    out = np.empty(n, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        stream.submit(
            [
                buffer.copy_from_async(host),
                saxpy.dispatch_async(n, buffer, buffer, 1.0),
                buffer.fill_async(3.0),
                buffer.copy_to_async(out),
            ]
        )
        stream.synchronize()
    assert np.all(out == 3.0)
    error = device.info["clock_error_ns"]
    commands = trace.commands
    sync = trace.syncs[-1]
    previous_finished = None
    for record in commands:
        assert record.status is Status.OK
        assert record.device_started is not None and record.device_finished is not None
        assert record.device_started <= record.device_finished
        assert record.submitted - error <= record.device_started
        assert record.device_finished <= sync.completed + error
        if previous_finished is not None:
            assert previous_finished <= record.device_started
        previous_finished = record.device_finished


def test_a_failing_command_fails_itself_and_skips_the_rest(device):
    buffer = device.create_buffer(16, np.float32)
    buffer.fill(1.0)
    out = np.zeros(16, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        bad = buffer.fill_async(5.0)
        bad.memory = bad.memory._replace(offset=1 << 20)  # outside the buffer on the server
        stream.submit([buffer.fill_async(2.0), bad, buffer.copy_to_async(out)])
        with pytest.raises(CommandFailedError) as caught:
            stream.synchronize()
    assert caught.value.command_id == bad.id
    assert "outside buffer handle" in str(caught.value)
    assert [r.status for r in trace.commands] == [Status.OK, Status.FAILED, Status.SKIPPED]
    assert np.all(out == 0.0)
    assert np.all(buffer.numpy() == 2.0)  # the stream keeps working


def test_python_mode_kernels_are_refused_before_enqueue(device):
    buffer = device.create_buffer(8, np.float32)
    buffer.fill(1.0)
    with lnb.trace() as trace, pytest.raises(ConfigurationError) as caught:
        double_in_python.dispatch_async(8, buffer)
    assert "mode='c'" in str(caught.value)
    assert trace.records == []
    device.synchronize()
    assert np.all(buffer.numpy() == 1.0)


def test_two_streams_on_one_device(device):
    n = 2048
    first, second = device.create_stream("first"), device.create_stream("second")
    a = device.create_buffer(n, np.float32)
    b = device.create_buffer(n, np.float32)
    for step in range(20):
        first.submit([a.fill_async(float(step))])
        second.submit([b.fill_async(float(-step))])
    first.synchronize()
    second.synchronize()
    assert np.all(a.numpy(stream=first) == 19.0)
    assert np.all(b.numpy(stream=second) == -19.0)


def test_many_commands_in_one_submission(device):
    buffer = device.create_buffer(4, np.int32)
    stream = device.default_stream
    stream.submit([buffer.view(i % 4, i % 4 + 1).fill_async(i) for i in range(10_000)])
    assert np.array_equal(buffer.numpy(), [9996, 9997, 9998, 9999])


def test_an_upload_sends_the_bytes_as_they_are_when_it_is_called(device):
    backend = device.backend
    allocation = backend.allocate(16)
    host = np.arange(4, dtype=np.float32)
    span = backend.upload(allocation, 0, host.view(np.uint8))
    host[:] = -1.0  # after the call, before the flush
    out = np.empty(16, np.uint8)
    backend.download(allocation, 0, out)
    assert span.finished is None
    backend.flush()
    assert span.started is not None and span.finished >= span.started
    assert np.array_equal(out.view(np.float32), np.arange(4, dtype=np.float32))


def test_the_server_keeps_nothing_per_command(device, thread_server):
    server = thread_server.server
    buffer = device.create_buffer(64, np.float32)
    stream = device.default_stream
    saxpy.dispatch(64, buffer, buffer, 1.0)
    device.synchronize()
    sizes = (len(server._sessions), len(server._peers), len(server._workers))
    for _ in range(4):
        stream.submit([saxpy.dispatch_async(64, buffer, buffer, 1.0) for _ in range(5000)])
        stream.submit([buffer.fill_async(0.0) for _ in range(5000)])
    device.synchronize()
    assert (len(server._sessions), len(server._peers), len(server._workers)) == sizes
    session = server._sessions[device.backend._connection.session]
    assert session.worker.waiting == {}


class ExplodingFill(FillCommand):
    """A command that raises on the stream's worker, before the runtime flushes."""

    def run(self, backend):
        raise RuntimeError("boom")


def test_commands_before_one_that_raised_still_run(device):
    buffer = device.create_buffer(8, np.float32)
    stream = device.default_stream
    exploding = ExplodingFill(buffer, np.array([5.0], np.float32))
    stream.submit([buffer.fill_async(1.0), exploding, buffer.fill_async(2.0)])
    with pytest.raises(CommandFailedError, match="boom") as caught:
        stream.synchronize()
    assert caught.value.command_id == exploding.id
    assert np.all(buffer.numpy() == 1.0)  # as on a local backend: the first fill ran


def test_what_a_raising_command_left_queued_cannot_fail_a_later_submission(device):
    buffer = device.create_buffer(8, np.float32)
    stream = device.default_stream
    bad = buffer.fill_async(5.0)
    bad.memory = bad.memory._replace(offset=1 << 20)  # fails on the server
    stream.submit([bad, ExplodingFill(buffer, np.array([5.0], np.float32))])
    with pytest.raises(CommandFailedError, match="boom"):
        stream.synchronize()
    out = np.zeros(8, np.float32)
    stream.submit([buffer.fill_async(7.0), buffer.copy_to_async(out)])
    waiter = threading.Thread(target=stream.synchronize, daemon=True)
    waiter.start()
    waiter.join(10)
    assert not waiter.is_alive() and np.all(out == 7.0)
