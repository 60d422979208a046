"""Devices: a backend, a staging policy, and the streams and buffers made on them."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from luisa_nb.backends.base import Backend
from luisa_nb.errors import (
    CommandFailedError,
    InvalidArgumentError,
    StreamError,
)
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.type_system import BufferType
from luisa_nb.runtime.accel import Accel, Mesh
from luisa_nb.runtime.buffer import Buffer, BufferView
from luisa_nb.runtime.callbacks import in_callback, wait_in_callback
from luisa_nb.runtime.image import Image
from luisa_nb.runtime.indirect import IndirectDispatchBuffer
from luisa_nb.runtime.staging import Staging, StagingHeap, StagingPolicy
from luisa_nb.runtime.stream import Event, Stream

BUFFER_DTYPES = tuple(
    np.dtype(t)
    for t in (np.bool_, np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64)
)
_DTYPE_NAMES = ", ".join(d.name for d in BUFFER_DTYPES)


def buffer_dtype(dtype: Any) -> np.dtype:
    """``dtype`` as one of :data:`BUFFER_DTYPES` or a kernel vector or matrix layout
    (``dtype_of(float3)``). Only real dtypes and numpy scalar types
    are accepted: ``np.dtype(None)`` is float64, and a typo must not become that."""
    known = isinstance(dtype, np.dtype) or (
        isinstance(dtype, type) and issubclass(dtype, (np.generic, bool, int, float))
    )
    if isinstance(dtype, str):
        try:
            dtype, known = np.dtype(dtype), True
        except TypeError:
            known = False
    resolved = np.dtype(dtype) if known else None
    if resolved is not None and resolved.fields is not None and _kernel_type_of(resolved):
        return resolved
    if resolved is None or resolved not in BUFFER_DTYPES:  # dtype == None holds for float64
        raise InvalidArgumentError(
            f"buffers hold one of {_DTYPE_NAMES}, or a vector or matrix type as "
            f"dtype_of(float3) gives it; got dtype {dtype!r}. Pass e.g. np.float32"
        )
    return resolved


def _kernel_type_of(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is the layout of a kernel vector or matrix type."""
    try:
        BufferType.of_dtype(dtype)
    except ValueError:
        return False
    return True


def buffer_name(name: Any) -> str | None:
    """``name`` as a buffer's name: a str, or None for none."""
    if name is not None and not isinstance(name, str):
        raise InvalidArgumentError(f"a buffer name must be a str, got {name!r}")
    return name


def buffer_size(size: Any) -> int:
    """``size`` as an element count; only positive integers are accepted."""
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size <= 0:
        raise InvalidArgumentError(f"buffer size must be a positive integer, got {size!r}")
    return int(size)


class Device:
    """One backend instance.

    ``staging`` says when uploads read host memory: ``"submit"`` copies every upload of a
    submission into staging before ``submit()`` returns (LuisaCompute's CPU, DX, Metal
    and remote backends); ``"execute"`` reads host memory when the upload runs, in stream
    order. ``None`` takes the backend's default.

    ``checks`` is what kernels dispatched here that do not set their own check
    (``kernel_checks``; ``DeviceConfig.parse`` parses a user's setting).
    """

    def __init__(
        self,
        backend: Backend,
        staging: str | StagingPolicy | None = None,
        checks: KernelChecks = KernelChecks.BOUNDS,
    ) -> None:
        policy = StagingPolicy.parse(backend.default_staging if staging is None else staging)
        self.backend = backend
        self.staging = policy
        self.kernel_checks = checks
        capacity = backend.staging_capacity
        heap = None if capacity is None else StagingHeap(capacity)
        self.transfers = Staging.create(policy, heap, backend.snapshot_memory)
        self.closed = False
        self._streams: weakref.WeakSet[Stream] = weakref.WeakSet()
        self.default_stream = self.create_stream("default")

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def label(self) -> str:
        """How traces name this device: the backend's name, then what tells two devices of
        that backend apart if anything does (``remote:HOST:PORT``)."""
        return self.backend.label

    @property
    def info(self) -> dict[str, Any]:
        """Name, whether the backend is simulated, its staging policy and capacity."""
        return {**self.backend.info(), "staging": self.staging.value}

    def check_open(self) -> None:
        if self.closed:
            raise StreamError(
                f"device {self.name!r} was closed; create a new one with "
                f"lnb.create_device({self.name!r})"
            )

    def create_buffer(
        self, size: int, dtype: Any = np.float32, *, name: str | None = None
    ) -> Buffer:
        """A buffer of ``size`` elements of ``dtype`` (contents undefined until written)."""
        size = buffer_size(size)
        name = buffer_name(name)
        resolved = buffer_dtype(dtype)
        self.check_open()
        return Buffer(self, size, resolved, name)

    def create_image(
        self,
        width: int,
        height: int,
        channels: int = 4,
        kind: str = "float",
        storage: str | None = None,
        *,
        name: str | None = None,
        depth: int | None = None,
    ) -> Image:
        """A ``width`` x ``height`` image (x ``depth``: a 3D image) of ``channels``
        channels of ``kind`` (``"float"``, ``"int"``, ``"uint"``), stored as ``storage``
        (default: the kind's own 32 bits; ``"byte"`` or ``"short"`` store float channels
        normalized)."""
        self.check_open()
        return Image(self, width, height, channels, kind, storage, name, depth)

    def create_indirect_dispatch_buffer(
        self, capacity: int, *, name: str | None = None
    ) -> IndirectDispatchBuffer:
        """Room for ``capacity`` dispatches that kernels record with ``set_kernel`` and
        ``set_dispatch_count``; a kernel dispatched with it as its size runs them. Its
        contents are undefined until written (``clear()`` zeroes them)."""
        name = buffer_name(name)
        self.check_open()
        return IndirectDispatchBuffer(self, capacity, name)

    @property
    def streams(self) -> list[Stream]:
        """The streams made on this device and still alive (its default stream too)."""
        return list(self._streams)

    def create_mesh(self, vertices: BufferView, triangles: BufferView) -> Mesh:
        """The triangles of ``vertices`` (a float3 or float4 buffer) indexed by
        ``triangles`` (int32 or uint32, three per triangle), for :meth:`create_accel`."""
        self.check_open()
        return Mesh(self, vertices, triangles)

    def create_accel(self, *, name: str | None = None) -> Accel:
        """An empty acceleration structure: add meshes with ``emplace_back``, then build
        it (a command) before kernels trace rays against it."""
        self.check_open()
        return Accel(self, buffer_name(name))

    def create_stream(self, name: str | None = None) -> Stream:
        self.check_open()
        stream = Stream(self, name)
        self._streams.add(stream)
        return stream

    def create_event(self) -> Event:
        return Event(self)

    def synchronize(self) -> None:
        """Synchronize every stream of this device; raise one error naming every failure
        of every stream. Called in a callback of this device, it raises
        :class:`StreamError`."""
        if in_callback():
            wait_in_callback(self, f"synchronize() of device {self.name!r}", self.synchronize)
            return
        errors: list[CommandFailedError] = []
        for stream in list(self._streams):
            try:
                stream.synchronize()
            except CommandFailedError as error:
                errors.append(error)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            combined = CommandFailedError(
                f"{len(errors)} streams of device {self.name!r} failed: "
                + " | ".join(str(error) for error in errors),
                errors[0].command_id,
                [failure for error in errors for failure in error.failures],
            )
            raise combined from errors[0].__cause__

    def close(self) -> None:
        """Finish the work submitted so far and release the backend (a remote device ends
        its session); the device cannot be used after. Called in a callback of this
        device, it raises :class:`StreamError` and the device stays open."""
        if self.closed:
            return
        if in_callback():
            wait_in_callback(self, f"close() of device {self.name!r}", self.close)
            return
        try:
            self.synchronize()
        finally:
            self.closed = True
            self.backend.close()

    def __repr__(self) -> str:
        return f"<Device {self.name!r} staging={self.staging.value!r}>"
