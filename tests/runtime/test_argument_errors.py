"""Calls that are wrong raise a LuisaNbError that is also the builtin a user expects, says
what was wrong and what to do, and happens before anything is recorded or submitted."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from helpers.errors import raises_before_anything_is_recorded

import luisa_nb as lnb
from luisa_nb import errors


@pytest.fixture(scope="module", params=["cpu", "dx", "metal", "remote"])
def any_device(request):
    device = lnb.create_device(request.param)
    yield device
    device.close()


def test_a_buffer_larger_than_a_device_addresses_is_a_value_error(any_device):
    error = raises_before_anything_is_recorded(
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
    error = raises_before_anything_is_recorded(
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
    error = raises_before_anything_is_recorded(
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
    error = raises_before_anything_is_recorded(
        errors.KernelArgumentError,
        lambda: call(buffer),
        "kernel '_write_ones' takes its arguments by position, got target= by keyword",
        "pass them in the order of _write_ones(target)",
    )
    assert isinstance(error, TypeError)


@pytest.mark.parametrize("size", [{}, {"dispatch_size": None}], ids=["missing", "None"])
def test_a_kernel_called_without_a_dispatch_size_is_a_type_error(device, size):
    buffer = device.create_buffer(8, np.float32)
    error = raises_before_anything_is_recorded(
        errors.KernelArgumentError,
        lambda: _write_ones(buffer, **size),
        "kernel '_write_ones' was called without dispatch_size=",
        "call _write_ones(arguments..., dispatch_size=n)",
    )
    assert isinstance(error, TypeError)


@pytest.mark.parametrize("dispatch", ["dispatch", "dispatch_async"])
def test_a_dispatch_without_a_size_is_a_type_error(dispatch):
    error = raises_before_anything_is_recorded(
        errors.KernelArgumentError,
        getattr(_write_ones, dispatch),
        "kernel '_write_ones': dispatch size must be an int or a tuple",
        "got None",
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
    error = raises_before_anything_is_recorded(
        errors.InvalidArgumentError,
        lambda: call(buffer, stream),
        "stream= takes a Stream (from device.create_stream() or luisa.Stream())",
        f"got {type(stream).__name__} {stream!r:.20}",
    )
    assert isinstance(error, TypeError)


@pytest.mark.parametrize(
    ("dtype", "value", "expected"),
    [
        (np.float32, None, "None (NoneType) is not a real number"),
        (np.float32, "3", "'3' (str) is not a real number"),
        (np.float32, True, "True (bool) is not a real number"),
        (np.int32, 1.5, "1.5 (float) is not an integer"),
        (np.uint32, 2.0, "2.0 (float) is not an integer"),
        (np.bool_, 2, "2 (int) is not a bool"),
    ],
)
def test_fill_refuses_a_value_numpy_would_change(dtype, value, expected):
    """numpy turned None into NaN, '3' into 3.0, 1.5 into 1 and 2 into True."""
    buffer = lnb.create_device("cpu").create_buffer(4, dtype, name="b")
    error = raises_before_anything_is_recorded(
        errors.HostDtypeError, lambda: buffer.fill(value), "fill buffer#", expected
    )
    assert isinstance(error, TypeError)


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        (np.int32, 2**40),
        (np.uint32, -1),
        (np.int32, np.int64(2**40)),
        (np.float32, 1e39),
    ],
)
def test_fill_refuses_a_value_that_does_not_fit(dtype, value):
    buffer = lnb.create_device("cpu").create_buffer(4, dtype, name="b")
    error = raises_before_anything_is_recorded(
        errors.HostValueRangeError,
        lambda: buffer.fill(value),
        "fill buffer#",
        f"'b': {value!r} does not fit",
        "pass a value in range",
    )
    assert isinstance(error, OverflowError)


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        (np.float32, 2),
        (np.float32, 0.1),
        (np.float32, np.float64("nan")),
        (np.int32, -7),
        (np.uint32, np.uint64(3)),
        (np.bool_, True),
        (np.float64, 1e39),
    ],
)
def test_fill_keeps_the_values_that_fit(dtype, value):
    buffer = lnb.create_device("cpu").create_buffer(4, dtype)
    buffer.fill(value, sync=True)
    np.testing.assert_array_equal(buffer.numpy(), np.full(4, value, dtype))


@pytest.mark.parametrize("name", [3, b"s", ["s"]])
def test_a_stream_name_must_be_text(name):
    device = lnb.create_device("cpu")
    error = raises_before_anything_is_recorded(
        errors.InvalidArgumentError,
        lambda: device.create_stream(name),
        "a stream's name is a str",
        "leave it out",
    )
    assert isinstance(error, TypeError)


@pytest.mark.parametrize("bounds", [(True, 4), (0, np.True_), (False, True)])
def test_view_bounds_are_not_bools(bounds):
    """Python counts True as 1; a bool as a bound is a mistake, as for sizes."""
    buffer = lnb.create_device("cpu").create_buffer(8)
    raises_before_anything_is_recorded(
        errors.ViewRangeError, lambda: buffer.view(*bounds), "view bounds must be integers"
    )


def test_none_in_place_of_a_buffer_that_is_gone_is_a_kernel_error():
    """The kernel remembers its latest buffers weakly; a reference to one that is gone
    gives None, which must not pass for an argument of None."""
    device = lnb.create_device("cpu")

    def dispatch_on_a_buffer_of_its_own() -> weakref.ref:
        buffer = device.create_buffer(8, np.float32)
        _write_ones(buffer, dispatch_size=8)
        device.synchronize()
        return weakref.ref(buffer)

    gone = dispatch_on_a_buffer_of_its_own()
    gc.collect()  # the buffer may be in a reference cycle
    assert gone() is None
    raises_before_anything_is_recorded(
        errors.KernelArgumentError,
        lambda: _write_ones(None, dispatch_size=8),
        "kernel arguments must be buffers",
        "got NoneType None",
    )
