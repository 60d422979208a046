"""Indirect dispatch in luisa_nb's own API: ``device.create_indirect_dispatch_buffer``,
kernels that record entries, ``Kernel.dispatch_indirect_async`` and its window of
entries, ``kernel_id()``, the errors of bad entries and bad calls, and the trace."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.backends.base import DeviceSpan, OperationFailed
from luisa_nb.errors import (
    CommandFailedError,
    DeviceMismatchError,
    IndirectDispatchError,
    InvalidArgumentError,
    KernelCompileError,
    KernelError,
    KernelIndexError,
)
from luisa_nb.kernels import (
    dispatch_id,
    dispatch_size,
    float3,
    kernel_id,
    set_block_size,
    sync_block,
    uint3,
)
from luisa_nb.kernels.lang.scalar_names import uint
from luisa_nb.recording.records import Access, CommandKind, Status
from luisa_nb.runtime.indirect import finish

MODES = ["c", "python"]


def record_entries(indirect, count):
    """Entry i: i + 1 threads in blocks of 4, kernel id 100 + i."""
    i = dispatch_id().x
    if i == 0:
        indirect.set_dispatch_count(count)
    indirect.set_kernel(i, uint3(4, 1, 1), uint3(i + 1, 1, 1), uint(100 + i))


def add_kernel_id(out):
    set_block_size(4, 1, 1)
    out.atomic_fetch_add(dispatch_id().x, kernel_id())


def count_threads(out):
    """Entry i's element gets its dispatch size from each of its threads: (i + 1) ** 2."""
    set_block_size(4, 1, 1)
    out.atomic_fetch_add(kernel_id() - uint(100), uint(dispatch_size().x))


@pytest.fixture(params=MODES)
def kernels(request):
    """The recording kernel and the two consuming kernels, in C and in Python mode."""
    mode = request.param
    return tuple(lnb.kernel(f, mode=mode) for f in (record_entries, add_kernel_id, count_threads))


def recorded(device, capacity, count, kernels):
    indirect = device.create_indirect_dispatch_buffer(capacity, name="entries")
    kernels[0].dispatch(capacity, indirect, np.uint32(count))
    return indirect


def zeros(device, n=8):
    out = device.create_buffer(n, np.uint32)
    out.fill(0)
    return out


def test_each_entry_runs_with_its_size_and_kernel_id(device, kernels):
    indirect = recorded(device, 6, 5, kernels)
    out = zeros(device)
    kernels[1](out, dispatch_size=indirect)
    # thread x runs in entries x..4 (entry i has i + 1 threads), adding 100 + i in each
    expected = [sum(100 + i for i in range(x, 5)) for x in range(8)]
    assert out.numpy().tolist() == expected
    count, entries = indirect.entries()
    assert count == 5
    assert entries["kernel_id"].tolist() == [100, 101, 102, 103, 104, 105]
    assert entries["dispatch_size"][:, 0].tolist() == [1, 2, 3, 4, 5, 6]
    assert entries["padding"].tolist() == [0] * 6


@pytest.mark.parametrize(
    ("offset", "max_count", "expected"),
    [
        (0, 2**32 - 1, [1, 4, 9, 16, 25, 0]),  # the count (5) of 6 entries
        (2, 2**32 - 1, [0, 0, 9, 16, 25, 36]),  # min(count, capacity - offset) from entry 2
        (1, 2, [0, 4, 9, 0, 0, 0]),  # at most max_count
        (5, 2**32 - 1, [0, 0, 0, 0, 0, 36]),  # the last entry alone
        (0, 0, [0, 0, 0, 0, 0, 0]),  # none
    ],
)
def test_the_window_of_entries_follows_luisa_computes_backends(
    device, kernels, offset, max_count, expected
):
    indirect = recorded(device, 6, 5, kernels)
    out = zeros(device, 6)
    command = kernels[2].dispatch_indirect_async(indirect, out, offset=offset, max_count=max_count)
    device.default_stream.submit([command])
    assert out.numpy().tolist() == expected
    assert [kernel for _, kernel in command.launches] == [
        100 + i for i, threads in enumerate(expected) if threads
    ]


def empty_entry_one(indirect):
    indirect.set_kernel(1, uint3(4, 1, 1), uint3(0, 7, 1), 9)


def test_entries_of_zero_size_are_skipped(device, kernels):
    indirect = recorded(device, 3, 3, kernels)
    lnb.kernel(empty_entry_one).dispatch(1, indirect)
    out = zeros(device, 3)
    command = kernels[2].dispatch_indirect_async(indirect, out)
    device.default_stream.submit([command])
    assert out.numpy().tolist() == [1, 0, 9]
    assert command.launches == [((1, 1, 1), 100), ((3, 1, 1), 102)]


def test_kernel_id_is_zero_in_a_direct_dispatch(device, kernels):
    out = zeros(device, 4)
    out.fill(5)
    kernels[1].dispatch(4, out)
    assert out.numpy().tolist() == [5, 5, 5, 5]


def test_a_captured_indirect_buffer_is_recorded_and_read(device):
    indirect = device.create_indirect_dispatch_buffer(2)

    @lnb.kernel
    def record_captured():
        indirect.set_dispatch_count(2)
        indirect.set_kernel(dispatch_id().x, uint3(256, 1, 1), uint3(3, 1, 1), 7)

    @lnb.kernel
    def add_kernel_id_in_blocks_of_256(out):
        out.atomic_fetch_add(dispatch_id().x, kernel_id())

    record_captured.dispatch(2)
    out = zeros(device, 4)
    add_kernel_id_in_blocks_of_256(out, dispatch_size=indirect)
    assert out.numpy().tolist() == [14, 14, 14, 0]


def test_clear_zeroes_the_count(device, kernels):
    indirect = recorded(device, 4, 4, kernels)
    indirect.clear()
    out = zeros(device, 4)
    kernels[2](out, dispatch_size=indirect)
    assert out.numpy().tolist() == [0, 0, 0, 0]
    assert indirect.entries()[0] == 0


def failure_of(device) -> BaseException:
    with pytest.raises(CommandFailedError) as caught:
        device.synchronize()
    return caught.value.__cause__ or caught.value.failures[0][2]


def test_a_count_above_the_capacity_fails_the_dispatch(device, kernels):
    indirect = recorded(device, 4, 9, kernels)
    out = zeros(device, 4)
    kernels[2](out, dispatch_size=indirect)
    error = failure_of(device)
    assert isinstance(error, IndirectDispatchError)
    assert "dispatch count is 9, more than the 4 entries" in str(error)
    assert "set_dispatch_count(n) with n <= 4" in str(error)
    assert out.numpy().tolist() == [0, 0, 0, 0]  # no entry ran


def test_a_set_kernel_offset_outside_the_buffer_stops_the_kernel(device, kernels):
    indirect = device.create_indirect_dispatch_buffer(3, name="small")
    kernels[0].dispatch(5, indirect, np.uint32(3))
    error = failure_of(device)
    assert isinstance(error, KernelIndexError)
    assert (error.index, error.size, error.buffer, error.thread) == (3, 3, "indirect", (3, 0, 0))
    assert "calls indirect.set_kernel with offset 3" in str(error)
    assert "holds 3 entries" in str(error) and "0 <= offset < 3" in str(error)


def entry_of_block(indirect, block):
    indirect.set_dispatch_count(1)
    indirect.set_kernel(0, block, uint3(4, 1, 1), 0)


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        ((8, 1, 1), "block size (8, 1, 1), but"),
        ((0, 1, 1), "block size (0, 1, 1) (not a valid block size: each axis at least 1"),
    ],
)
def test_an_entry_with_another_block_size_fails_the_dispatch(device, kernels, block, reason):
    indirect = device.create_indirect_dispatch_buffer(1)
    lnb.kernel(entry_of_block).dispatch(1, indirect, uint3(*block))
    kernels[2](zeros(device, 4), dispatch_size=indirect)
    error = failure_of(device)
    assert isinstance(error, IndirectDispatchError)
    assert f"entry 0 has {reason}" in str(error)
    assert "runs blocks of (4, 1, 1)" in str(error)


def test_an_indirect_buffer_of_another_device_is_refused(device, kernels):
    other = lnb.create_device("cpu")
    indirect = other.create_indirect_dispatch_buffer(2)
    with pytest.raises(DeviceMismatchError, match=r"create the indirect dispatch buffer on"):
        kernels[2].dispatch_indirect_async(indirect, zeros(device))


def test_bad_offsets_and_capacities_are_refused(device, kernels):
    indirect = device.create_indirect_dispatch_buffer(4)
    out = zeros(device)
    with pytest.raises(IndirectDispatchError, match=r"offset 4 is outside .* 0 <= offset < 4"):
        kernels[2].dispatch_indirect_async(indirect, out, offset=4)
    with pytest.raises(InvalidArgumentError, match="max_count must be a non-negative int"):
        kernels[2].dispatch_indirect_async(indirect, out, max_count=-1)
    for capacity in (0, 2.5, True):
        with pytest.raises(InvalidArgumentError, match="indirect dispatch buffer"):
            device.create_indirect_dispatch_buffer(capacity)


def writes_a_word(i):
    i.write(0, uint(1))


def float_block_size(i):
    i.set_kernel(0, float3(1.0), uint3(1, 1, 1), 0)


def float_count(i):
    i.set_dispatch_count(1.5 * dispatch_id().x)


def two_arguments(i):
    i.set_kernel(0, uint3(1, 1, 1))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (writes_a_word, "have only .set_dispatch_count(count) and .set_kernel"),
        (float_block_size, "block_size must be a uint3, got a float3 value"),
        (float_count, "count must be a uint, got a float32 value; convert it with uint"),
        (two_arguments, "set_kernel(offset, block_size, size, kernel_id) takes 4 argument"),
    ],
)
def test_kernel_methods_are_checked_when_compiled(device, body, message):
    indirect = device.create_indirect_dispatch_buffer(2)
    with pytest.raises(KernelCompileError) as caught:
        lnb.kernel(body).dispatch(1, indirect)
    assert message in str(caught.value)


@lnb.kernel
def kernel_id_in_a_callable():
    return kernel_id()


def calls_kernel_id_in_a_callable(out):
    out.write(0, kernel_id_in_a_callable())


def test_kernel_id_is_read_in_a_kernel_body_only(device):
    out = zeros(device, 1)
    kernel = lnb.kernel(calls_kernel_id_in_a_callable)
    with pytest.raises(KernelCompileError, match="kernel_id\\(\\) works in a kernel's body"):
        kernel.dispatch(1, out)


def test_the_trace_shows_the_read_of_the_count_and_the_entries(device, kernels):
    indirect = recorded(device, 6, 5, kernels)
    out = zeros(device)
    device.synchronize()
    with lnb.trace() as trace:
        device.default_stream.submit(
            [kernels[2].dispatch_indirect_async(indirect, out, offset=1, max_count=3)]
        )
        device.synchronize()
    [record] = trace.commands
    assert record.kind is CommandKind.DISPATCH and record.status is Status.OK
    assert record.label == f"count_threads [indirect#{indirect.memory.id} 'entries' 1:4]"
    ranges = {(r.buffer, r.offset, r.nbytes, r.access) for r in record.device_ranges}
    assert ranges == {
        (out.id, 0, 32, Access.READ_WRITE),
        (indirect.memory.id, 0, 16, Access.READ),  # the count
        (indirect.memory.id, 16 + 32, 3 * 32, Access.READ),  # entries 1, 2 and 3
    }
    assert out.numpy().tolist() == [0, 4, 9, 16, 0, 0, 0, 0]
    assert trace.buffers[indirect.memory.id].name == "entries"


def test_a_trace_names_an_indirect_buffer_after_its_variable(device, kernels):
    dispatches = recorded(device, 2, 2, kernels)
    dispatches.memory.name = None
    out = zeros(device, 2)
    device.synchronize()
    with lnb.trace() as trace:
        kernels[2](out, dispatch_size=dispatches)
        device.synchronize()
    assert trace.buffers[dispatches.memory.id].name == "dispatches"


@pytest.mark.parametrize("ordered", [False, True], ids=["no-event", "event-wait"])
def test_entries_recorded_on_another_stream_need_an_event(device, kernels, ordered):
    """The read of the count and entries is a device access like any other: recorded on
    one stream and read on another with no event between, it is a device race."""
    indirect = device.create_indirect_dispatch_buffer(4)
    indirect.clear(sync=True)
    recording, running = device.create_stream(), device.create_stream()
    event = device.create_event()
    out = zeros(device, 4)
    device.synchronize()
    with lnb.trace() as trace:
        recording.submit([kernels[0].dispatch_async(4, indirect, np.uint32(4))])
        if ordered:
            recording.signal(event)
            running.wait(event)
        running.submit([kernels[2].dispatch_indirect_async(indirect, out)])
        device.synchronize()
    races = [h for h in trace.hazards if h.kind is HazardKind.DEVICE_RACE]
    if ordered:
        assert races == []
        assert out.numpy().tolist() == [1, 4, 9, 16]
    else:
        assert races and all(race.device.buffer == indirect.memory.id for race in races)


class FailingFlush:
    """A backend whose deferred operation ``span`` failed with ``cause``."""

    def __init__(self, span: DeviceSpan, cause: BaseException | None) -> None:
        self.span, self.cause, self.flushes = span, cause, 0

    def flush(self) -> None:
        self.flushes += 1
        raise OperationFailed(self.span, "the operation failed", self.cause)


def test_a_deferred_operation_is_waited_for_and_its_failure_raised():
    mine, earlier = DeviceSpan(), DeviceSpan()
    cause = IndirectDispatchError("entry 2 failed")
    with pytest.raises(IndirectDispatchError, match="entry 2 failed"):
        finish(FailingFlush(mine, cause), mine)
    with pytest.raises(KernelError, match="the operation failed"):
        finish(FailingFlush(mine, None), mine)
    with pytest.raises(OperationFailed):  # an earlier command's: the worker names that one
        finish(FailingFlush(earlier, cause), mine)
    untouched = FailingFlush(mine, cause)
    finish(untouched, None)
    assert untouched.flushes == 0


def sum_kernel_ids_after_a_barrier(out):
    set_block_size(4, 1, 1)
    identity = kernel_id()
    sync_block()
    out.atomic_fetch_add(dispatch_id().x, identity * uint(10))


@pytest.mark.parametrize("mode", MODES)
def test_kernel_id_reaches_threads_that_run_as_blocks(device, kernels, mode):
    """Entry i of 3 runs 2 * (i + 1) threads with kernel id 100 + i, in blocks of 4 with a
    barrier (the block's threads run together: in Python mode, each on a thread)."""
    indirect = recorded(device, 3, 3, kernels)
    widen = lnb.kernel(widen_entries, mode=mode)
    widen.dispatch(3, indirect)
    out = zeros(device, 6)
    lnb.kernel(sum_kernel_ids_after_a_barrier, mode=mode)(out, dispatch_size=indirect)
    expected = [sum(10 * (100 + i) for i in range(3) if x < 2 * (i + 1)) for x in range(6)]
    assert out.numpy().tolist() == expected


def widen_entries(indirect):
    i = dispatch_id().x
    indirect.set_kernel(i, uint3(4, 1, 1), uint3(2 * (i + 1), 1, 1), uint(100 + i))
