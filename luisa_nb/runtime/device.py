"""Devices: a backend, a staging policy, and the streams and buffers made on them."""

from __future__ import annotations

import inspect
import weakref
from typing import Any

import numpy as np

from luisa_nb.backends import load_backend
from luisa_nb.backends.base import Backend
from luisa_nb.errors import ConfigurationError, InvalidArgumentError
from luisa_nb.runtime.buffer import Buffer
from luisa_nb.runtime.staging import StagingHeap
from luisa_nb.runtime.stream import Event, Stream

STAGING_POLICIES = ("submit", "execute")
BUFFER_DTYPES = tuple(
    np.dtype(t)
    for t in (np.bool_, np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64)
)


class Device:
    """One backend instance.

    ``staging`` says when uploads read host memory: ``"submit"`` copies every upload of a
    submission into staging before ``submit()`` returns (LuisaCompute's CPU, DX, Metal
    and remote backends); ``"execute"`` reads host memory when the upload runs, in stream
    order. ``None`` takes the backend's default.
    """

    def __init__(self, backend: Backend, staging: str | None = None) -> None:
        staging = staging or backend.default_staging
        if staging not in STAGING_POLICIES:
            raise ConfigurationError(
                f"staging={staging!r} is not a staging policy; use 'submit' or 'execute'"
            )
        self.backend = backend
        self.staging = staging
        capacity = backend.staging_capacity
        self.staging_heap = None if capacity is None else StagingHeap(capacity)
        self._streams: weakref.WeakSet[Stream] = weakref.WeakSet()
        self.default_stream = self.create_stream("default")

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def info(self) -> dict[str, Any]:
        """Name, whether the backend is a model, its staging policy and capacity."""
        return {**self.backend.info(), "staging": self.staging}

    def create_buffer(
        self, size: int, dtype: Any = np.float32, *, name: str | None = None
    ) -> Buffer:
        """A buffer of ``size`` elements of ``dtype`` (contents undefined until written)."""
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size <= 0:
            raise InvalidArgumentError(f"buffer size must be a positive integer, got {size!r}")
        try:
            resolved = np.dtype(dtype)
        except TypeError:
            resolved = None
        if resolved not in BUFFER_DTYPES:
            names = ", ".join(d.name for d in BUFFER_DTYPES)
            raise InvalidArgumentError(f"buffers hold one of {names}; got dtype {dtype!r}")
        return Buffer(self, int(size), resolved, name)

    def create_stream(self, name: str | None = None) -> Stream:
        stream = Stream(self, name)
        self._streams.add(stream)
        return stream

    def create_event(self) -> Event:
        return Event(self)

    def synchronize(self) -> None:
        """Synchronize every stream of this device; raise the first failure found."""
        failure: Exception | None = None
        for stream in list(self._streams):
            try:
                stream.synchronize()
            except Exception as error:
                failure = failure or error
        if failure is not None:
            raise failure

    def __repr__(self) -> str:
        return f"<Device {self.name!r} staging={self.staging!r}>"


def create_device(name: str = "cpu", *, staging: str | None = None, **options: Any) -> Device:
    """A device on backend ``name``: ``"cpu"``, ``"dx"``, ``"metal"``, ``"remote"`` (a local
    server started for it) or ``"remote://HOST:PORT"`` (a running server; pass ``token=``),
    or a backend another package registered. ``options`` go to the backend."""
    if name.startswith("remote://"):
        options["address"] = name.removeprefix("remote://")
        name = "remote"
    backend_class = load_backend(name)
    try:
        inspect.signature(backend_class).bind(**options)
    except TypeError as error:
        raise ConfigurationError(
            f"backend {name!r} does not take these options ({error}); see its documentation"
        ) from None
    return Device(backend_class(**options), staging)


_default_device: Device | None = None


def default_device() -> Device:
    """The session's default device: ``cpu`` unless :func:`set_default_device` chose one."""
    global _default_device
    if _default_device is None:
        _default_device = create_device("cpu")
    return _default_device


def set_default_device(device: Device) -> None:
    global _default_device
    _default_device = device
