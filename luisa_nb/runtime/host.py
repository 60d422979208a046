"""Host arrays: the checks done before a command is created, the one lock every host read
and write of the runtime holds, and the address ranges a trace records."""

from __future__ import annotations

import threading
import weakref
from typing import Protocol

import numpy as np

from luisa_nb.errors import (
    HostArrayError,
    HostDtypeError,
    HostLayoutError,
    HostReadOnlyError,
    HostSizeError,
)
from luisa_nb.recording.records import HostRange, value_layout

HOST_MEMORY = threading.Lock()
"""Held across every read and write of host memory by the runtime (and the recorder's
timestamp of it), traced or not, so that reads and writes from several workers happen
in one order, the order a trace shows."""

_BYTES = np.dtype(np.uint8)


class HostTransferTarget(Protocol):
    """What :func:`host_bytes` checks a host array against (a buffer view)."""

    dtype: np.dtype
    size: int

    def _name(self) -> str: ...


def host_bytes(array: object, view: HostTransferTarget, writes: bool, action: str) -> np.ndarray:
    """A flat uint8 view of ``array`` after checking it can stand for the elements of
    ``view`` (its ``size`` elements of ``dtype``). Any shape is accepted, as in
    luisa-python; ``writes`` marks a download. Error messages name the copy as ``action``
    and ``view._name()``. Arguments are positional: a keyword costs a slower call."""
    dtype, size = view.dtype, view.size
    if (
        type(array) is np.ndarray
        and array.dtype == dtype
        and array.size == size
        and (flags := array.flags).c_contiguous
        and (flags.writeable or not writes)
    ):
        return (array if array.ndim == 1 else array.reshape(-1)).view(_BYTES)
    what = f"{action} {view._name()}"
    if not isinstance(array, np.ndarray):
        raise HostArrayError(
            f"{what} needs a numpy array, got {type(array).__name__}; wrap it with "
            f"np.asarray(..., dtype=np.{dtype.name})"
        )
    if array.dtype != dtype:
        raise HostDtypeError(
            f"{what}: host array has dtype {array.dtype}, the buffer holds {dtype}; "
            f"convert with array.astype(np.{dtype.name})"
        )
    if array.size != size:
        raise HostSizeError(
            f"{what}: host array has {array.size} elements, the buffer range has {size}; "
            f"pass an array of {size} elements or use buffer.view(start, stop)"
        )
    if not array.flags.c_contiguous:
        raise HostLayoutError(
            f"{what}: host array is not C-contiguous; pass np.ascontiguousarray(array) "
            f"(and copy results back yourself for a download)"
        )
    if writes and not array.flags.writeable:
        raise HostReadOnlyError(
            f"{what}: host array is read-only, so a download cannot write it; pass a "
            f"writable array (e.g. array.copy())"
        )
    return (array if array.ndim == 1 else array.reshape(-1)).view(_BYTES)


_host_ranges: dict[int, tuple[weakref.ref, tuple[int, ...], np.dtype, HostRange]] = {}


def _forget(key: int) -> None:
    _host_ranges.pop(key, None)


def host_range(array: np.ndarray) -> HostRange:
    """The address range ``array`` occupies, as a trace record field. Asking numpy for an
    address costs ~1 µs, so ranges are remembered per live array (a program uploads the
    same arrays over and over); records of one array share its range and its name."""
    key = id(array)
    entry = _host_ranges.get(key)
    if entry is not None:
        reference, shape, dtype, known = entry
        # the same live array with the shape and dtype it had has the same range (the
        # array's own shape: a record dtype's range has an axis more)
        if reference() is array and shape == array.shape and dtype is array.dtype:
            return known
    dtype, shape = value_layout(array.dtype, array.shape)
    known = HostRange(array.__array_interface__["data"][0], array.nbytes, dtype, shape)
    reference = weakref.ref(array, lambda _, key=key: _forget(key))
    _host_ranges[key] = (reference, array.shape, array.dtype, known)
    return known
