import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb import errors


def test_round_trip_of_any_shape(device):
    buffer = device.create_buffer(12, np.int32)
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    buffer.copy_from(data)
    out = np.zeros((2, 6), np.int32)
    buffer.copy_to(out)
    np.testing.assert_array_equal(out.reshape(-1), np.arange(12))


def test_views_copy_their_own_elements(device):
    buffer = device.create_buffer(8, np.float32)
    buffer.fill(-1.0)
    buffer.view(2, 5).copy_from(np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(buffer.numpy(), [-1, -1, 1, 2, 3, -1, -1, -1])
    np.testing.assert_array_equal(buffer.view(3, 4).numpy(), [2])
    np.testing.assert_array_equal(buffer.view(2, 5).view(1, 3).numpy(), [2, 3])


def test_copy_to_buffer_and_fill(device):
    source = device.create_buffer(4, np.uint32)
    target = device.create_buffer(6, np.uint32)
    source.copy_from(np.array([7, 8, 9, 10], np.uint32))
    target.fill(1)
    source.view(1, 3).copy_to_buffer(target.view(4, 6))
    np.testing.assert_array_equal(target.numpy(), [1, 1, 1, 1, 8, 9])


def test_sync_defaults_follow_luisa_python(device):
    buffer = device.create_buffer(4, np.float64)
    buffer.copy_from(np.ones(4))
    out = np.zeros(4)
    buffer.copy_to(out)  # sync=True by default: written on return
    np.testing.assert_array_equal(out, np.ones(4))


BAD_INPUTS = [
    ("dtype", lambda b: b.copy_from_async(np.zeros(8, np.float64)), errors.HostDtypeError),
    ("size", lambda b: b.copy_from_async(np.zeros(9, np.float32)), errors.HostSizeError),
    ("layout", lambda b: b.copy_from_async(np.zeros(16, np.float32)[::2]), errors.HostLayoutError),
    ("list", lambda b: b.copy_from_async([0.0] * 8), errors.HostArrayError),
    (
        "read-only download target",
        lambda b: b.copy_to_async(_read_only()),
        errors.HostReadOnlyError,
    ),
    ("view out of range", lambda b: b.view(4, 9), errors.ViewRangeError),
    ("negative view", lambda b: b.view(-1, 2), errors.ViewRangeError),
    ("fill value", lambda b: b.fill_async("text"), errors.HostDtypeError),
    (
        "copy to non-buffer",
        lambda b: b.copy_to_buffer_async(np.zeros(8)),
        errors.InvalidArgumentError,
    ),
    ("copy size", lambda b: b.copy_to_buffer_async(b.view(0, 4)), errors.BufferMismatchError),
    ("masked upload", lambda b: b.copy_from(_masked()), errors.HostArrayError),
    ("masked download", lambda b: b.copy_to(_masked()), errors.HostArrayError),
]


def _masked():
    return np.ma.array(np.arange(8, dtype=np.float32), mask=[0, 1, 0, 0, 0, 0, 0, 0])


def _read_only():
    array = np.zeros(8, np.float32)
    array.flags.writeable = False
    return array


@pytest.mark.parametrize(("case", "call", "error"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_rejected_before_anything_is_enqueued(device, case, call, error):
    buffer = device.create_buffer(8, np.float32)
    buffer.fill(5.0, sync=True)
    with lnb.trace() as trace, pytest.raises(error) as raised:
        call(buffer)
    assert isinstance(raised.value, errors.LuisaNbError)
    assert "buffer#" in str(raised.value) or case in ("view out of range", "negative view")
    assert trace.records == []
    np.testing.assert_array_equal(buffer.numpy(), np.full(8, 5.0))


def test_a_masked_array_is_refused_with_what_to_pass_instead(device):
    buffer = device.create_buffer(8, np.float32)
    with pytest.raises(ValueError, match=r"mask a copy would drop; pass array\.filled\(value\)"):
        buffer.copy_from(_masked())
    with pytest.raises(ValueError, match=r"download into array\.data"):
        buffer.copy_to(_masked())


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_matrix_is_copied_as_its_data(device):
    """``np.matrix`` (always 2-D, C-contiguous) both ways, under both policies."""
    buffer = device.create_buffer(6, np.float32)
    buffer.copy_from(np.matrix(np.arange(6, dtype=np.float32).reshape(2, 3)))
    out = np.matrix(np.zeros((3, 2), np.float32))
    buffer.copy_to(out)
    np.testing.assert_array_equal(np.asarray(out).reshape(-1), np.arange(6))


def test_read_only_host_array_can_be_uploaded(device):
    buffer = device.create_buffer(8, np.float32)
    data = np.arange(8, dtype=np.float32)
    data.flags.writeable = False
    buffer.copy_from(data)
    np.testing.assert_array_equal(buffer.numpy(), data)


def test_destroyed_buffer_is_rejected(device):
    buffer = device.create_buffer(8, np.float32)
    command = buffer.copy_from_async(np.zeros(8, np.float32))
    buffer.destroy()
    with pytest.raises(errors.BufferDestroyedError, match="destroyed"):
        buffer.copy_from_async(np.zeros(8, np.float32))
    with pytest.raises(errors.BufferDestroyedError):
        device.default_stream.submit([command])
    assert command.stream_id is None


def test_other_devices_buffers_are_rejected(staging):
    first = lnb.create_device("cpu", staging=staging)
    second = lnb.create_device("cpu", staging=staging)
    a = first.create_buffer(4, np.float32)
    b = second.create_buffer(4, np.float32)
    with pytest.raises(errors.DeviceMismatchError):
        a.copy_to_buffer_async(b)
    with pytest.raises(errors.DeviceMismatchError):
        second.default_stream.submit([a.fill_async(1.0)])


@pytest.mark.parametrize(
    ("size", "dtype"), [(0, np.float32), (-3, np.float32), (2.5, np.float32), (4, np.complex64)]
)
def test_create_buffer_rejects_bad_size_and_dtype(size, dtype):
    device = lnb.create_device("cpu")
    with pytest.raises(errors.InvalidArgumentError):
        device.create_buffer(size, dtype)


@pytest.mark.parametrize("dtype", ["nonsense", 5, object(), None, "f16", [np.float32]])
def test_a_dtype_that_is_not_one_is_rejected_not_turned_into_float64(dtype):
    device = lnb.create_device("cpu")
    with pytest.raises(errors.InvalidArgumentError, match="buffers hold one of"):
        device.create_buffer(4, dtype)


@pytest.mark.parametrize(
    ("dtype", "expected"), [("float32", np.float32), ("<i4", np.int32), (np.uint64, np.uint64)]
)
def test_dtype_names_and_types_are_accepted(dtype, expected):
    assert lnb.create_device("cpu").create_buffer(4, dtype).dtype == np.dtype(expected)


def test_unknown_backend_and_staging_say_what_to_do():
    with pytest.raises(errors.BackendNotFoundError, match="did you mean 'cpu'"):
        lnb.create_device("cpux")
    with pytest.raises(errors.ConfigurationError, match="'submit' or 'execute'"):
        lnb.create_device("cpu", staging="later")
    assert lnb.create_device("cpu").staging == "execute"
    assert lnb.create_device("cpu").info == {
        "name": "cpu",
        "simulated": False,
        "staging": "execute",
        "staging_capacity": None,
        "readback": "execute",
        "description": "host memory as device memory; kernels compiled to C with OpenMP",
    }
