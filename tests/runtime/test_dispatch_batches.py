"""Consecutive compiled dispatches run in one backend call: the same results, records,
times and failures as dispatches run one by one."""

from __future__ import annotations

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


def test_a_batch_times_each_dispatch_on_the_trace_clock(device):
    buffer = device.create_buffer(4, np.float32)
    buffer.fill(0.0, sync=True)
    with lnb.trace() as trace:
        before = time.perf_counter_ns()
        device.default_stream.submit([add.dispatch_async(4, buffer, 1.0) for _ in range(5)])
        device.synchronize()
        after = time.perf_counter_ns()
    records = trace.commands
    assert len(records) == 5
    times = [t for record in records for t in (record.started, record.finished)]
    assert before <= times[0] and times[-1] <= after
    assert times == sorted(times)
    assert all(a.finished == b.started for a, b in pairwise(records))


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
