"""Consecutive compiled dispatches run in one backend call: the same results, records,
times and failures as dispatches run one by one."""

from __future__ import annotations

import threading
import time
from itertools import pairwise

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb import errors
from luisa_nb.backends.cpu import CpuBackend
from luisa_nb.recording.records import Status
from luisa_nb.runtime.commands import DispatchCommand


@lnb.kernel
def add(target, value):
    i = lnb.dispatch_id().x
    target.write(i, target.read(i) + value)


@lnb.kernel
def scale(target, factor):
    i = lnb.dispatch_id().x
    target.write(i, target.read(i) * factor)


@lnb.kernel(checks=True)
def shifted(target, shift):
    i = lnb.dispatch_id().x
    target.write(i + shift, 1.0)


@pytest.fixture
def one_by_one(monkeypatch):
    """Make the CPU backend run every dispatch with ``dispatch()``, one per call."""

    def unbatched():
        monkeypatch.setattr(CpuBackend, "prepare_dispatch", lambda self, *arguments: None)

    return unbatched


def _program(device):
    buffer = device.create_buffer(16, np.float32)
    host = np.arange(16, dtype=np.float32)
    stream = device.default_stream
    commands = [buffer.copy_from_async(host)]
    for step in range(6):
        commands.append(add.dispatch_async(16 - step, buffer, float(step)))
        commands.append(scale.dispatch_async((4, 2) if step % 2 else 16, buffer, 1.5))
    commands.append(buffer.copy_to_async(host))
    with lnb.trace() as trace:
        stream.submit(commands)
        stream.synchronize()
    return host, trace


def _shape(trace):
    """What the records say, less ids and times."""
    return [
        (
            record.kind,
            record.label,
            record.status,
            record.index,
            [(r.offset, r.nbytes, r.access) for r in record.device_ranges],
            None if record.data_capture is None else record.data_capture.digest,
        )
        for record in trace.commands
    ]


def test_batched_dispatches_give_the_results_and_records_of_single_ones(device, one_by_one):
    batched_host, batched = _program(device)
    one_by_one()
    single_host, single = _program(lnb.create_device("cpu", staging=device.staging))
    np.testing.assert_array_equal(batched_host, single_host)
    assert _shape(batched) == _shape(single)
    for record in batched.commands:
        assert record.status is Status.OK
        assert record.started <= record.finished


def _traced_batch(device, commands):
    """The records of ``commands`` submitted as one list and synchronized in a trace, and
    the trace clock before the submission and after the synchronize."""
    with lnb.trace() as trace:
        before = time.perf_counter_ns()
        device.default_stream.submit(commands)
        device.synchronize()
        after = time.perf_counter_ns()
    return trace.commands, before, after


def test_a_batch_times_each_dispatch_on_the_trace_clock(device):
    buffer = device.create_buffer(4, np.float32)
    buffer.fill(0.0, sync=True)
    commands = [add.dispatch_async(4, buffer, 1.0) for _ in range(5)]
    records, before, after = _traced_batch(device, commands)
    assert len(records) == 5
    times = [t for record in records for t in (record.started, record.finished)]
    assert before <= times[0] and times[-1] <= after
    assert times == sorted(times)
    assert all(a.finished == b.started for a, b in pairwise(records))


@lnb.kernel
def spin(target, rounds: int):
    i = lnb.dispatch_id().x
    value = target.read(i)
    for _ in range(rounds):
        value = value * 0.5 + 1.0
    target.write(i, value)


def test_each_launch_of_a_batch_gets_its_own_start_between_the_clock_reads(device):
    """A batch's launch starts come from one clock read before the first and one after the
    last (the time stamp counter places the others): launches that each take a while
    start one after another, not all at the first read."""
    buffer = device.create_buffer(64, np.float32)
    buffer.fill(0.0, sync=True)
    commands = [spin.dispatch_async(64, buffer, 20_000) for _ in range(4)]
    records, before, after = _traced_batch(device, commands)
    starts = [record.started for record in records]
    assert before <= starts[0] < starts[1] < starts[2] < starts[3]
    assert records[-1].finished <= after
    np.testing.assert_allclose(buffer.numpy(), np.full(64, 2.0), rtol=1e-6)


def test_a_failure_inside_a_batch_names_its_command_and_keeps_the_records(device):
    buffer = device.create_buffer(8, np.float32)
    host = np.zeros(8, np.float32)
    stream = device.default_stream
    commands = [shifted.dispatch_async(8, buffer, 0) for _ in range(2)]
    commands.append(shifted.dispatch_async(8, buffer, 4))  # writes past the end
    commands += [shifted.dispatch_async(8, buffer, 0) for _ in range(2)]
    commands.append(buffer.copy_to_async(host))
    with lnb.trace() as trace:
        stream.submit(commands)
        with pytest.raises(errors.CommandFailedError) as raised:
            stream.synchronize()
    assert raised.value.command_id == commands[2].id
    assert "3 later command(s)" in str(raised.value)
    assert isinstance(raised.value.__cause__, errors.KernelIndexError)
    statuses = [record.status for record in trace.commands]
    assert statuses[:3] == [Status.OK, Status.OK, Status.FAILED]
    assert all(status is not Status.OK for status in statuses[3:])
    failed = trace.commands[2]
    assert failed.started is not None and failed.finished is not None
    assert "KernelIndexError" in failed.error
    stream.submit([shifted.dispatch_async(8, buffer, 0)])
    stream.synchronize()  # the stream keeps working


def test_python_mode_dispatches_run_between_batches(device):
    @lnb.kernel(mode="python")
    def double(target):
        i = lnb.dispatch_id().x
        target.write(i, target.read(i) * 2.0)

    buffer = device.create_buffer(4, np.float32)
    buffer.fill(1.0)
    stream = device.default_stream
    stream.submit(
        [
            add.dispatch_async(4, buffer, 1.0),
            double.dispatch_async(4, buffer),
            add.dispatch_async(4, buffer, 1.0),
            add.dispatch_async(4, buffer, 1.0),
        ]
    )
    np.testing.assert_array_equal(buffer.numpy(), np.full(4, 6.0))


def test_a_prepared_launch_is_kept_per_size(device):
    @lnb.kernel
    def bump(target):
        i = lnb.dispatch_id().x
        target.write(i, target.read(i) + 1.0)

    buffer = device.create_buffer(8, np.float32)
    buffer.fill(0.0)
    first = bump.dispatch_async(8, buffer)
    second = bump.dispatch_async(8, buffer)
    smaller = bump.dispatch_async(4, buffer)
    backend = device.backend
    assert isinstance(first, DispatchCommand)
    assert first.arguments is second.arguments is smaller.arguments
    prepared = first.prepare(backend)
    assert second.prepare(backend) is prepared
    assert smaller.prepare(backend) is not prepared
    device.default_stream.submit([first, second, smaller])
    np.testing.assert_array_equal(buffer.numpy(), [3.0] * 4 + [2.0] * 4)


def _held(stream):
    """Hold ``stream``'s worker until the returned event is set, so that what is
    submitted meanwhile waits in its queue and is taken together."""
    release = threading.Event()
    stream.add_callback(release.wait)
    return release


def test_queued_submissions_of_dispatches_run_together_yet_apart(device, monkeypatch):
    buffer = device.create_buffer(8, np.float32)
    buffer.fill(0.0, sync=True)
    stream = device.default_stream
    calls = []
    run_dispatches = CpuBackend.run_dispatches

    def counted(self, prepared, times):
        calls.append(len(prepared))
        return run_dispatches(self, prepared, times)

    monkeypatch.setattr(CpuBackend, "run_dispatches", counted)
    with lnb.trace() as trace:
        release = _held(stream)
        for _ in range(3):
            add(buffer, 1.0, dispatch_size=8)
        stream.submit([add.dispatch_async(8, buffer, 10.0), scale.dispatch_async(8, buffer, 2.0)])
        add(buffer, 1.0, dispatch_size=4)
        release.set()
        stream.synchronize()
    assert calls == [6]
    np.testing.assert_array_equal(buffer.numpy(), [27.0] * 4 + [26.0] * 4)
    records = trace.commands
    assert [record.status for record in records] == [Status.OK] * 6
    assert len({record.submission for record in records}) == 5
    times = [t for record in records for t in (record.started, record.finished)]
    assert times == sorted(times)
    assert all(a.finished == b.started for a, b in pairwise(records))


def test_a_failure_in_queued_submissions_skips_only_the_rest_of_its_own(device):
    buffer = device.create_buffer(8, np.float32)
    stream = device.default_stream
    buffer.fill(0.0, sync=True)
    with lnb.trace() as trace:
        release = _held(stream)
        add(buffer, 1.0, dispatch_size=8)
        failing = [shifted.dispatch_async(8, buffer, 4), add.dispatch_async(8, buffer, 100.0)]
        stream.submit(failing)
        add(buffer, 1.0, dispatch_size=8)
        add(buffer, 1.0, dispatch_size=8)
        release.set()
        with pytest.raises(errors.CommandFailedError) as raised:
            stream.synchronize()
    assert raised.value.command_id == failing[0].id
    assert "1 later command(s)" in str(raised.value)
    statuses = [record.status for record in trace.commands]
    assert statuses == [Status.OK, Status.FAILED, Status.SKIPPED, Status.OK, Status.OK]
    assert buffer.numpy()[0] == 3.0  # the runs after the failed one ran, its own did not
    failed = trace.commands[1]
    assert trace.commands[0].finished <= failed.started <= failed.finished
    assert failed.finished <= trace.commands[3].started


def test_a_trace_started_between_queued_submissions_records_only_the_later_ones(device):
    buffer = device.create_buffer(4, np.float32)
    buffer.fill(0.0, sync=True)
    stream = device.default_stream
    release = _held(stream)
    add(buffer, 1.0, dispatch_size=4)
    with lnb.trace() as trace:
        add(buffer, 2.0, dispatch_size=4)
        add(buffer, 3.0, dispatch_size=4)
        release.set()
        stream.synchronize()
    np.testing.assert_array_equal(buffer.numpy(), [6.0] * 4)
    records = trace.commands
    assert [record.label for record in records] == [
        "add(value=2.0) [4]",
        "add(value=3.0) [4]",
    ]
    assert all(
        record.status is Status.OK and record.started <= record.finished for record in records
    )


def test_an_error_of_the_backend_call_fails_one_queued_submission(device, monkeypatch):
    buffer = device.create_buffer(4, np.float32)
    buffer.fill(0.0, sync=True)
    stream = device.default_stream
    run_dispatches = CpuBackend.run_dispatches
    calls = []

    def broken_once(self, prepared, times):
        calls.append(len(prepared))
        if len(calls) == 1:
            raise RuntimeError("backend lost")
        return run_dispatches(self, prepared, times)

    monkeypatch.setattr(CpuBackend, "run_dispatches", broken_once)
    with lnb.trace() as trace:
        release = _held(stream)
        for value in (1.0, 2.0, 4.0):
            add(buffer, value, dispatch_size=4)
        release.set()
        with pytest.raises(errors.CommandFailedError, match="backend lost"):
            stream.synchronize()
    assert calls[0] == 3
    assert [record.status for record in trace.commands] == [Status.FAILED, Status.OK, Status.OK]
    np.testing.assert_array_equal(buffer.numpy(), [6.0] * 4)


def test_queued_transfers_and_dispatches_fail_and_skip_per_submission(device):
    buffer = device.create_buffer(8, np.float32)
    stream = device.default_stream
    first, second = np.full(8, 1.0, np.float32), np.full(8, 2.0, np.float32)
    out = np.zeros(8, np.float32)
    with lnb.trace() as trace:
        release = _held(stream)
        buffer.copy_from(first)
        failing = [shifted.dispatch_async(8, buffer, 4), buffer.copy_from_async(second)]
        stream.submit(failing)
        add(buffer, 10.0, dispatch_size=8)
        buffer.copy_to(out, sync=False)
        release.set()
        with pytest.raises(errors.CommandFailedError) as raised:
            stream.synchronize()
    assert raised.value.command_id == failing[0].id
    statuses = [record.status for record in trace.commands]
    assert statuses == [Status.OK, Status.FAILED, Status.SKIPPED, Status.OK, Status.OK]
    np.testing.assert_array_equal(out, np.full(8, 11.0))  # the skipped upload never ran
    uploaded, _, skipped, _, downloaded = trace.commands
    assert (
        uploaded.host_read is not None and skipped.host_read is None
    ) or device.staging == "submit"
    assert downloaded.host_write is not None
    assert len({record.submission for record in trace.commands}) == 4


@lnb.kernel
def bump(target):
    i = lnb.dispatch_id().x
    target.write(i, target.read(i) + 1.0)


def test_one_kernel_on_other_buffers_and_sizes_in_one_batch_keeps_each_record(device):
    """Commands that share a kernel's arguments (same buffers) sit between ones that do
    not (another buffer, a view, another size): each record names its own size and
    buffer range, and every dispatch ran on what it was given."""
    first = device.create_buffer(8, np.float32)
    second = device.create_buffer(4, np.float32)
    first.fill(0.0)
    second.fill(0.0)
    tail = first.view(4)
    plan = [(first, 8), (first, 8), (second, 4), (first, 8), (first, 2), (tail, 4),
            (first, 2), (second, 2), (second, 4), (first, 8)]  # fmt: skip
    commands = [bump.dispatch_async(size, target) for target, size in plan]
    shared = [(0, 1), (3, 4), (7, 8)]  # the same arguments: the same size, or another
    assert all(commands[a].arguments is commands[b].arguments for a, b in shared)
    with lnb.trace() as trace:
        device.default_stream.submit(commands)
        device.synchronize()
    records = trace.commands
    assert [record.label for record in records] == [f"bump [{size}]" for _, size in plan]
    assert [
        [(r.buffer, r.offset, r.nbytes) for r in record.device_ranges] for record in records
    ] == [[(target.buffer.id, target.offset_bytes, target.nbytes)] for target, _ in plan]
    assert len({record.id for record in records}) == len(plan)
    assert all(record.status is Status.OK for record in records)
    expected = {first.buffer.id: np.zeros(8), second.buffer.id: np.zeros(4)}
    for target, size in plan:
        start = target.offset_bytes // 4
        expected[target.buffer.id][start : start + size] += 1.0
    np.testing.assert_array_equal(first.numpy(), expected[first.buffer.id])
    np.testing.assert_array_equal(second.numpy(), expected[second.buffer.id])


def test_buffers_made_before_the_trace_keep_their_first_bytes_in_a_long_batch(device):
    """The bytes a buffer held before the trace are captured before the first traced
    command that touches it, wherever in a long run of commands on other buffers that
    command comes."""
    buffers = [device.create_buffer(4, np.float32) for _ in range(3)]
    for value, buffer in enumerate(buffers):
        buffer.fill(float(value + 1), sync=True)
    first, second, third = buffers
    commands = [bump.dispatch_async(4, first) for _ in range(20)]
    commands.append(bump.dispatch_async(4, second))
    commands += [bump.dispatch_async(4, first) for _ in range(20)]
    commands.append(bump.dispatch_async(2, third.view(2)))
    with lnb.trace() as trace:
        device.default_stream.submit(commands)
        device.synchronize()
    for value, buffer in enumerate(buffers):
        initial = trace.buffers[buffer.id].initial
        assert initial is not None, buffer
        captured = trace.captured_bytes(initial).view(np.float32)
        np.testing.assert_array_equal(captured, np.full(4, float(value + 1)))
    np.testing.assert_array_equal(first.numpy(), np.full(4, 41.0))
    np.testing.assert_array_equal(third.numpy(), [3.0, 3.0, 4.0, 4.0])
