"""Trace records: plain data that the runtime fills in and analysis reads.

All times are ``time.perf_counter_ns()`` values on one host clock. A record is created
when its command is submitted (or a sync point is issued) and its times are filled in
by the stream worker as the command runs; it never references runtime objects, so a
trace can be saved, loaded and analysed with no device.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np


class CommandKind(str, Enum):
    UPLOAD = "upload"
    DOWNLOAD = "download"
    COPY = "copy"
    FILL = "fill"
    DISPATCH = "dispatch"


class SyncKind(str, Enum):
    SYNCHRONIZE = "synchronize"
    SIGNAL = "signal"
    WAIT = "wait"
    EVENT_SYNCHRONIZE = "event_synchronize"
    CALLBACK = "callback"


class Access(str, Enum):
    """How a command touches a device range. ``MAY_READ``: it may read any part of the
    range or none of it (a kernel reaches the resources of a bindless array by slots it
    computes)."""

    READ = "read"
    WRITE = "write"
    READ_WRITE = "read_write"
    MAY_READ = "may_read"

    @property
    def writes(self) -> bool:
        return self is Access.WRITE or self is Access.READ_WRITE


class Status(str, Enum):
    PENDING = "pending"
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class DeviceRange:
    """Bytes ``[offset, offset + nbytes)`` of device buffer ``buffer`` (its id)."""

    buffer: int
    offset: int
    nbytes: int
    access: Access

    def overlaps(self, other: DeviceRange) -> bool:
        """Whether the two share a byte (an empty range shares none)."""
        return (
            self.buffer == other.buffer
            and self.nbytes > 0
            and other.nbytes > 0
            and self.offset < other.offset + other.nbytes
            and other.offset < self.offset + self.nbytes
        )


def value_layout(dtype: np.dtype, shape: tuple[int, ...]) -> tuple[str, tuple[int, ...]]:
    """How a trace records elements of ``dtype`` in an array of ``shape``: a plain dtype
    as it is; a record such as a ``float3`` (three float32 fields, 16 bytes) as its one
    field type, or else bytes, with a last axis counting those values per element."""
    if dtype.fields is None and dtype.subdtype is None:
        return dtype.str, shape
    leaves = _leaf_dtypes(dtype)
    base = leaves.pop() if len(leaves) == 1 else np.dtype(np.uint8)
    if dtype.itemsize % base.itemsize:
        base = np.dtype(np.uint8)
    return base.str, (*shape, dtype.itemsize // base.itemsize)


def _leaf_dtypes(dtype: np.dtype) -> set[np.dtype]:
    """The plain dtypes a record or sub-array dtype is made of, at any depth."""
    if dtype.subdtype is not None:
        return _leaf_dtypes(dtype.subdtype[0])
    if dtype.fields is None:
        return {dtype}
    return set().union(*(_leaf_dtypes(field[0]) for field in dtype.fields.values()))


@dataclass(slots=True)
class HostRange:
    """Host memory a command reads or writes, identified by address, not by object."""

    address: int
    nbytes: int
    dtype: str
    shape: tuple[int, ...]
    name: str | None = None

    @property
    def end(self) -> int:
        return self.address + self.nbytes

    def overlaps(self, other: HostRange) -> bool:
        """Whether the two share a byte (an empty range shares none)."""
        return (
            self.nbytes > 0
            and other.nbytes > 0
            and self.address < other.end
            and other.address < self.end
        )


@dataclass(frozen=True, slots=True)
class Capture:
    """Host bytes as a command saw them: a digest of all ``nbytes`` bytes and, unless the
    capture policy is ``none``, a copy of the first bytes.

    ``blob`` is the key (the digest of the copied bytes) of a uint8 array in
    :attr:`Trace.blobs`; when the copy holds every byte, ``blob == digest``. Records that
    saw the same bytes share one ``Capture``.
    """

    nbytes: int
    blob: str | None = None
    digest: str | None = None

    @property
    def complete(self) -> bool:
        """Whether the captured copy holds every byte."""
        return self.blob is not None and self.blob == self.digest


@dataclass(slots=True)
class CommandRecord:
    """One command, from submission to completion.

    ``id`` numbers the trace's commands and sync points from 1 in the order the program
    made them (the same on every run of the same code; docs/recording.md, "Command
    ids"). ``seq`` orders every record (commands and sync points) in the order the host issued
    them. ``host_read`` (uploads) is when host bytes were copied: at ``submitted`` under
    staging="submit", at execution under staging="execute". ``host_write`` (downloads)
    is when the device bytes landed in host memory. ``enqueued`` is when the ``*_async``
    call created the command (the bytes the host meant to send are ``enqueue_capture``).
    ``label`` is the kernel's name for a dispatch, else empty. ``device_started`` and
    ``device_finished`` are when the device ran the command, mapped onto the host clock,
    for backends that run commands after the call returns (remote). ``host_pieces`` is
    set for an upload read in several pieces (larger than a staging heap): ``(offset,
    nbytes, time)`` of each, ``host_read`` being the first's time.
    """

    id: int
    seq: int
    kind: CommandKind
    stream: int
    submission: int
    index: int
    label: str
    device_ranges: tuple[DeviceRange, ...]
    host: HostRange | None = None
    staging: str = "execute"
    enqueued: int = 0
    submitted: int = 0
    started: int | None = None
    finished: int | None = None
    host_read: int | None = None
    host_write: int | None = None
    device_started: int | None = None
    device_finished: int | None = None
    enqueue_capture: Capture | None = None
    data_capture: Capture | None = None
    status: Status = Status.PENDING
    error: str | None = None
    host_pieces: tuple[tuple[int, int, int], ...] | None = None


@dataclass(slots=True)
class SyncRecord:
    """A sync point: host synchronize, event signal/wait, event synchronize or callback.

    ``covers`` is, for host-side waits, the ``seq`` of the last record of ``stream`` that
    the wait is known to cover. ``issued`` is when the host called it; ``completed`` is
    when it returned (host waits) or when the worker reached it (signal, wait, callback).
    """

    id: int
    seq: int
    kind: SyncKind
    stream: int | None
    event: int | None = None
    covers: int | None = None
    issued: int = 0
    completed: int | None = None
    status: Status = Status.PENDING
    error: str | None = None


@dataclass(slots=True)
class ReleaseRecord:
    """The program let go of a host array that traced downloads write into: its memory
    could be freed from then on.

    ``seq`` places the release among commands and sync points: a release seen while a
    host wait was in progress takes that wait's ``seq`` and comes just before it (the
    program let go before the wait returned). ``host`` is the array's memory, all of it;
    ``made_at`` is where the program made the first download into it. ``site`` is where
    the program dropped its last reference, or ``None`` when a command of the runtime
    held the last one (the program had let go earlier, after ``made_at``). Sites read
    ``"file:line in function"``.
    """

    seq: int
    time: int
    host: HostRange
    site: str | None = None
    made_at: str | None = None


@dataclass(slots=True)
class RangeRecord:
    """A named span of the user's program (``with lnb.range("iteration 37"):``).

    ``id`` is its position in :attr:`Trace.ranges` (ranges are kept in the order they
    began); ``parent`` is the id of the range it is nested in, ``depth`` how deep (0 at
    the top). ``begin`` and ``end`` are host times; a command belongs to the ranges open
    when it was enqueued, a sync point to those open when it was issued. A range still
    open when the trace stops ends then.
    """

    id: int
    name: str
    depth: int
    parent: int | None
    begin: int
    end: int | None = None


@dataclass(slots=True)
class CompileRecord:
    """The host preparing a kernel from ``begin`` to ``end``: a compile, or a load of an
    already built one (``cached``)."""

    label: str
    begin: int
    end: int
    cached: bool = False


@dataclass(frozen=True, slots=True)
class PrintedLine:
    """One line a kernel printed (without luisa-python's ``[DEVICE]`` prefix) and the
    dispatch id of the thread that printed it."""

    thread: tuple[int, int, int]
    text: str


@dataclass(slots=True)
class DevicePrintRecord:
    """The lines dispatch ``command`` printed, ordered by thread (x fastest), each
    thread's in program order; ``dropped`` lines past the per-dispatch limit were only
    counted."""

    command: int
    lines: list[PrintedLine]
    dropped: int = 0

    def of_thread(self, thread: tuple[int, ...] | int) -> list[str]:
        """The texts thread ``thread`` printed (an ``(x, y, z)`` id, or x alone)."""
        wanted = (thread, 0, 0) if isinstance(thread, int) else (*thread, 0, 0)[:3]
        return [line.text for line in self.lines if line.thread == wanted]

    @property
    def threads(self) -> list[tuple[int, int, int]]:
        """The threads that printed, in order, each once."""
        return list(dict.fromkeys(line.thread for line in self.lines))


@dataclass(slots=True)
class BufferInfo:
    """A buffer a trace saw; ``image`` is ``(height, width, channels)`` for an image
    (``(depth, height, width, channels)`` for a 3D one), whose channels are the buffer's
    elements. ``created`` is when the runtime made it (host clock), ``None`` where that is
    not known (real luisa-python's buffers, older trace files): a buffer made after the
    trace started held zeros that no command wrote until its first write. ``initial``: for
    a buffer made before, its bytes just before the first traced command touching it ran,
    where the trace could read them (host-visible memory, a capture policy other than
    ``none``)."""

    id: int
    nbytes: int
    dtype: str
    size: int
    device: str
    name: str | None = None
    image: tuple[int, ...] | None = None
    created: int | None = None
    initial: Capture | None = None


@dataclass(frozen=True, slots=True)
class KernelLaunch:
    """What a dispatch ran, kept by a live trace so that replay can run it again:
    ``executable`` (the compiled kernel, whose ``launch(dims, buffers, scalars)`` runs it),
    the grid ``dims``, each buffer argument in launch order as ``(buffer id, byte offset,
    nbytes, dtype)`` and the ``scalars`` as the launch takes them. A saved trace keeps
    none."""

    executable: Any
    dims: tuple[int, int, int]
    buffers: tuple[tuple[int, int, int, np.dtype], ...]
    scalars: tuple[Any, ...]


TIMES_NOT_REPORTED = "times not reported by this runtime"
"""How views label the commands of a stream whose runtime reports no per-command times."""


@dataclass(slots=True)
class StreamInfo:
    """A stream of the trace; ``device`` is its device's label (``cpu``, ``luisa:cpu``,
    ``remote:127.0.0.1:5557``: the backend, then what tells its devices apart).
    ``times_reported`` is False for a stream whose runtime says nothing of when each
    command ran (real luisa-python): a command's ``started``/``finished`` are then its
    list's submission and the synchronize that waited for the list, not measured times."""

    id: int
    device: str
    name: str
    times_reported: bool = True

    @property
    def backend(self) -> str:
        """The backend's name: the device label up to its first colon."""
        return self.device.partition(":")[0]


@dataclass(slots=True)
class PendingCommand:
    """A command made while a trace recorded but still waiting, when it stopped, in a
    stream's command list for an ``execute()`` or ``synchronize()`` (it never ran in the
    trace, and the next trace leaves it out)."""

    id: int
    kind: str
    description: str
    stream: str


API_NAMES = ("luisa_nb", "luisa_nb.luisa", "luisa")
"""The APIs a trace's commands may come through: luisa_nb's own, its luisa-python
frontend (``import luisa_nb.luisa as luisa``), or real luisa-python instrumented."""


@dataclass(slots=True)
class TraceMetadata:
    """``api`` is the API the commands came through (one of :data:`API_NAMES`), so that
    hints name calls that exist in it; ``pending`` the commands that never ran;
    ``capture_limited`` when the captured bytes reached ``capture_limit`` (host clock),
    after which the trace kept digests only."""

    capture: str = "head"
    capture_bytes: int = 65536
    capture_limit: int | None = None
    capture_limited: int | None = None
    started: int = 0
    stopped: int | None = None
    devices: list[dict[str, Any]] = field(default_factory=list)
    api: str = "luisa_nb"
    pending: list[PendingCommand] = field(default_factory=list)


Record = CommandRecord | SyncRecord


def record_to_dict(record: Any) -> dict[str, Any]:
    """A JSON-ready dict of any record dataclass (enums become their values)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        out[f.name] = _to_json(getattr(record, f.name))
    return out


def _to_json(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value):
        return record_to_dict(value)
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value
