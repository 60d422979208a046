"""A stream's implicit command list: ``add`` gathers, ``execute`` submits one list, and
everything that orders the stream executes the list first."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.errors import BufferDestroyedError, CommandReuseError, InvalidArgumentError

SIZE = 256


def test_added_commands_wait_for_execute(device):
    buffer = device.create_buffer(SIZE, np.float32)
    stream, gate = device.default_stream, device.create_stream()
    release, event = threading.Event(), device.create_event()
    gate.add_callback(release.wait)
    gate.signal(event)
    stream.wait(event)  # the upload runs only after release is set
    host = np.full(SIZE, 7.0, np.float32)
    stream.add(buffer.copy_from_async(host))
    assert len(stream.pending) == 1
    host[:] = 9.0  # before execute: both policies read the new bytes
    stream.execute()
    assert stream.pending == ()
    host[:] = 11.0  # after execute: only a read at execution sees these
    release.set()
    stream.synchronize()
    expected = 9.0 if device.staging is lnb.runtime.StagingPolicy.SUBMIT else 11.0
    np.testing.assert_array_equal(buffer.numpy(), np.full(SIZE, expected, np.float32))


def test_one_list_up_down_up_is_stale_under_submit_only(device):
    a = device.create_buffer(SIZE, np.float32)
    b = device.create_buffer(SIZE, np.float32)
    h1 = np.arange(SIZE, dtype=np.float32)
    h2 = np.full(SIZE, -1.0, np.float32)
    stream = device.default_stream
    stream.add(a.copy_from_async(h1))
    stream.add(a.copy_to_async(h2))
    stream.add(b.copy_from_async(h2))
    stream.synchronize()
    np.testing.assert_array_equal(h2, h1)
    stale = device.staging is lnb.runtime.StagingPolicy.SUBMIT
    np.testing.assert_array_equal(b.numpy(), np.full(SIZE, -1.0, np.float32) if stale else h1)


def test_added_commands_form_one_submission_in_the_trace():
    device = lnb.create_device("cpu", staging="submit")
    buffer = device.create_buffer(SIZE, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        stream.add(buffer.copy_from_async(np.ones(SIZE, np.float32)))
        stream.add(buffer.fill_async(2.0))
        stream.execute()
        stream.add(buffer.fill_async(3.0))
        stream.synchronize()
    submissions = [command.submission for command in trace.commands]
    assert len(submissions) == 3
    assert submissions[0] == submissions[1] != submissions[2]


def test_submit_executes_the_added_commands_first(device):
    buffer = device.create_buffer(SIZE, np.float32)
    stream = device.default_stream
    host = np.arange(SIZE, dtype=np.float32)
    out = np.zeros(SIZE, np.float32)
    stream.add(buffer.copy_from_async(host))
    stream.submit([buffer.copy_to_async(out)])
    stream.synchronize()
    np.testing.assert_array_equal(out, host)


def test_signal_wait_and_callbacks_come_after_the_added_commands(device):
    first, second = device.default_stream, device.create_stream()
    buffer = device.create_buffer(SIZE, np.float32)
    event = device.create_event()
    seen: list[float] = []
    first.add(buffer.fill_async(5.0))
    first.signal(event)
    second.wait(event)
    out = np.zeros(SIZE, np.float32)
    second.add(buffer.copy_to_async(out))
    second.add_callback(lambda: seen.append(float(out[0])))
    second.synchronize()
    assert seen == [5.0]
    np.testing.assert_array_equal(out, np.full(SIZE, 5.0, np.float32))


def test_a_command_is_added_or_submitted_once(device):
    buffer = device.create_buffer(SIZE, np.float32)
    stream = device.default_stream
    command = buffer.fill_async(1.0)
    stream.add(command)
    with pytest.raises(CommandReuseError, match="already submitted"):
        stream.add(command)
    with pytest.raises(CommandReuseError):
        stream.submit([command])
    assert len(stream.pending) == 1
    with pytest.raises(InvalidArgumentError, match="can only submit commands"):
        stream.add("fill")
    stream.synchronize()


def test_a_list_whose_buffer_was_destroyed_is_dropped_with_a_clear_error(device):
    buffer = device.create_buffer(SIZE, np.float32)
    stream = device.default_stream
    stream.add(buffer.fill_async(1.0))
    buffer.destroy()
    with pytest.raises(BufferDestroyedError, match=r"1 command.*were dropped"):
        stream.execute()
    assert stream.pending == ()
    stream.synchronize()


def test_a_submit_stopped_by_the_added_list_leaves_its_commands_unsubmitted(device):
    stream = device.default_stream
    dropped, kept = (device.create_buffer(SIZE, np.float32) for _ in range(2))
    stream.add(dropped.fill_async(1.0))
    dropped.destroy()
    command = kept.fill_async(3.0)
    with pytest.raises(BufferDestroyedError, match="were dropped"):
        stream.submit([command])
    assert command.stream_id is None
    stream.submit([command])
    stream.synchronize()
    np.testing.assert_array_equal(kept.numpy(), np.full(SIZE, 3.0, np.float32))


def test_execute_with_nothing_added_records_nothing(device):
    with lnb.trace() as trace:
        device.default_stream.execute()
    assert len(trace.commands) == 0
