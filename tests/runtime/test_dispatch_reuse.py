"""A kernel dispatched again on the same buffers reuses the work done for the last
dispatch, yet checks and records exactly what a first dispatch does."""

import gc
import weakref

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb import errors
from luisa_nb.kernels.checks import KernelChecks


@lnb.kernel
def increment(target):
    i = lnb.dispatch_id().x
    target.write(i, target.read(i) + 1.0)


@lnb.kernel
def copy(source, target):
    i = lnb.dispatch_id().x
    target.write(i, source.read(i))


def test_repeated_dispatches_share_their_arguments_and_all_run(device):
    buffer = device.create_buffer(8, np.float32)
    buffer.fill(0.0)
    commands = [increment.dispatch_async(8, buffer) for _ in range(5)]
    assert len({id(command.arguments) for command in commands}) == 1
    assert len({command.id for command in commands}) == 5
    device.default_stream.submit(commands)
    np.testing.assert_array_equal(buffer.numpy(), np.full(8, 5.0))


def test_dispatches_of_alternating_sizes_each_run_their_own_size(device):
    buffer = device.create_buffer(8, np.float32)
    buffer.fill(0.0)
    sizes = [3, 3, 5, 3, 8, 8, 1]
    commands = [increment.dispatch_async(size, buffer) for size in sizes]
    assert [command.dims for command in commands] == [(size, 1, 1) for size in sizes]
    assert commands[0].dims is commands[1].dims  # one tuple for a run of one size
    device.default_stream.submit(commands)
    expected = [sum(size > i for size in sizes) for i in range(8)]
    np.testing.assert_array_equal(buffer.numpy(), expected)


def test_other_buffers_or_views_get_their_own_arguments(device):
    a = device.create_buffer(8, np.float32)
    b = device.create_buffer(8, np.float32)
    view = b.view(0, 8)
    first = copy.dispatch_async(8, a, b)
    assert copy.dispatch_async(8, b, a).arguments is not first.arguments
    latest = copy.dispatch_async(8, a, view)
    assert latest.arguments is not first.arguments
    assert latest.arguments.views == (a, view)
    assert copy.dispatch_async(4, a, view).arguments is latest.arguments


def test_a_buffer_destroyed_since_is_rejected(device):
    buffer = device.create_buffer(8, np.float32)
    kept = increment.dispatch_async(8, buffer)
    buffer.destroy()
    with pytest.raises(errors.BufferDestroyedError, match="destroyed"):
        increment.dispatch_async(8, buffer)
    assert kept.arguments.views == (buffer,)


def test_a_changed_checks_setting_gets_a_new_executable():
    device = lnb.create_device("cpu", checks=True)
    buffer = device.create_buffer(8, np.float32)
    checked = increment.dispatch_async(8, buffer)
    device.kernel_checks = KernelChecks.OFF
    unchecked = increment.dispatch_async(8, buffer)
    assert unchecked.arguments is not checked.arguments
    assert checked.arguments.executable.checks is KernelChecks.BOUNDS
    assert unchecked.arguments.executable.checks is KernelChecks.OFF


def test_the_kernel_never_keeps_buffers_alive(device):
    buffer = device.create_buffer(8, np.float32)
    increment.dispatch(8, buffer)
    device.synchronize()
    gone = weakref.ref(buffer)
    del buffer
    gc.collect()
    assert gone() is None


def test_reused_arguments_record_the_same_trace_as_new_ones(device):
    buffer = device.create_buffer(8, np.float32)
    with lnb.trace() as trace:
        for _ in range(3):
            increment(buffer, dispatch_size=8)
        device.synchronize()
    records = trace.commands
    assert [record.label for record in records] == ["increment [8]"] * 3
    assert len({record.id for record in records}) == 3
    assert {record.device_ranges for record in records} == {records[0].device_ranges}
    assert records[0].device_ranges[0].buffer == buffer.id


def test_scalar_arguments_are_never_reused(device):
    buffer = device.create_buffer(4, np.float32)

    @lnb.kernel
    def fill(target, value):
        target.write(lnb.dispatch_id().x, value)

    stream = device.default_stream
    stream.submit([fill.dispatch_async(4, buffer, 0.0), fill.dispatch_async(4, buffer, -0.0)])
    assert np.signbit(buffer.numpy()).all()


def test_captured_buffers_follow_the_arguments(device):
    source = device.create_buffer(4, np.float32)
    source.fill(2.0)
    target = device.create_buffer(4, np.float32)
    target.fill(0.0)

    @lnb.kernel
    def add(out):
        i = lnb.dispatch_id().x
        out.write(i, out.read(i) + source.read(i))

    commands = [add.dispatch_async(4, target) for _ in range(3)]
    assert commands[1].arguments is commands[0].arguments
    assert commands[0].arguments.views == (target, source)
    device.default_stream.submit(commands)
    np.testing.assert_array_equal(target.numpy(), np.full(4, 6.0))
    source.destroy()
    with pytest.raises(errors.BufferDestroyedError):
        add.dispatch_async(4, target)


def test_a_dispatch_after_the_commands_are_gone_reuses_the_prepared_launch(device):
    buffer = device.create_buffer(8, np.float32)
    buffer.fill(0.0)
    first = increment.dispatch_async(8, buffer)
    memo = first.arguments.memo
    prepared = first.prepare(device.backend)
    device.default_stream.submit([first])
    device.synchronize()
    gone = weakref.ref(first.arguments)
    del first
    gc.collect()
    assert gone() is None
    again = increment.dispatch_async(8, buffer)
    assert again.arguments.memo is memo
    assert again.prepare(device.backend) is prepared
    device.default_stream.submit([again])
    np.testing.assert_array_equal(buffer.numpy(), np.full(8, 2.0))


def test_a_destroyed_buffer_is_rejected_after_the_commands_are_gone(device):
    buffer = device.create_buffer(8, np.float32)
    increment.dispatch(8, buffer, sync=True)
    gc.collect()
    buffer.destroy()
    with pytest.raises(errors.BufferDestroyedError):
        increment.dispatch_async(8, buffer)


def test_the_kernel_never_keeps_a_device_alive():
    device = lnb.create_device("cpu")
    buffer = device.create_buffer(8, np.float32)
    increment.dispatch(8, buffer, sync=True)
    gone = weakref.ref(device)
    del device, buffer
    gc.collect()
    assert gone() is None
