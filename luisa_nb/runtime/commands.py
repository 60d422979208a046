"""Commands: the units a stream runs in order.

A command is created by a ``*_async`` call, which checks every argument first, and is
run once by its stream's worker. When a trace is active at submission, the command
carries its :class:`~luisa_nb.trace.CommandRecord` and fills in its times; otherwise
``record`` is ``None`` and running costs nothing extra.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from luisa_nb.backends.base import Backend, DeviceSpan, KernelBuffer
from luisa_nb.runtime.host import host_range
from luisa_nb.trace.recorder import active_trace
from luisa_nb.trace.records import Access, CommandKind, CommandRecord, DeviceRange
from luisa_nb.trace.trace import Capture, Trace, now

if TYPE_CHECKING:
    from luisa_nb.runtime.buffer import BufferView
    from luisa_nb.runtime.device import Device

_ids = itertools.count(1)


def next_id() -> int:
    """A process-unique id for a command or sync point."""
    return next(_ids)


class Command:
    """Base class of commands. ``id`` is unique in the process and appears in traces;
    ``views`` are the buffer views the command touches."""

    kind: ClassVar[CommandKind]
    label: ClassVar[str] = ""
    host: ClassVar[np.ndarray | None] = None
    enqueue_capture: ClassVar[Capture | None] = None
    __slots__ = ("_trace", "device", "enqueued", "id", "record", "stream_id", "views")

    def __init__(self, device: Device, views: Sequence[BufferView]) -> None:
        self.id = next_id()
        self.enqueued = now()
        self.device = device
        self.views = views
        self.record: CommandRecord | None = None
        self.stream_id: int | None = None
        self._trace: Trace | None = None

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        raise NotImplementedError

    def describe(self) -> str:
        return self.kind.value

    def make_record(
        self,
        trace: Trace,
        seq: int,
        stream: int,
        submission: int,
        index: int,
        staging: str,
        submitted: int,
    ) -> CommandRecord:
        """The record of this command's submission; the worker fills in its times."""
        self._trace = trace
        host = self.host
        self.record = CommandRecord(
            self.id,
            seq,
            self.kind,
            stream,
            submission,
            index,
            self.label,
            self.device_ranges(),
            None if host is None else host_range(host),
            staging,
            self.enqueued,
            submitted,
            enqueue_capture=self.enqueue_capture,
        )
        return self.record

    def run(self, backend: Backend) -> DeviceSpan | None:
        """Run on ``backend``; returns the span of a deferred device operation, if any."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} #{self.id} {self.describe()}>"


_HOST_ACCESS = threading.Lock()
_UNTRACED = contextlib.nullcontext()


def _host_access(record: CommandRecord | None) -> AbstractContextManager[object]:
    """While tracing, one lock is held across each host read or write and its timestamp,
    so that the trace orders reads and writes of host memory exactly as they happened,
    whatever threads did them; untraced, nothing is held."""
    return _UNTRACED if record is None else _HOST_ACCESS


def _kernel_buffer(view: BufferView) -> KernelBuffer:
    """The device memory of ``view``, held by the command so that ``destroy()`` on a
    buffer with commands in flight cannot free memory under them."""
    return KernelBuffer(view.allocation, view.offset_bytes, view.nbytes, view.dtype)


class UploadCommand(Command):
    """Host array -> buffer view. ``staged`` holds the bytes once they are read."""

    kind = CommandKind.UPLOAD
    __slots__ = ("enqueue_capture", "host", "memory", "source", "staged", "target")

    def __init__(self, target: BufferView, host: np.ndarray, source: np.ndarray) -> None:
        super().__init__(target.device, (target,))
        self.target = target
        self.memory = _kernel_buffer(target)
        self.host = host
        self.source = source
        self.staged: np.ndarray | None = None
        trace = active_trace()
        self.enqueue_capture: Capture | None = None if trace is None else trace.capture(source)

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self.target.device_ranges(Access.WRITE)

    def describe(self) -> str:
        return f"upload buffer#{self.target.buffer.id}"

    def stage(self, into: np.ndarray | None = None) -> None:
        """Copy the host bytes now (staging="submit") into a new array or into the
        staging memory ``into``. If ``into`` is smaller than the
        upload (larger than a finite heap), the rest is read when the upload runs, in
        chunks of that size."""
        source = self.source
        with _host_access(self.record):
            if into is None:
                self.staged = source.copy()
            else:
                np.copyto(into, source[: into.nbytes])
                self.staged = into
            if self.record is not None:
                self.record.host_read = now()
        if self.record is not None and self.staged.nbytes == source.nbytes:
            # heap memory is reused once the submission finishes: keep a copy of it
            self.record.data_capture = self._trace.capture(self.staged, owned=into is None)

    def run(self, backend: Backend) -> DeviceSpan | None:
        memory = self.memory
        if self.staged is None:
            record = self.record
            if record is None:
                return backend.upload(memory.allocation, memory.offset, self.source)
            with _HOST_ACCESS:
                record.host_read = now()
                span = backend.upload(memory.allocation, memory.offset, self.source)
                record.data_capture = self._trace.capture(self.source)
            return span
        staged, self.staged = self.staged, None
        if staged.nbytes == self.source.nbytes:
            return backend.upload(memory.allocation, memory.offset, staged)
        return self._run_in_chunks(backend, staged)

    def _run_in_chunks(self, backend: Backend, first: np.ndarray) -> DeviceSpan | None:
        chunks = [first]
        span = backend.upload(self.memory.allocation, self.memory.offset, first)
        for start in range(first.nbytes, self.source.nbytes, first.nbytes):
            chunk = self.source[start : start + first.nbytes].copy()
            chunks.append(chunk)
            span = backend.upload(self.memory.allocation, self.memory.offset + start, chunk)
        if self.record is not None:
            self.record.data_capture = self._trace.capture(np.concatenate(chunks), owned=True)
        return span


class DownloadCommand(Command):
    """Buffer view -> host array: written when the command runs, or, on a backend that
    reads back after a fence, by :meth:`land` once its submission has finished."""

    kind = CommandKind.DOWNLOAD
    __slots__ = ("host", "memory", "readback", "source", "target")

    def __init__(self, source: BufferView, host: np.ndarray, target: np.ndarray) -> None:
        super().__init__(source.device, (source,))
        self.source = source
        self.memory = _kernel_buffer(source)
        self.host = host
        self.target = target
        self.readback: np.ndarray | None = None

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self.source.device_ranges(Access.READ)

    def describe(self) -> str:
        return f"download buffer#{self.source.buffer.id}"

    def run(self, backend: Backend) -> DeviceSpan | None:
        if backend.readback == "fence":
            self.readback = np.empty_like(self.target)
            return backend.download(self.memory.allocation, self.memory.offset, self.readback)
        with _host_access(self.record):
            span = backend.download(self.memory.allocation, self.memory.offset, self.target)
            self._stamp_write()
        self._capture_write()
        return span

    def land(self) -> None:
        """Copy the read-back bytes into the host array."""
        with _host_access(self.record):
            self.target[...] = self.readback
            self._stamp_write()
        self.readback = None
        self._capture_write()

    def _stamp_write(self) -> None:
        if self.record is not None:
            self.record.host_write = now()

    def _capture_write(self) -> None:
        if self.record is not None:
            self.record.data_capture = self._trace.capture(self.target)


class CopyCommand(Command):
    """Buffer view -> buffer view on one device."""

    kind = CommandKind.COPY
    __slots__ = ("memory", "source", "target")

    def __init__(self, source: BufferView, target: BufferView) -> None:
        super().__init__(source.device, (source, target))
        self.source = source
        self.target = target
        self.memory = (_kernel_buffer(source), _kernel_buffer(target))

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self.source.device_ranges(Access.READ) + self.target.device_ranges(Access.WRITE)

    def describe(self) -> str:
        return f"copy buffer#{self.source.buffer.id} -> buffer#{self.target.buffer.id}"

    def run(self, backend: Backend) -> DeviceSpan | None:
        source, target = self.memory
        return backend.copy(
            source.allocation, source.offset, target.allocation, target.offset, source.nbytes
        )


class FillCommand(Command):
    """Every element of a buffer view set to one value."""

    kind = CommandKind.FILL
    __slots__ = ("element", "memory", "target")

    def __init__(self, target: BufferView, element: np.ndarray) -> None:
        super().__init__(target.device, (target,))
        self.target = target
        self.element = element
        self.memory = _kernel_buffer(target)

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self.target.device_ranges(Access.WRITE)

    def describe(self) -> str:
        return f"fill buffer#{self.target.buffer.id} = {self.element[0]!r}"

    def run(self, backend: Backend) -> DeviceSpan | None:
        memory = self.memory
        return backend.fill(memory.allocation, memory.offset, memory.nbytes, self.element)


class DispatchCommand(Command):
    """A kernel launch over ``dims`` threads."""

    kind = CommandKind.DISPATCH
    __slots__ = ("accesses", "buffers", "dims", "executable", "label", "scalars")

    def __init__(
        self,
        device: Device,
        name: str,
        executable: Any,
        dims: tuple[int, int, int],
        targets: Sequence[BufferView],
        accesses: Sequence[Access | None],
        scalars: Sequence[Any],
    ) -> None:
        super().__init__(device, targets)
        self.label = name
        self.executable = executable
        self.dims = dims
        self.accesses = accesses
        self.scalars = scalars
        self.buffers = tuple(_kernel_buffer(view) for view in targets)

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        ranges = [
            view.device_ranges(access)[0]
            for view, access in zip(self.views, self.accesses, strict=True)
            if access is not None
        ]
        return tuple(ranges)

    def describe(self) -> str:
        return f"dispatch {self.label}{list(d for d in self.dims if d != 1) or [1]}"

    def run(self, backend: Backend) -> DeviceSpan | None:
        return backend.dispatch(self.executable, self.dims, self.buffers, self.scalars)
