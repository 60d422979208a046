"""luisa-python's ``Buffer`` on luisa_nb: copies join the stream's command list.

As in luisa-python, ``copy_from`` and ``copy_to`` add a command to the stream's implicit
list, which ``luisa.execute()`` or ``luisa.synchronize()`` submits (``copy_to`` defaults to
``sync=True``, ``copy_from`` to ``sync=False``). Under ``staging="submit"`` an upload
therefore reads host memory at that later submission, as real LuisaCompute's CPU
backend does. A host array needs only the buffer's byte size, any dtype or shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from luisa_nb import runtime
from luisa_nb.errors import (
    HostArrayError,
    HostDtypeError,
    HostSizeError,
    HostValueRangeError,
    InvalidArgumentError,
    LuisaNbError,
)
from luisa_nb.kernels.frontend.portability import warn_caller_not_in_luisa
from luisa_nb.kernels.lang.aggregates import to_record
from luisa_nb.kernels.type_system import BufferType as KernelBufferType
from luisa_nb.kernels.type_system import luisa_type_name
from luisa_nb.luisa import session
from luisa_nb.luisa.types import element_dtype, element_type_of
from luisa_nb.runtime import Stream
from luisa_nb.runtime.device import buffer_size
from luisa_nb.runtime.host import plain_array
from luisa_nb.runtime.stream import check_stream


def add_to_list(command: runtime.Command, sync: bool, stream: Stream | None) -> None:
    """Add ``command`` to the command list of ``stream`` (default: the session's); with
    ``sync``, submit the list and wait for it."""
    chosen = session.stream(stream)
    chosen.add(command)
    if sync:
        chosen.synchronize()


def _type_name(dtype: Any) -> str:
    """``dtype`` as a luisa-python program writes it (``float``, ``float3``, ...)."""
    if not isinstance(dtype, np.dtype):
        return getattr(dtype, "__name__", None) or repr(dtype)
    try:
        element = KernelBufferType.of_dtype(dtype).element
    except ValueError:
        return str(dtype)
    return luisa_type_name(element)


class BufferType:
    """luisa-python's type of a ``Buffer`` of ``dtype`` (``buffer.bufferType``), equal to
    another of the same element type, as in luisa-python. It annotates kernel parameters
    (``def f(values: luisa.BufferType(float))``), and ``luisa.func`` checks its arguments
    against it as luisa-python does."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype
        self._element = element_dtype(dtype)

    def __eq__(self, other: object) -> bool:
        return type(other) is BufferType and self._element == other._element

    def __hash__(self) -> int:
        return hash(("BufferType", self._element))

    def __repr__(self) -> str:
        return f"BufferType({_type_name(self.dtype)})"


def buffer_type_of(value: Any) -> BufferType | None:
    """The ``BufferType`` of a buffer; None for anything else (an image included)."""
    if not isinstance(value, runtime.BufferView) or isinstance(value, runtime.Image):
        return None
    return BufferType(value.dtype)


class ListedCopies(runtime.BufferView):
    """luisa-python's copy methods for a buffer or an image: each adds a command to the
    stream's command list."""

    @property
    def host_shape(self) -> tuple[int, ...]:
        """The shape of ``numpy()``."""
        return (self.size,)

    @property
    def bytesize(self) -> int:
        return self.nbytes

    def _host_array(self, values: Any, action: str, *, writes: bool) -> Any:
        """``values`` as an array of this resource's dtype over the same bytes."""
        if isinstance(values, list) and not writes:
            values = list_array(values, self.dtype, f"{action} {self._name()}")
        if isinstance(values, np.ndarray) and type(values) is not np.ndarray:
            values = plain_array(values, f"{action} {self._name()}", writes)
        if (
            isinstance(values, np.ndarray)
            and values.dtype != self.dtype
            and values.flags.c_contiguous
            and values.ndim
        ):
            if values.nbytes != self.nbytes:
                raise HostSizeError(
                    f"{action} {self._name()}: the host array has {values.nbytes} bytes, the "
                    f"{type(self).__name__} {self.nbytes}; pass an array of that byte size"
                )
            values = values.reshape(-1).view(np.uint8).view(self.dtype)
        return values

    def copy_from(self, array: Any, sync: bool = False, stream: Stream | None = None) -> None:
        """Add an upload of ``array`` (an array or a list) to the stream's command list."""
        if stream is not None:
            check_stream(stream, "copy_from")
        command = self.copy_from_async(self._host_array(array, "copy_from", writes=False))
        add_to_list(command, sync, stream)

    def copy_to(self, array: np.ndarray, sync: bool = True, stream: Stream | None = None) -> None:
        """Add a download into ``array`` to the stream's command list; with ``sync`` (the
        default) synchronize the stream, so ``array`` holds the data on return."""
        if stream is not None:
            check_stream(stream, "copy_to")
        add_to_list(
            self.copy_to_async(self._host_array(array, "copy_to", writes=True)), sync, stream
        )

    def numpy(self, stream: Stream | None = None) -> np.ndarray:
        """A new host array with the contents, after the stream's earlier work."""
        out = np.empty(self.host_shape, dtype=self.dtype)
        self.copy_to(out, sync=True, stream=stream)
        return out


def list_array(values: list[Any], dtype: np.dtype, what: str) -> np.ndarray:
    """``values`` (numbers, or vectors, matrices or structs) as an array of ``dtype``, one
    element per value. As in luisa-python, each value must be of the element type (``1``
    is an int, not a float); unlike it, a number that does not fit raises instead of
    wrapping. ``what`` names the copy in messages."""
    expected = _type_name(dtype)
    for position, value in _first_of_each_type(values):
        try:
            value_dtype = element_dtype(element_type_of(value))
        except InvalidArgumentError:  # a str, a list: no luisa type
            value_dtype = None
        if value_dtype is None or value_dtype != dtype:
            got = type(value).__name__ if value_dtype is None else _type_name(value_dtype)
            array = "" if dtype.fields else f", or pass a numpy array of dtype {dtype}"
            raise HostDtypeError(
                f"{what}: {value!r:.40} (index {position}) is {got}, not {expected}; as in "
                f"luisa-python, every value of a list must be of the element type. Convert "
                f"the values to {expected} first{array}"
            )
    kind = getattr(type(values[0]), "__lnb_type__", None) if values else None
    try:
        with np.errstate(over="raise"):
            if kind is None:
                return np.asarray(values, dtype=dtype)
            return np.array([to_record(kind, value) for value in values], dtype=dtype)
    except (OverflowError, FloatingPointError) as error:
        raise HostValueRangeError(
            f"{what}: a value does not fit {expected} ({dtype}): {error}. Pass values that "
            f"fit, or a numpy array of a wider dtype such as np.int64 (luisa.long)"
        ) from None
    except (TypeError, ValueError, AttributeError, LuisaNbError) as error:
        raise HostDtypeError(
            f"{what}: a list must hold numbers, or vectors, matrices or structs of the "
            f"element type {expected}; {error}"
        ) from None


def _first_of_each_type(values: list[Any]) -> Iterator[tuple[int, Any]]:
    """The position and value of the first value of each type in ``values``."""
    for value_type in dict.fromkeys(map(type, values)):
        yield next((i, value) for i, value in enumerate(values) if type(value) is value_type)


class Buffer(ListedCopies, runtime.Buffer):
    """``size`` elements of ``dtype`` (``float``, ``int``, ``uint``, ``bool``, a numpy
    dtype, ...) on the device of ``luisa.init()``."""

    def __init__(self, size: int, dtype: Any) -> None:
        device = session.device()
        device.check_open()
        super().__init__(device, buffer_size(size), element_dtype(dtype))

    @property
    def bufferType(self) -> BufferType:
        return BufferType(self.dtype)

    @property
    def stride(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @staticmethod
    def empty(size: int, dtype: Any) -> Buffer:
        return Buffer(size, dtype)

    @staticmethod
    def zeros(size: int, dtype: Any) -> Buffer:
        """A buffer whose zero fill is added to the stream's command list (luisa_nb's:
        0.3.7 has none, so it warns)."""
        warn_caller_not_in_luisa("Buffer.zeros", "use Buffer(size, dtype) and fill it")
        created = Buffer(size, dtype)
        session.stream().add(created.fill_async(0))
        return created

    @staticmethod
    def from_array(array: np.ndarray) -> Buffer:
        """A buffer of ``array``'s elements, uploaded through the stream's command list."""
        array = plain_array(np.asanyarray(array), "Buffer.from_array", writes=False)
        created = Buffer(array.size, array.dtype)
        created.copy_from(array)
        return created

    @staticmethod
    def from_list(values: list[Any]) -> Buffer:
        """A buffer of the type of the first value, holding ``values`` (all of that type,
        as in luisa-python)."""
        if not isinstance(values, list) or not values:
            raise HostArrayError(
                f"Buffer.from_list needs a list of at least one value, got {values!r:.40}"
            )
        dtype = element_dtype(element_type_of(values[0]))
        what = f"Buffer.from_list (a buffer of {_type_name(dtype)}, as its first value is)"
        return Buffer.from_array(list_array(values, dtype, what))

    @staticmethod
    def buffer(values: np.ndarray | list[Any]) -> Buffer:
        """A buffer of a numpy array's or a list's values, as luisa-python makes one."""
        if isinstance(values, list):
            return Buffer.from_list(values)
        if isinstance(values, np.ndarray):
            return Buffer.from_array(values)
        raise InvalidArgumentError(
            f"luisa.buffer takes a numpy array or a list, got {type(values).__name__} "
            f"{values!r:.40}; for an empty buffer of n elements use luisa.Buffer(n, dtype)"
        )

    def to_list(self, stream: Stream | None = None) -> list[Any]:
        return self.numpy(stream).tolist()
