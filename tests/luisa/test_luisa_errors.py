"""Wrong calls on the luisa-python surface raise a LuisaNbError that is also the builtin a
user expects, before anything is recorded; lists keep their values or are refused, never
truncated."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from helpers.errors import raises_before_anything_is_recorded

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb import errors
from luisa_nb.luisa.builtin import dispatch_id
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa

FROM_LIST = Path(__file__).parent / "programs" / "from_list.py"


def test_an_image_the_machine_cannot_hold_is_a_memory_error(device_name):
    error = raises_before_anything_is_recorded(
        errors.DeviceMemoryError,
        lambda: luisa.Image2D(2**20, 2**20, 4),
        "cannot allocate 17592186044416 bytes (16.0 TiB) for a 1048576x1048576 image of 4 "
        "float32 channels: not enough memory",
    )
    assert isinstance(error, MemoryError)


def test_an_image_too_large_to_address_is_a_value_error(device_name):
    error = raises_before_anything_is_recorded(
        errors.AllocationSizeError,
        lambda: luisa.Image3D(2**20, 2**20, 2**20, 4),
        "a 1048576x1048576x1048576 image of 4 float32 channels takes",
        "Use a smaller size",
    )
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("call", [luisa.synchronize, luisa.execute])
def test_a_stream_that_is_not_one_is_a_type_error(device_name, call):
    error = raises_before_anything_is_recorded(
        errors.InvalidArgumentError,
        lambda: call("x"),
        f"{call.__module__.split('.')[-1]}.{call.__name__}: stream= takes a Stream",
        "luisa.Stream()",
        "got str 'x'",
    )
    assert isinstance(error, TypeError)


def test_copies_and_functions_check_their_stream_first(device_name):
    buffer = luisa.Buffer(4, float)

    @luisa.func
    def ones(target):
        target.write(dispatch_id().x, 1.0)

    calls = [
        lambda: buffer.copy_from(np.ones(4, np.float32), stream="s"),
        lambda: buffer.copy_to(np.ones(4, np.float32), stream="s"),
        lambda: buffer.numpy(stream="s"),
        lambda: ones(buffer, dispatch_size=4, stream="s"),
    ]
    for call in calls:
        raises_before_anything_is_recorded(errors.InvalidArgumentError, call, "got str 's'")
    assert luisa.session.stream().pending == ()  # nothing was added to the list


def test_a_function_needs_a_dispatch_size_and_positional_arguments(device_name):
    buffer = luisa.Buffer(4, float)

    @luisa.func
    def ones(target):
        target.write(dispatch_id().x, 1.0)

    missing = raises_before_anything_is_recorded(
        errors.KernelArgumentError,
        lambda: ones(buffer),
        "kernel 'ones' was called without dispatch_size=",
    )
    keyword = raises_before_anything_is_recorded(
        errors.KernelArgumentError,
        lambda: ones(target=buffer, dispatch_size=4),
        "got target= by keyword; pass them in the order of ones(target)",
    )
    assert isinstance(missing, TypeError) and isinstance(keyword, TypeError)


def test_a_masked_array_is_refused(device_name):
    buffer = luisa.Buffer(4, float)
    masked = np.ma.array(np.arange(4, dtype=np.float32), mask=[0, 1, 0, 0])
    texels = np.ma.array(np.zeros((2, 2, 4), np.float32), mask=True)
    calls = {
        "copy_from": lambda: buffer.copy_from(masked),
        "Buffer.from_array": lambda: luisa.Buffer.from_array(masked),
        "Image2D.from_array": lambda: luisa.Image2D.from_array(texels),
    }
    for what, call in calls.items():
        error = raises_before_anything_is_recorded(
            errors.HostArrayError, call, what, "masked array", "array.filled(value)"
        )
        assert isinstance(error, ValueError)


def test_an_int_beyond_32_bits_is_an_overflow_error(device_name):
    error = raises_before_anything_is_recorded(
        errors.HostValueRangeError,
        lambda: luisa.Buffer.from_list([2**40, 1]),
        "does not fit int (int32)",
        "1099511627776",
        "np.int64 (luisa.long)",
    )
    assert isinstance(error, OverflowError)
    with pytest.raises(errors.HostValueRangeError, match="overflow"):
        luisa.Buffer.from_list([1e39, 1.0])  # beyond float32: not silently inf


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1, 2.5, 3.7], "2.5 (index 1) is float, not int"),
        ([2.5, 1, 3], "1 (index 1) is int, not float"),
        ([True, 2], "2 (index 1) is int, not bool"),
        ([1.0, "x"], "'x' (index 1) is str, not float"),
    ],
)
def test_a_list_of_mixed_types_is_refused_not_truncated(device_name, values, message):
    error = raises_before_anything_is_recorded(
        errors.HostDtypeError,
        lambda: luisa.Buffer.from_list(values),
        message,
        "every value of a list must be of the element type",
        "Convert the values to",
    )
    assert isinstance(error, (TypeError, ValueError))


def test_lists_of_one_type_keep_their_values(device_name):
    assert luisa.Buffer.from_list([1.0, 2.5, 3.75]).numpy().tolist() == [1.0, 2.5, 3.75]
    assert luisa.Buffer.from_list([1, -2, 3]).numpy().tolist() == [1, -2, 3]
    assert luisa.Buffer.from_list([True, False]).numpy().tolist() == [True, False]
    floats = luisa.Buffer(3, float)
    with pytest.raises(errors.HostDtypeError, match=r"1 \(index 0\) is int, not float"):
        floats.copy_from([1, 2, 3])  # as in luisa-python; converting would be a guess
    floats.copy_from([0.5, 1.5, 2.5])
    assert floats.numpy().tolist() == [0.5, 1.5, 2.5]


def test_from_list_agrees_with_real_luisa(capsys, fresh_session):
    """Lists of one type give the same values; mixed lists and ints beyond 32 bits are
    refused by both."""
    require_real_luisa()
    run_on_luisa_nb(FROM_LIST)
    ours = capsys.readouterr().out.splitlines()
    theirs = [line for line in run_on_real_luisa(FROM_LIST).splitlines() if line[:1] != "["]
    assert ours == theirs
    assert "an int, then floats: rejected" in ours


@pytest.mark.timeout(60)
def test_synchronize_in_a_callback_fails_and_the_stream_goes_on():
    """On a stream of a device of its own, which no session closes after a hang."""
    stream = lnb.create_device("cpu").create_stream()
    buffer = stream.device.create_buffer(4)
    buffer.copy_from(np.arange(4, dtype=np.float32), stream=stream)
    stream.add_callback(lambda: luisa.synchronize(stream))
    with pytest.raises(errors.CommandFailedError) as raised:
        luisa.synchronize(stream)
    assert isinstance(raised.value.__cause__, errors.StreamError)
    assert "synchronize() of stream" in str(raised.value.__cause__)
    assert "would never return" in str(raised.value.__cause__)
    assert buffer.numpy(stream=stream).tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.timeout(60)
def test_del_device_in_a_callback_fails_and_the_session_keeps_its_device(fresh_session):
    luisa.init("cpu")
    device = luisa.session.device()
    returned = threading.Event()

    def close_the_session():
        try:
            luisa.del_device()
        finally:
            returned.set()

    device.default_stream.add_callback(close_the_session)
    assert returned.wait(10), "del_device() in a callback never returned"
    assert luisa.session.device() is device and not device.closed
    with pytest.raises(errors.CommandFailedError, match=r"close\(\) of device 'cpu'"):
        luisa.synchronize()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: luisa.buffer(3), "luisa.buffer takes a numpy array or a list, got int 3"),
        (lambda: luisa.bindless_array(2**40), "bindless_array takes a dict of slot -> buffer"),
        (lambda: luisa.bindless_array([1]), "use luisa.BindlessArray.empty(n)"),
    ],
)
def test_a_buffer_or_bindless_array_from_the_wrong_thing_is_a_type_error(
    device_name, call, message
):
    """luisa-python raises TypeError for luisa.buffer(3); luisa_nb made a one-element
    buffer, and bindless_array(2**40) raised AttributeError."""
    error = raises_before_anything_is_recorded(errors.InvalidArgumentError, call, message)
    assert isinstance(error, TypeError)
