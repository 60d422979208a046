"""``.npy`` arrays from a file read as hostile input: the header is read and checked
(dtype, shape, the bytes actually present) before an array is made, and the array is a
view of the bytes read, so nothing is copied and nothing is unpickled."""

from __future__ import annotations

import io
import math
import tokenize
from collections.abc import Collection

import numpy as np
from numpy.lib import format as npy_format

from luisa_nb.errors import TraceFormatError
from luisa_nb.recording.error_text import DAMAGED, error_summary

# Magic, version and length, then a header of at most 10000 bytes (numpy's default limit).
_NPY_HEADER_WINDOW = 16 * 1024
_NPY_HEADER_ERRORS = (ValueError, TypeError, SyntaxError, OverflowError, tokenize.TokenError)


def parse_npy(
    data: bytes | bytearray,
    where: str,
    *,
    dtypes: Collection[np.dtype] | None = None,
    ndim: int | None = None,
) -> np.ndarray:
    """The array in ``.npy`` bytes ``data``, checked before anything is allocated.

    Plain numeric arrays only: no object dtype (no pickles), no structured or subarray
    dtypes, and, when given, one of ``dtypes`` with ``ndim`` dimensions. The header's
    shape times the item size must equal the bytes that follow it. The array is a view
    of ``data`` (writable when ``data`` is a bytearray).
    """
    header = io.BytesIO(bytes(memoryview(data)[:_NPY_HEADER_WINDOW]))
    try:
        version = npy_format.read_magic(header)
        if version == (1, 0):
            shape, fortran_order, dtype = npy_format.read_array_header_1_0(header)
        elif version == (2, 0):
            shape, fortran_order, dtype = npy_format.read_array_header_2_0(header)
        else:
            raise TraceFormatError(
                f"{where} is a version {version[0]}.{version[1]} .npy file; traces hold "
                f"versions 1.0 and 2.0 only, {DAMAGED}"
            )
    except TraceFormatError:
        raise
    except _NPY_HEADER_ERRORS as error:
        raise TraceFormatError(
            f"{where} is not a plain .npy array ({error_summary(error)}); {DAMAGED}"
        ) from None
    _check_npy_dtype(dtype, where, dtypes)
    if any(extent < 0 for extent in shape) or (ndim is not None and len(shape) != ndim):
        wanted = "" if ndim is None else f", not {ndim}-D"
        raise TraceFormatError(f"{where} declares shape {shape}{wanted}; {DAMAGED}")
    count = math.prod(shape)
    present = len(data) - header.tell()
    if count * dtype.itemsize != present:
        raise TraceFormatError(
            f"{where} declares shape {shape} of {dtype} ({count * dtype.itemsize} bytes), but "
            f"{present} bytes follow its header; {DAMAGED}"
        )
    array = np.frombuffer(data, dtype=dtype, count=count, offset=header.tell())
    if fortran_order:
        return array.reshape(shape[::-1]).transpose()
    return array.reshape(shape)


def _check_npy_dtype(dtype: np.dtype, where: str, dtypes: Collection[np.dtype] | None) -> None:
    if dtype.hasobject:
        raise TraceFormatError(
            f"{where} holds Python objects (pickled data), which traces never hold and which "
            "would run code when loaded; pass a file written by Trace.save()"
        )
    if dtype.names is not None or dtype.subdtype is not None or dtype.itemsize == 0:
        raise TraceFormatError(f"{where} has dtype {dtype}, not a plain one; {DAMAGED}")
    if dtypes is not None and dtype not in dtypes:
        allowed = ", ".join(str(np.dtype(option)) for option in dtypes)
        raise TraceFormatError(f"{where} holds {dtype} values, not {allowed}; {DAMAGED}")
