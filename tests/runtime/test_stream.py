import threading

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb import errors
from luisa_nb.recording import Status, SyncKind


def _gate(stream):
    """Block ``stream``'s worker until the returned event is set."""
    opened = threading.Event()
    stream.add_callback(lambda: opened.wait(10))
    return opened


def test_submit_returns_before_commands_run(device):
    buffer = device.create_buffer(4, np.float32)
    buffer.copy_from(np.arange(4, dtype=np.float32))
    out = np.zeros(4, np.float32)
    opened = _gate(device.default_stream)
    device.default_stream.submit([buffer.copy_to_async(out)])
    np.testing.assert_array_equal(out, 0)  # still queued behind the gate
    opened.set()
    device.default_stream.synchronize()
    np.testing.assert_array_equal(out, np.arange(4))


def test_commands_run_in_stream_order(device):
    buffer = device.create_buffer(1, np.int32)
    seen = []
    stream = device.default_stream
    for value in range(50):
        buffer.fill(value)
        host = np.zeros(1, np.int32)
        stream.submit([buffer.copy_to_async(host)])
        stream.add_callback(lambda host=host: seen.append(int(host[0])))
    stream.synchronize()
    assert seen == list(range(50))


def test_scope_synchronizes_on_exit(device):
    buffer = device.create_buffer(3, np.float32)
    out = np.zeros(3, np.float32)
    with device.default_stream.scope() as stream:
        stream.submit([buffer.fill_async(2.5), buffer.copy_to_async(out)])
    np.testing.assert_array_equal(out, 2.5)


def test_event_orders_two_streams(device):
    first, second = device.create_stream(), device.create_stream()
    event = device.create_event()
    buffer = device.create_buffer(2, np.float32)
    out = np.zeros(2, np.float32)
    opened = _gate(first)
    first.submit([buffer.fill_async(9.0)])
    first.signal(event)
    second.wait(event)
    second.submit([buffer.copy_to_async(out)])
    np.testing.assert_array_equal(out, 0)  # second waits for first, which is gated
    opened.set()
    second.synchronize()
    np.testing.assert_array_equal(out, 9.0)
    event.synchronize()


def test_command_cannot_be_submitted_twice(device):
    buffer = device.create_buffer(2, np.float32)
    command = buffer.fill_async(1.0)
    device.default_stream.submit([command])
    with pytest.raises(errors.CommandReuseError, match=f"#{command.id}"):
        device.default_stream.submit([command])
    other = buffer.fill_async(2.0)
    with pytest.raises(errors.CommandReuseError):
        device.default_stream.submit([other, other])
    with pytest.raises(errors.InvalidArgumentError):
        device.default_stream.submit([other, "not a command"])
    assert other.stream_id is None


def test_worker_failure_surfaces_at_synchronize_and_keeps_records(device, monkeypatch):
    stream = device.default_stream
    buffer = device.create_buffer(4, np.float32)
    good = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    original = type(device.backend).upload

    def upload(self, allocation, offset, data):
        if data[0] == 255:
            raise MemoryError("device lost")
        original(self, allocation, offset, data)

    monkeypatch.setattr(type(device.backend), "upload", upload)
    bad = np.full(4, np.frombuffer(b"\xff\x00\x00\x00", np.float32)[0])
    with lnb.trace() as trace:
        commands = [
            buffer.copy_from_async(good),
            buffer.copy_from_async(bad),
            buffer.copy_to_async(out),
        ]
        stream.submit(commands)
        with pytest.raises(errors.CommandFailedError) as raised:
            stream.synchronize()
        # the stream still works after the failure
        buffer.copy_from(good + 1)
        buffer.copy_to(out)
    failure = raised.value
    assert failure.command_id == commands[1].id
    assert f"command #{commands[1].id}" in str(failure)
    assert "MemoryError: device lost" in str(failure)
    assert "1 later command(s)" in str(failure)
    assert isinstance(failure.__cause__, MemoryError)
    np.testing.assert_array_equal(out, good + 1)
    statuses = [trace.command(trace.number_of(c)).status for c in commands]
    assert statuses == [Status.OK, Status.FAILED, Status.SKIPPED]
    assert trace.command(trace.number_of(commands[1])).error == "MemoryError: device lost"
    assert len(trace.commands) == 5


def test_failing_callback_is_reported_and_later_work_runs(device):
    stream = device.default_stream
    buffer = device.create_buffer(1, np.int32)

    def explode():
        raise ValueError("boom")

    stream.add_callback(explode)
    buffer.fill(3)
    with pytest.raises(errors.CommandFailedError, match=r"callback .*explode.*boom"):
        stream.synchronize()
    np.testing.assert_array_equal(buffer.numpy(), [3])


def test_sync_points_are_recorded(device):
    stream = device.default_stream
    other = device.create_stream()
    event = device.create_event()
    buffer = device.create_buffer(2, np.float32)
    with lnb.trace() as trace:
        stream.submit([buffer.fill_async(1.0)])
        stream.signal(event)
        other.wait(event)
        other.add_callback(lambda: None)
        event.synchronize()
        device.synchronize()
    kinds = [(s.kind, s.stream) for s in trace.syncs]
    assert kinds[:4] == [
        (SyncKind.SIGNAL, stream.id),
        (SyncKind.WAIT, other.id),
        (SyncKind.CALLBACK, other.id),
        (SyncKind.EVENT_SYNCHRONIZE, None),
    ]
    assert {s for k, s in kinds[4:] if k is SyncKind.SYNCHRONIZE} >= {stream.id, other.id}
    assert all(s.completed is not None and s.completed >= s.issued for s in trace.syncs)
    synchronize = next(
        s for s in trace.syncs if s.kind is SyncKind.SYNCHRONIZE and s.stream == stream.id
    )
    assert synchronize.covers == trace.syncs[0].seq


def test_a_synchronize_covers_the_last_record_of_its_own_stream(device):
    stream, other = device.default_stream, device.create_stream()
    event = device.create_event()
    buffer = device.create_buffer(2, np.float32)
    with lnb.trace() as trace:
        stream.submit([buffer.fill_async(1.0), buffer.fill_async(2.0)])
        other.submit([buffer.fill_async(3.0)])
        stream.synchronize()
        other.submit([buffer.fill_async(4.0)])
        stream.synchronize()
        stream.signal(event)
        other.synchronize()
        stream.synchronize()
        stream.submit([buffer.fill_async(5.0)])
        stream.synchronize()
    seqs = [record.seq for record in trace.commands]
    signal = next(s for s in trace.syncs if s.kind is SyncKind.SIGNAL)
    covers = [(s.stream, s.covers) for s in trace.syncs if s.kind is SyncKind.SYNCHRONIZE]
    assert covers == [
        (stream.id, seqs[1]),
        (stream.id, seqs[1]),
        (other.id, seqs[3]),
        (stream.id, signal.seq),
        (stream.id, seqs[4]),
    ]
