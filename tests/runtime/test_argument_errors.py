"""Calls that are wrong raise a LuisaNbError that is also the builtin a user expects, says
what was wrong and what to do, and happens before anything is recorded or submitted."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb import errors


def _raises_before_anything_is_recorded(error: type[Exception], call, *messages: str):
    """``call()`` raises ``error`` whose message holds each of ``messages``, and an active
    trace records nothing (no command, no sync, no kernel build)."""
    with lnb.trace() as trace, pytest.raises(error) as raised:
        call()
    assert isinstance(raised.value, errors.LuisaNbError)
    for message in messages:
        assert message in str(raised.value)
    assert trace.records == [] and trace.compiles == []
    return raised.value


@pytest.fixture(scope="module", params=["cpu", "dx", "metal", "remote"])
def any_device(request):
    device = lnb.create_device(request.param)
    yield device
    device.close()


def test_a_buffer_larger_than_a_device_addresses_is_a_value_error(any_device):
    error = _raises_before_anything_is_recorded(
        errors.AllocationSizeError,
        lambda: any_device.create_buffer(2**62),
        "a buffer of 4611686018427387904 float32 elements takes 18446744073709551616 bytes "
        "(16.0 EiB)",
        f"device {any_device.name!r} allocates at most 256.0 TiB at once",
        "Use a smaller size",
    )
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("name", ["cpu", "dx", "metal"])
def test_a_buffer_the_machine_cannot_hold_is_a_memory_error(name):
    """128 TiB: under the addressing limit, more than any machine here holds (and than
    47-bit user addresses reach, so overcommitting memory does not make it fit)."""
    device = lnb.create_device(name)
    error = _raises_before_anything_is_recorded(
        errors.DeviceMemoryError,
        lambda: device.create_buffer(2**45, np.float32, name="huge"),
        f"device {name!r} cannot allocate 140737488355328 bytes (128.0 TiB) for a buffer of "
        "35184372088832 float32 elements: not enough memory",
        "Use a smaller size, or destroy() buffers",
    )
    assert isinstance(error, MemoryError)
    assert device.create_buffer(4).numpy().shape == (4,)  # the device goes on


def test_an_image_too_large_to_address_names_its_extent():
    device = lnb.create_device("cpu")
    error = _raises_before_anything_is_recorded(
        errors.AllocationSizeError,
        lambda: device.create_image(2**30, 2**30),
        "a 1073741824x1073741824 image of 4 float32 channels takes",
    )
    assert isinstance(error, ValueError)


@lnb.kernel
def _write_ones(target):
    target.write(lnb.dispatch_id().x, 1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda buffer: _write_ones.dispatch(8, target=buffer),
        lambda buffer: _write_ones(target=buffer, dispatch_size=8),
    ],
    ids=["dispatch", "call"],
)
def test_kernel_arguments_by_keyword_are_a_type_error(device, call):
    buffer = device.create_buffer(8, np.float32)
    error = _raises_before_anything_is_recorded(
        errors.KernelArgumentError,
        lambda: call(buffer),
        "kernel '_write_ones' takes its arguments by position, got target= by keyword",
        "pass them in the order of _write_ones(target)",
    )
    assert isinstance(error, TypeError)


@pytest.mark.parametrize("size", [{}, {"dispatch_size": None}], ids=["missing", "None"])
def test_a_kernel_called_without_a_dispatch_size_is_a_type_error(device, size):
    buffer = device.create_buffer(8, np.float32)
    error = _raises_before_anything_is_recorded(
        errors.KernelArgumentError,
        lambda: _write_ones(buffer, **size),
        "kernel '_write_ones' was called without dispatch_size=",
        "call _write_ones(arguments..., dispatch_size=n)",
    )
    assert isinstance(error, TypeError)


STREAM_CALLS = {
    "copy_from": lambda buffer, stream: buffer.copy_from(np.ones(8, np.float32), stream=stream),
    "copy_to": lambda buffer, stream: buffer.copy_to(np.ones(8, np.float32), stream=stream),
    "copy_to_buffer": lambda buffer, stream: buffer.copy_to_buffer(buffer, stream=stream),
    "fill": lambda buffer, stream: buffer.fill(1.0, stream=stream),
    "numpy": lambda buffer, stream: buffer.numpy(stream=stream),
    "kernel 'dispatch'": lambda buffer, stream: _write_ones.dispatch(8, buffer, stream=stream),
    "kernel 'call'": lambda buffer, stream: _write_ones(buffer, dispatch_size=8, stream=stream),
}


@pytest.mark.parametrize("call", STREAM_CALLS.values(), ids=STREAM_CALLS)
@pytest.mark.parametrize("stream", ["s", 0, object()], ids=["str", "int", "object"])
def test_a_stream_argument_that_is_not_a_stream_is_a_type_error(device, call, stream):
    buffer = device.create_buffer(8, np.float32)
    error = _raises_before_anything_is_recorded(
        errors.InvalidArgumentError,
        lambda: call(buffer, stream),
        "stream= takes a Stream (from device.create_stream() or luisa.Stream())",
        f"got {type(stream).__name__} {stream!r:.20}",
    )
    assert isinstance(error, TypeError)
