"""luisa-python's ``Buffer`` on luisa_nb: copies join the stream's command list.

As in luisa-python, ``copy_from`` and ``copy_to`` add a command to the stream's implicit
list, which ``luisa.execute()`` or ``luisa.synchronize()`` submits (``copy_to`` defaults to
``sync=True``, ``copy_from`` to ``sync=False``). Under ``staging="submit"`` an upload
therefore reads host memory at that later submission, as real LuisaCompute's CPU
backend does. A host array needs only the buffer's byte size, any dtype or shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from luisa_nb import runtime
from luisa_nb.errors import HostArrayError, HostDtypeError, HostSizeError, LuisaNbError
from luisa_nb.kernels.aggregates import to_record
from luisa_nb.kernels.type_system import BufferType as KernelBufferType
from luisa_nb.kernels.type_system import ScalarType
from luisa_nb.luisa import session
from luisa_nb.luisa.types import element_dtype, element_type_of
from luisa_nb.runtime import Stream
from luisa_nb.runtime.device import buffer_size


def add_to_list(command: runtime.Command, sync: bool, stream: Stream | None) -> None:
    """Add ``command`` to the command list of ``stream`` (default: the session's); with
    ``sync``, submit the list and wait for it."""
    chosen = session.stream(stream)
    chosen.add(command)
    if sync:
        chosen.synchronize()


_SCALAR_NAMES = {  # luisa-python's names of the scalar kernel types
    ScalarType.BOOL: "bool",
    ScalarType.INT32: "int",
    ScalarType.UINT32: "uint",
    ScalarType.INT64: "long",
    ScalarType.UINT64: "ulong",
    ScalarType.FLOAT32: "float",
}


def _type_name(dtype: Any) -> str:
    """``dtype`` as a luisa-python program writes it (``float``, ``float3``, ...)."""
    if not isinstance(dtype, np.dtype):
        return getattr(dtype, "__name__", None) or repr(dtype)
    try:
        element = KernelBufferType.of_dtype(dtype).element
    except ValueError:
        return str(dtype)
    return _SCALAR_NAMES.get(element, str(element))


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
            values = list_array(values, self.dtype)
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
        command = self.copy_from_async(self._host_array(array, "copy_from", writes=False))
        add_to_list(command, sync, stream)

    def copy_to(self, array: np.ndarray, sync: bool = True, stream: Stream | None = None) -> None:
        """Add a download into ``array`` to the stream's command list; with ``sync`` (the
        default) synchronize the stream, so ``array`` holds the data on return."""
        add_to_list(
            self.copy_to_async(self._host_array(array, "copy_to", writes=True)), sync, stream
        )

    def numpy(self, stream: Stream | None = None) -> np.ndarray:
        """A new host array with the contents, after the stream's earlier work."""
        out = np.empty(self.host_shape, dtype=self.dtype)
        self.copy_to(out, sync=True, stream=stream)
        return out


def list_array(values: list[Any], dtype: np.dtype) -> np.ndarray:
    """``values`` (numbers, or vectors, matrices or structs of one type) as an array of
    ``dtype``, one element per value."""
    kind = getattr(type(values[0]), "__lnb_type__", None) if values else None
    try:
        if kind is None:
            return np.asarray(values, dtype=dtype)
        return np.array([to_record(kind, value) for value in values], dtype=dtype)
    except (TypeError, ValueError, AttributeError, LuisaNbError) as error:
        raise HostDtypeError(
            f"a list uploaded to a buffer must hold numbers, or vectors, matrices or structs "
            f"all of the type of its first value ({values[0]!r:.40}); {error}"
        ) from None


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
        """A buffer whose zero fill is added to the stream's command list."""
        created = Buffer(size, dtype)
        session.stream().add(created.fill_async(0))
        return created

    @staticmethod
    def from_array(array: np.ndarray) -> Buffer:
        """A buffer of ``array``'s elements, uploaded through the stream's command list."""
        array = np.asarray(array)
        created = Buffer(array.size, array.dtype)
        created.copy_from(array)
        return created

    @staticmethod
    def from_list(values: list[Any]) -> Buffer:
        if not values:
            raise HostArrayError("Buffer.from_list needs at least one element")
        dtype = element_dtype(element_type_of(values[0]))
        return Buffer.from_array(list_array(values, dtype))

    @staticmethod
    def buffer(values: np.ndarray | list[Any]) -> Buffer:
        return Buffer.from_list(values) if isinstance(values, list) else Buffer.from_array(values)

    def to_list(self, stream: Stream | None = None) -> list[Any]:
        return self.numpy(stream).tolist()
