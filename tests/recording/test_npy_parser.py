"""``.npy`` blobs from a trace file: headers checked before an array is made."""

from __future__ import annotations

import io
import struct
import tracemalloc

import numpy as np
import pytest

from luisa_nb.errors import TraceFormatError
from luisa_nb.recording.npy_parser import parse_npy

MIB = 1 << 20


def npy(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array, allow_pickle=False)
    return stream.getvalue()


def test_npy_arrays_read_back_as_writable_views():
    data = bytearray(npy(np.arange(12, dtype="<i4").reshape(3, 4)))
    array = parse_npy(data, "a.npy")
    np.testing.assert_array_equal(array, np.arange(12).reshape(3, 4))
    assert array.flags.writeable
    fortran = parse_npy(bytearray(npy(np.asfortranarray(np.arange(6.0).reshape(2, 3)))), "f.npy")
    np.testing.assert_array_equal(fortran, np.arange(6.0).reshape(2, 3))
    assert parse_npy(npy(np.zeros(0, np.uint8)), "e.npy").shape == (0,)


def header(text: str, version=(1, 0)) -> bytes:
    encoded = text.encode("latin1")
    length = struct.pack("<H" if version == (1, 0) else "<I", len(encoded))
    return b"\x93NUMPY" + bytes(version) + length + encoded


@pytest.mark.parametrize(
    "data, message",
    [
        (
            header("{'descr': '|u1', 'fortran_order': False, 'shape': (1073741824,), }") + b"ab",
            r"declares shape \(1073741824,\) of uint8 \(1073741824 bytes\), but 2 bytes follow",
        ),
        (npy(np.zeros(3, np.uint8)) + b"x", r"declares shape \(3,\) .* but 4 bytes follow"),
        (npy(np.zeros(3, np.uint8))[:-1], r"but 2 bytes follow"),
        (header("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"), "Python objects"),
        (header("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (), }"), "not a pl"),
        (header("{'descr': '|V0', 'fortran_order': False, 'shape': (1,), }"), "not a plain one"),
        (header("{'descr': '|u1', 'fortran_order': False, 'shape': (-1,), }"), r"shape \(-1,\)"),
        (header("{'descr': '|u1', 'fortran_order': 0, 'shape': (1,), }"), "fortran_order"),
        (header("{'descr': '|u1', 'shape': " + "(" * 500 + ")" * 500 + "}"), "not a plain .npy"),
        (header("{}", (3, 0)), "version 3.0 .npy file"),
        (b"\x93NUMPY\x01\x00\xff\xff{", "not a plain .npy array"),
        (b"PK\x03\x04", "not a plain .npy array"),
    ],
)
def test_bad_npy_data_is_refused_before_allocating(data, message):
    tracemalloc.start()
    try:
        with pytest.raises(TraceFormatError, match=message) as caught:
            parse_npy(data, "blob.npy")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MIB and "\n" not in str(caught.value)


def test_npy_dtype_and_dimensions_can_be_required():
    data = npy(np.zeros((2, 2), np.float64))
    with pytest.raises(TraceFormatError, match="holds float64 values, not uint8"):
        parse_npy(data, "blob.npy", dtypes=[np.dtype(np.uint8)])
    with pytest.raises(TraceFormatError, match=r"declares shape \(2, 2\), not 1-D"):
        parse_npy(data, "blob.npy", ndim=1)
