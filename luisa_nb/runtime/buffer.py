"""Buffers and buffer views, with luisa-python's copy methods.

Synchronous forms follow luisa-python's defaults: ``copy_from(arr, sync=False)`` returns
once the upload is submitted, ``copy_to(arr, sync=True)`` once the host array is written.
Each ``*_async`` form checks its arguments and returns a command for ``Stream.submit``.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.backends.base import Allocation, KernelBuffer
from luisa_nb.errors import (
    AllocationSizeError,
    BufferDestroyedError,
    BufferMismatchError,
    DeviceMemoryError,
    DeviceMismatchError,
    HostDtypeError,
    HostValueRangeError,
    InvalidArgumentError,
    ViewRangeError,
)
from luisa_nb.recording.clock import now
from luisa_nb.recording.records import Access, DeviceRange
from luisa_nb.runtime.commands import (
    Command,
    CopyCommand,
    DownloadCommand,
    FillCommand,
    UploadCommand,
)
from luisa_nb.runtime.host import ArrayMemo, host_bytes
from luisa_nb.runtime.stream import Stream, check_stream, submit_one

if TYPE_CHECKING:
    from luisa_nb.runtime.device import Device

_buffer_ids = itertools.count(1)


_BOOLS = (bool, np.bool_)
_INTEGERS = (int, np.integer)
_REALS = (int, float, np.integer, np.floating)


def _is_index(value: Any) -> bool:
    """Whether ``value`` is an integer, not a bool (which Python counts as one)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def next_buffer_id() -> int:
    """A process-unique id for a buffer, or for another runtime's buffer in a trace."""
    return next(_buffer_ids)


_BINARY_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")


def bytes_text(nbytes: int) -> str:
    """``nbytes`` in binary units, e.g. ``16.0 TiB``."""
    power = min((nbytes.bit_length() - 1) // 10, len(_BINARY_UNITS)) if nbytes > 0 else 0
    if power == 0:
        return f"{nbytes} bytes"
    return f"{nbytes / 1024**power:.1f} {_BINARY_UNITS[power - 1]}"


class BufferView:
    """Elements ``[start, start + size)`` of a buffer, on the buffer's device and of its
    dtype."""

    __lnb_buffer__ = True
    __slots__ = (
        "__weakref__",
        "_device_ranges",
        "_kernel_buffer",
        "buffer",
        "device",
        "download_fields",
        "dtype",
        "nbytes",
        "offset_bytes",
        "size",
        "start",
        "upload_fields",
    )
    device: Device
    dtype: np.dtype

    def __init__(self, buffer: Buffer, start: int, size: int) -> None:
        self.buffer = buffer
        self.device = buffer.device
        self.dtype = buffer.dtype
        self.start = start
        self.size = size
        itemsize = buffer.dtype.itemsize
        self.offset_bytes = start * itemsize
        self.nbytes = size * itemsize
        self._device_ranges: dict[str, tuple[DeviceRange]] = {}
        self.upload_fields: ArrayMemo | None = None
        """The trace fields of the latest upload into this view, remembered with the host
        array it read (the uploads of a loop that sends one array's unchanged bytes share
        them); likewise ``download_fields``."""
        self.download_fields: ArrayMemo | None = None
        self._kernel_buffer: KernelBuffer | None = None

    # -- geometry --------------------------------------------------------------------

    @property
    def allocation(self) -> Allocation:
        return self.buffer.allocation

    def __len__(self) -> int:
        return self.size

    @property
    def kernel_buffer(self) -> KernelBuffer:
        """The device memory of this view as commands hold it, so that ``destroy()`` on a
        buffer with commands in flight cannot free memory under them."""
        memory = self._kernel_buffer
        if memory is None or memory.allocation is not self.buffer._allocation:
            memory = KernelBuffer(self.allocation, self.offset_bytes, self.nbytes, self.dtype)
            self._kernel_buffer = memory
        return memory

    def device_ranges(self, access: Access) -> tuple[DeviceRange]:
        """This view as the device range of a trace record; made once per access (kept by
        the access's value: hashing an enum member is a Python call)."""
        ranges = self._device_ranges.get(access._value_)
        if ranges is None:
            ranges = (DeviceRange(self.buffer.id, self.offset_bytes, self.nbytes, access),)
            self._device_ranges[access._value_] = ranges
        return ranges

    def view(self, start: int = 0, stop: int | None = None) -> BufferView:
        """Elements ``[start, stop)`` of this view (``stop`` defaults to its end)."""
        stop = self.size if stop is None else stop
        if not (_is_index(start) and _is_index(stop)):
            raise ViewRangeError(f"view bounds must be integers, got {start!r} and {stop!r}")
        if not 0 <= start <= stop <= self.size:
            raise ViewRangeError(
                f"view [{start}, {stop}) is outside {self._name()} of {self.size} elements; "
                f"use 0 <= start <= stop <= {self.size}"
            )
        return BufferView(self.buffer, self.start + int(start), int(stop) - int(start))

    def _name(self) -> str:
        name = f"buffer#{self.buffer.id}"
        if self.buffer.name:
            name += f" {self.buffer.name!r}"
        if self is not self.buffer:
            name += f"[{self.start}:{self.start + self.size}]"
        return name

    # -- commands --------------------------------------------------------------------

    def copy_from_async(self, array: np.ndarray) -> UploadCommand:
        """An upload of ``array`` into this view."""
        self.buffer.check_alive()
        return UploadCommand(self, array, host_bytes(array, self, False, "copy_from"))

    def copy_to_async(self, array: np.ndarray) -> DownloadCommand:
        """A download of this view into ``array``."""
        self.buffer.check_alive()
        return DownloadCommand(self, array, host_bytes(array, self, True, "copy_to"))

    def copy_to_buffer_async(self, other: BufferView) -> CopyCommand:
        """A device copy of this view into ``other`` (same dtype and size)."""
        self.buffer.check_alive()
        if not isinstance(other, BufferView):
            raise InvalidArgumentError(
                f"copy_to_buffer from {self._name()} needs a buffer or view, got "
                f"{type(other).__name__}; upload host arrays with copy_from"
            )
        other.buffer.check_alive()
        if other.device is not self.device:
            raise DeviceMismatchError(
                f"copy_to_buffer: {self._name()} is on {self.device.name!r} and "
                f"{other._name()} on {other.device.name!r}; copy through the host"
            )
        if other.dtype != self.dtype:
            raise BufferMismatchError(
                f"copy_to_buffer: {self._name()} holds {self.dtype}, {other._name()} holds "
                f"{other.dtype}; both must hold the same dtype"
            )
        if other.size != self.size:
            raise BufferMismatchError(
                f"copy_to_buffer: {self._name()} has {self.size} elements, {other._name()} "
                f"has {other.size}; use view(start, stop) to match them"
            )
        return CopyCommand(self, other)

    def fill_async(self, value: Any) -> FillCommand:
        """Set every element of this view to ``value``."""
        self.buffer.check_alive()
        if np.ndim(value) != 0:
            raise InvalidArgumentError(
                f"fill {self._name()}: needs one {self.dtype} value, got {type(value).__name__} "
                f"of shape {np.shape(value)}; upload arrays with copy_from"
            )
        return FillCommand(self, fill_element(value, self.dtype, f"fill {self._name()}"))

    # -- synchronous forms -----------------------------------------------------------

    def _submit(self, command: Command, stream: Stream | None, sync: bool) -> None:
        submit_one(command, stream, sync)

    def copy_from(
        self, array: np.ndarray, *, sync: bool = False, stream: Stream | None = None
    ) -> None:
        if stream is not None:
            check_stream(stream, "copy_from")
        self._submit(self.copy_from_async(array), stream, sync)

    def copy_to(
        self, array: np.ndarray, *, sync: bool = True, stream: Stream | None = None
    ) -> None:
        if stream is not None:
            check_stream(stream, "copy_to")
        self._submit(self.copy_to_async(array), stream, sync)

    def copy_to_buffer(
        self, other: BufferView, *, sync: bool = False, stream: Stream | None = None
    ) -> None:
        if stream is not None:
            check_stream(stream, "copy_to_buffer")
        self._submit(self.copy_to_buffer_async(other), stream, sync)

    def fill(self, value: Any, *, sync: bool = False, stream: Stream | None = None) -> None:
        if stream is not None:
            check_stream(stream, "fill")
        self._submit(self.fill_async(value), stream, sync)

    def numpy(self, *, stream: Stream | None = None) -> np.ndarray:
        """A new host array with this view's contents, after the stream's earlier work."""
        out = np.empty(self.size, dtype=self.dtype)
        self.copy_to(out, sync=True, stream=stream)
        return out

    def __repr__(self) -> str:
        return f"<BufferView {self._name()} {self.dtype} x{self.size}>"


_NUMBER_KINDS = {"b": (bool, np.bool_), "i": _INTEGERS, "u": _INTEGERS, "f": _REALS}


def fill_element(value: Any, dtype: np.dtype, what: str) -> np.ndarray:
    """``value`` as one element of ``dtype``, refused where numpy would change it without
    a word: ``None`` or ``"3"`` into a float, ``1.5`` into an int, ``2`` into a bool, a
    number that does not fit. Vectors and structs (record dtypes) convert as numpy does.
    ``what`` names the command in messages."""
    accepted = _NUMBER_KINDS.get(dtype.kind)
    if accepted is not None and (
        not isinstance(value, accepted) or (dtype.kind != "b" and isinstance(value, _BOOLS))
    ):
        kind = {"b": "a bool", "f": "a real number"}.get(dtype.kind, "an integer")
        raise HostDtypeError(
            f"{what}: {value!r:.40} ({type(value).__name__}) is not {kind}, which the "
            f"buffer's {dtype} elements need; pass {kind} (convert it yourself if you mean to)"
        )
    try:
        with np.errstate(over="raise"):
            element = np.array([value], dtype=dtype)
    except (OverflowError, FloatingPointError) as error:
        raise HostValueRangeError(
            f"{what}: {value!r:.40} does not fit {dtype} ({error}); pass a value in range"
        ) from None
    except (TypeError, ValueError) as error:
        raise HostDtypeError(f"{what}: {value!r:.40} is not a {dtype} value ({error})") from None
    changed = accepted is not None and element[0] != value and not np.isnan(element[0])
    if changed and (dtype.kind in "iu" or np.isinf(element[0])):  # not a rounded float
        raise HostValueRangeError(
            f"{what}: {value!r:.40} does not fit {dtype}; pass a value in range"
        )
    return element


class Buffer(BufferView):
    """``size`` elements of ``dtype`` in one device's memory."""

    def __init__(self, device: Device, size: int, dtype: Any, name: str | None = None) -> None:
        self.id = next_buffer_id()
        self.name = name
        self.device = device
        self.dtype = np.dtype(dtype)
        self.created = now()
        """When the buffer was made (host clock): a trace started before holds all its
        writes, and its zeros before the first."""
        self._allocation: Allocation | None = self._allocate(size)
        super().__init__(self, 0, size)

    def _allocate(self, size: int) -> Allocation:
        """Device memory for ``size`` elements; a size the backend cannot address is
        refused before it is asked, and its ``MemoryError`` names the buffer."""
        nbytes = size * self.dtype.itemsize
        backend = self.device.backend
        limit = backend.max_allocation_bytes
        if nbytes > limit:
            raise AllocationSizeError(
                f"{self._description(size)} takes {nbytes} bytes ({bytes_text(nbytes)}); "
                f"device {self.device.name!r} allocates at most {bytes_text(limit)} at once. "
                f"Use a smaller size, or split the data into parts"
            )
        try:
            return backend.allocate(nbytes)
        except MemoryError:
            raise DeviceMemoryError(
                f"device {self.device.name!r} cannot allocate {nbytes} bytes "
                f"({bytes_text(nbytes)}) for {self._description(size)}: not enough memory. "
                f"Use a smaller size, or destroy() buffers that are no longer needed"
            ) from None

    def _description(self, size: int) -> str:
        return f"a buffer of {size} {self.dtype} elements"

    @property
    def allocation(self) -> Allocation:
        self.check_alive()
        return self._allocation

    @property
    def destroyed(self) -> bool:
        return self._allocation is None

    def check_alive(self) -> None:
        if self._allocation is None:
            raise BufferDestroyedError(
                f"buffer#{self.id}{' ' + repr(self.name) if self.name else ''} was destroyed; "
                f"create a new one with device.create_buffer()"
            )

    def destroy(self) -> None:
        """Release the device memory once commands already created no longer need it."""
        self._allocation = None
        self._kernel_buffer = None

    def __repr__(self) -> str:
        state = " destroyed" if self.destroyed else ""
        return f"<Buffer {self._name()} {self.dtype} x{self.size} on {self.device.name}{state}>"
