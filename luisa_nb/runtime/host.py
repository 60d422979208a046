"""Host arrays: the checks done before a command is created, the one lock every host read
and write of the runtime holds, and the address ranges a trace records."""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Protocol

import numpy as np

from luisa_nb.errors import (
    HostArrayError,
    HostDtypeError,
    HostLayoutError,
    HostReadOnlyError,
    HostSizeError,
)
from luisa_nb.recording.naming import data_address
from luisa_nb.recording.records import HostRange, value_layout
from luisa_nb.recording.row_appender import PYTHON_HOOKS_VARIABLE

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
    array = plain_array(array, what, writes)
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


def plain_array(array: np.ndarray, what: str, writes: bool) -> np.ndarray:
    """``array`` as a plain ndarray over the same memory: an ``np.matrix`` or an
    ``np.memmap`` is its data. A masked array is refused, since a copy would ignore its
    mask. ``what`` names the copy in the message; ``writes`` marks a download."""
    if isinstance(array, np.ma.MaskedArray):
        if writes:
            raise HostArrayError(
                f"{what}: host array is a masked array, whose mask a download would leave "
                f"as it is; download into array.data (or a plain array) and set the mask "
                f"afterwards"
            )
        raise HostArrayError(
            f"{what}: host array is a masked array, whose mask a copy would drop; pass "
            f"array.filled(value) to send value in place of the masked elements, or "
            f"array.data to send the values under the mask as they are"
        )
    return array if type(array) is np.ndarray else array.view(np.ndarray)


ArrayMemo = tuple[weakref.ref, tuple[int, ...], np.dtype, Any]
"""A value worked out from a host array, kept with the array (weakly) and the shape and
dtype it had: the value holds while the same live array keeps that shape and dtype (its
own shape: a record dtype's range has an axis more)."""


def array_memo(array: np.ndarray, value: Any) -> ArrayMemo:
    """``value`` remembered for ``array`` as it is now."""
    return (weakref.ref(array), array.shape, array.dtype, value)


def recalled(memo: ArrayMemo | None, array: np.ndarray) -> Any:
    """The value of ``memo`` if it was made for ``array`` as ``array`` is now, else ``None``."""
    if (
        memo is not None
        and memo[0]() is array
        and memo[1] == array.shape
        and memo[2] is array.dtype
    ):
        return memo[3]
    return None


_host_ranges: dict[int, ArrayMemo] = {}
_sweep_at = 64
"""The size of :data:`_host_ranges` at which :func:`host_range` next drops the memos of
freed arrays. A weak reference with a callback per array would drop each as it goes,
at the cost of a Python call per array freed: a notebook loop frees one per step."""


def _drop_freed_host_ranges() -> None:
    """Drop the memos of freed arrays, and sweep again when the live ones have doubled."""
    global _sweep_at
    for key, memo in list(_host_ranges.items()):
        if memo[0]() is None and _host_ranges.get(key) is memo:
            del _host_ranges[key]
    _sweep_at = max(64, 2 * len(_host_ranges))


def python_host_range(array: np.ndarray) -> HostRange:
    """The address range ``array`` occupies, as a trace record field. Working it out costs
    ~1 µs, so ranges are remembered per live array (a program uploads the
    same arrays over and over); records of one array share its range and its name."""
    key = id(array)
    dtype, shape = array.dtype, array.shape
    memo = _host_ranges.get(key)  # recalled(), written out: one Python call per new array
    if memo is not None and memo[0]() is array and memo[1] == shape and memo[2] is dtype:
        return memo[3]
    if dtype.fields is None and dtype.subdtype is None:  # value_layout() of a plain dtype
        known = HostRange(data_address(array), array.nbytes, dtype.str, shape)
    else:
        known = HostRange(data_address(array), array.nbytes, *value_layout(dtype, shape))
    if len(_host_ranges) >= _sweep_at:
        _drop_freed_host_ranges()
    _host_ranges[key] = (weakref.ref(array), shape, dtype, known)  # array_memo(), written out
    return known


host_range = python_host_range
"""The address range of a host array (:func:`python_host_range`): in C, with the same memo
table, where the extension ``_submission_fields`` was built and the recorder's Python hooks
are not asked for (``LUISA_NB_PYTHON_RECORDER``). Its ranges and memo references are left
out of the garbage collector's passes: a loop that uploads a new array each step keeps one
of each per step."""
if os.environ.get(PYTHON_HOOKS_VARIABLE, "") in ("", "0"):
    try:
        from luisa_nb.runtime._submission_fields import (  # noqa: F401 (what the runtime imports from here)
            host_range,
            use_host_ranges,
        )
    except ImportError:  # not built (no C compiler or Python headers at install)
        pass
    else:
        use_host_ranges(_host_ranges, HostRange, value_layout)
