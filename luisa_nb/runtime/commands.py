"""Commands: the units a stream runs in order.

A command is created by a ``*_async`` call, which checks every argument first, and is
run once by its stream's worker. Commands never touch the trace: the stream tells the
recorder about them when they are submitted (the trace knows them by ``id``), and host
transfers go through :mod:`luisa_nb.runtime.staging`.
"""

from __future__ import annotations

import itertools
import os
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from luisa_nb.backends.base import DeviceSpan, KernelBuffer
from luisa_nb.recording.clock import now
from luisa_nb.recording.naming import dispatch_label
from luisa_nb.recording.recorder import (
    CAPTURE_FIELD,
    Recorder,
    RunTimer,
    TraceFields,
    active_recorder,
    active_trace,
)
from luisa_nb.recording.records import Access, Capture, CommandKind, DeviceRange, HostRange
from luisa_nb.recording.row_appender import PYTHON_HOOKS_VARIABLE
from luisa_nb.runtime.device_prints import printing_dispatch
from luisa_nb.runtime.host import host_range

if TYPE_CHECKING:
    from luisa_nb.backends.base import Backend
    from luisa_nb.runtime.buffer import BufferView
    from luisa_nb.runtime.device import Device
    from luisa_nb.runtime.staging import Transfers

command_ids = itertools.count(1)
"""Where every command's and sync point's id comes from (:func:`next_id`)."""
_READ, _WRITE = Access.READ, Access.WRITE
_UPLOAD, _DOWNLOAD = CommandKind.UPLOAD, CommandKind.DOWNLOAD
"""Read off the enums once: reading a member off an enum class goes through the enum
metaclass's attribute hook (about 0.2 µs, as much as a dict lookup and a call together)."""


def next_id() -> int:
    """A process-unique id for a command or sync point."""
    return next(command_ids)


def python_report_submitted(recorder: Recorder, stream: Any, commands: Sequence[Any]) -> None:
    """Tell ``recorder``, which is recording, that ``commands`` were submitted to ``stream``,
    in the plain values its ``submitted`` hook takes: each command's id, enqueue time and
    trace fields (``submitted_one`` for one command). :data:`report_submitted` is this, or
    the same in C."""
    if len(commands) == 1:  # the common case, a synchronous call's: without the sequences
        (command,) = commands
        fields = command.trace_fields()
        recorder.submitted_one(stream.id, command.id, command.enqueued, fields, stream, command)
        return
    ids = [command.id for command in commands]
    enqueued = [command.enqueued for command in commands]
    fields = [command.trace_fields() for command in commands]
    recorder.submitted(stream.id, ids, enqueued, fields, stream, commands)


def python_start_run(recorder: Recorder, commands: Sequence[Any]) -> RunTimer:
    """``recorder.run_timer`` with the ``id`` of each of ``commands``: the timer of a run of
    those commands. :data:`start_run` is this, or the same in C."""
    return recorder.run_timer(tuple([command.id for command in commands]))


class Command:
    """Base class of commands. ``id`` is unique in the process and appears in traces;
    ``views`` are the buffer views the command touches; ``enqueued`` is when the
    ``*_async`` call made it."""

    kind: ClassVar[CommandKind]
    label: ClassVar[str] = ""
    enqueue_capture: ClassVar[Capture | None] = None
    __slots__ = ("device", "enqueued", "id", "stream_id", "views")

    def __init__(self, device: Device, views: Sequence[BufferView]) -> None:
        self.id = next(command_ids)
        self.enqueued = now()
        self.device = device
        self.views = views
        self.stream_id: int | None = None

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        raise NotImplementedError

    def host_range(self) -> HostRange | None:
        """The host memory the command reads or writes, if any."""
        return None

    def describe(self) -> str:
        return self.kind.value

    def trace_fields(self) -> TraceFields:
        """What a trace records of this command besides ids and times: kind, label,
        device ranges, host range and the capture of its bytes at enqueue."""
        return (
            self.kind,
            self.label,
            self.device_ranges(),
            self.host_range(),
            self.enqueue_capture,
        )

    def run(self, transfers: Transfers) -> DeviceSpan | None:
        """Run on the worker; returns the span of a deferred device operation, if any."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} #{self.id} {self.describe()}>"


class UploadCommand(Command):
    """Host array -> buffer view. ``staged`` holds the bytes read at submit, if they were."""

    kind = CommandKind.UPLOAD
    __slots__ = ("enqueue_capture", "host", "memory", "source", "staged", "target")

    def __init__(self, target: BufferView, host: np.ndarray, source: np.ndarray) -> None:
        Command.__init__(self, target.device, (target,))
        self.target = target
        self.memory = target.kernel_buffer
        self.host = host
        self.source = source
        self.staged: np.ndarray | None = None
        self.enqueue_capture = active_recorder().upload_enqueued(host, source)

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self.target.device_ranges(Access.WRITE)

    def host_range(self) -> HostRange:
        return host_range(self.host)

    def trace_fields(self) -> TraceFields:
        host, capture, target = self.host, self.enqueue_capture, self.target
        memo = target.upload_fields  # recalled(), written out: one Python call per upload
        if (
            memo is not None
            and memo[0]() is host
            and memo[1] == host.shape
            and memo[2] is host.dtype
            and memo[3][CAPTURE_FIELD] is capture
        ):
            return memo[3]
        fields = (_UPLOAD, "", target.device_ranges(_WRITE), host_range(host), capture)
        target.upload_fields = (weakref.ref(host), host.shape, host.dtype, fields)  # array_memo()
        return fields

    def describe(self) -> str:
        return f"upload buffer#{self.target.buffer.id}"

    def run(self, transfers: Transfers) -> DeviceSpan | None:
        return transfers.upload(self)


class DownloadCommand(Command):
    """Buffer view -> host array; ``readback`` holds the bytes between the device read
    and the host write on a backend that reads back after a fence."""

    kind = CommandKind.DOWNLOAD
    __slots__ = ("host", "memory", "readback", "source", "target")

    def __init__(self, source: BufferView, host: np.ndarray, target: np.ndarray) -> None:
        Command.__init__(self, source.device, (source,))
        self.source = source
        self.memory = source.kernel_buffer
        self.host = host
        self.target = target
        self.readback: np.ndarray | None = None
        active_recorder().download_enqueued(host)

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self.source.device_ranges(Access.READ)

    def host_range(self) -> HostRange:
        return host_range(self.host)

    def trace_fields(self) -> TraceFields:
        host, source = self.host, self.source
        memo = source.download_fields  # recalled(), written out: one Python call per download
        if (
            memo is not None
            and memo[0]() is host
            and memo[1] == host.shape
            and memo[2] is host.dtype
        ):
            return memo[3]
        fields = (_DOWNLOAD, "", source.device_ranges(_READ), host_range(host), None)
        source.download_fields = (weakref.ref(host), host.shape, host.dtype, fields)  # array_memo()
        return fields

    def describe(self) -> str:
        return f"download buffer#{self.source.buffer.id}"

    def run(self, transfers: Transfers) -> DeviceSpan | None:
        return transfers.download(self)


class CopyCommand(Command):
    """Buffer view -> buffer view on one device."""

    kind = CommandKind.COPY
    __slots__ = ("memory", "source", "target")

    def __init__(self, source: BufferView, target: BufferView) -> None:
        Command.__init__(self, source.device, (source, target))
        self.source = source
        self.target = target
        self.memory = (source.kernel_buffer, target.kernel_buffer)

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self.source.device_ranges(Access.READ) + self.target.device_ranges(Access.WRITE)

    def describe(self) -> str:
        return f"copy buffer#{self.source.buffer.id} -> buffer#{self.target.buffer.id}"

    def run(self, transfers: Transfers) -> DeviceSpan | None:
        source, target = self.memory
        if not source.nbytes:
            return None
        return transfers.backend.copy(
            source.allocation, source.offset, target.allocation, target.offset, source.nbytes
        )


class FillCommand(Command):
    """Every element of a buffer view set to one value; a trace captures the value's bytes
    (as ``enqueue_capture``), which replay writes."""

    kind = CommandKind.FILL
    __slots__ = ("element", "enqueue_capture", "memory", "target")

    def __init__(self, target: BufferView, element: np.ndarray) -> None:
        Command.__init__(self, target.device, (target,))
        self.target = target
        self.element = element
        self.memory = target.kernel_buffer
        trace = active_trace()
        self.enqueue_capture = (
            None if trace is None else trace.capture(np.frombuffer(element.tobytes(), np.uint8))
        )

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self.target.device_ranges(Access.WRITE)

    def describe(self) -> str:
        return f"fill buffer#{self.target.buffer.id} = {self.element[0]!r}"

    def run(self, transfers: Transfers) -> DeviceSpan | None:
        memory = self.memory
        if not memory.nbytes:
            return None
        return transfers.backend.fill(memory.allocation, memory.offset, memory.nbytes, self.element)


class DispatchMemo:
    """What dispatches with the same arguments work out once and share: the trace's
    device ranges and named scalars, and the trace fields (label included) and the
    backend's prepared launch of the latest size. It holds no buffer or device memory,
    so a kernel may keep it after its commands are gone, for the next dispatch on the
    same live buffers."""

    __slots__ = (
        "described",
        "device_ranges",
        "named_scalars",
        "prepared",
        "quick_dims",
        "slow_once",
    )

    def __init__(self) -> None:
        self.device_ranges: tuple[DeviceRange, ...] | None = None
        self.named_scalars: tuple[tuple[str, Any], ...] | None = None
        self.described: tuple[tuple[int, int, int], str, TraceFields] | None = None
        self.prepared: tuple[tuple[int, int, int], Any] | None = None
        self.quick_dims: tuple[int, int, int] | None = None
        """The size whose prepared launches run quickly (see
        :func:`~luisa_nb.runtime.execution.runs_quickly`); ``slow_once``: the latest of
        them did not (one slow launch is taken for the machine's load, two for the
        kernel's)."""
        self.slow_once = False


class DispatchArguments:
    """What a dispatch runs besides its size: ``executable`` on ``device``, the buffer
    ``views`` it touches with the device memory it holds of each (``buffers``, made while
    every view was alive) and how it accesses each, and its ``scalars``. Commands may share
    one (a kernel dispatched again on the same buffers does); ``memo`` may be shared
    further, by arguments of the same views."""

    __slots__ = (
        "__weakref__",
        "accesses",
        "buffers",
        "device",
        "executable",
        "memo",
        "scalars",
        "views",
    )

    def __init__(
        self,
        device: Device,
        executable: Any,
        views: Sequence[BufferView],
        buffers: Sequence[KernelBuffer],
        accesses: Sequence[Access | None],
        scalars: Sequence[Any],
        memo: DispatchMemo | None = None,
    ) -> None:
        self.device = device
        self.executable = executable
        self.views = views
        self.buffers = buffers
        self.accesses = accesses
        self.scalars = scalars
        self.memo = DispatchMemo() if memo is None else memo

    def trace_fields(self, name: str, dims: tuple[int, int, int]) -> TraceFields:
        """The trace fields of a dispatch of kernel ``name`` over ``dims`` (the latest
        kept): see :meth:`Command.trace_fields`."""
        memo = self.memo
        known = memo.described
        if known is not None and known[0] == dims and known[1] == name:
            return known[2]
        label = dispatch_label(name, self.named_scalars(), dims)
        described = (CommandKind.DISPATCH, label, self.device_ranges(), None, None)
        memo.described = (dims, name, described)
        return described

    def named_scalars(self) -> tuple[tuple[str, Any], ...]:
        """The user's scalar arguments with their parameter names (element counts a
        checked kernel adds left out), made once."""
        memo = self.memo
        named = memo.named_scalars
        if named is None:
            parameters = getattr(self.executable, "scalar_parameters", ())
            named = memo.named_scalars = tuple(
                (parameter.name, value)
                for parameter, value in zip(parameters, self.scalars, strict=False)
                if parameter.count_of is None
            )
        return named

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        """The views as device ranges of a trace record (made once)."""
        memo = self.memo
        ranges = memo.device_ranges
        if ranges is None:
            ranges = memo.device_ranges = tuple(
                [
                    view.device_ranges(access)[0]
                    for view, access in zip(self.views, self.accesses, strict=True)
                    if access is not None
                ]
            )
        return ranges


class DispatchCommand(Command):
    """A kernel launch over ``dims`` threads with ``arguments``."""

    kind = CommandKind.DISPATCH
    __slots__ = ("arguments", "dims", "name")

    def __init__(self, name: str, dims: tuple[int, int, int], arguments: DispatchArguments) -> None:
        # Command.__init__ written out: a tiny dispatch's cost is mostly Python calls
        self.id = next(command_ids)
        self.enqueued = now()
        self.device = arguments.device
        self.views = arguments.views
        self.stream_id = None
        self.name = name
        self.dims = dims
        self.arguments = arguments

    @property
    def label(self) -> str:  # type: ignore[override]
        """What a trace records: ``vecadd(n=1024) [1024]`` (made when a trace asks)."""
        return self.arguments.trace_fields(self.name, self.dims)[1]

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self.arguments.device_ranges()

    def trace_fields(self) -> TraceFields:
        known = self.arguments.memo.described  # the fast path of DispatchArguments.trace_fields
        if known is not None and known[0] == self.dims and known[1] == self.name:
            return known[2]
        return self.arguments.trace_fields(self.name, self.dims)

    def describe(self) -> str:
        return f"dispatch {self.name}{list(d for d in self.dims if d != 1) or [1]}"

    def prepare(self, backend: Backend) -> Any | None:
        """This dispatch made ready for ``backend.run_dispatches``, or ``None`` when the
        backend runs it with ``run`` only; kept in the arguments' memo for the next dispatch
        of the same size."""
        arguments = self.arguments
        memo = arguments.memo
        prepared = memo.prepared
        if prepared is None or prepared[0] != self.dims:
            ready = backend.prepare_dispatch(
                arguments.executable, self.dims, arguments.buffers, arguments.scalars
            )
            prepared = memo.prepared = (self.dims, ready)
        return prepared[1]

    def run(self, transfers: Transfers) -> DeviceSpan | None:
        arguments = self.arguments
        if getattr(arguments.executable, "prints", None):
            return printing_dispatch(self, transfers)
        return transfers.backend.dispatch(
            arguments.executable, self.dims, arguments.buffers, arguments.scalars
        )


report_submitted, start_run = python_report_submitted, python_start_run
"""Tell a recording recorder of a submission (:func:`python_report_submitted`), and start
the timer of a run (:func:`python_start_run`): in C, with the memo checks of the
``trace_fields()`` above, where the extension ``_submission_fields`` was built and the
recorder's Python hooks are not asked for (``LUISA_NB_PYTHON_RECORDER``)."""
if os.environ.get(PYTHON_HOOKS_VARIABLE, "") in ("", "0"):
    try:
        from luisa_nb.runtime._submission_fields import (
            report_submitted,
            start_run,  # noqa: F401 (what execution.py and real_luisa.py import)
            use_command_types,
        )
    except ImportError:  # not built (no C compiler or Python headers at install)
        pass
    else:
        use_command_types(
            UploadCommand, DownloadCommand, DispatchCommand, CAPTURE_FIELD, host_range
        )

NATIVE = report_submitted is not python_report_submitted
"""Whether submissions are reported in C."""
