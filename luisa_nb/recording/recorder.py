"""The recorder: the only writer of trace records.

The runtime always reports to :func:`active_recorder`. With no trace active that is
:data:`NULL_RECORDER`, whose hooks do nothing, so an untraced program pays one call per
hook and takes the same locks, in the same order, as a traced one. The runtime hands
the per-command hooks plain values (ids, times, host bytes, trace fields); working out
those of ``submitted`` and ``run_timer`` costs time, so it calls those two only while
the recorder is ``recording``.

A :class:`TraceRecorder` appends what it hears to logs of numbers: rows per command, per
host read or write, per run and per tick of its worker, whose hooks run in C where that
was built (:mod:`luisa_nb.recording.row_appender`), and rows per sync point; no Python
object is kept per command, run or sync point. :mod:`luisa_nb.recording.table` turns the
logs into columns and records when the trace is read.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import CodeType, MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from xxhash import xxh3_128_digest

from luisa_nb.errors import TraceError
from luisa_nb.recording.clock import now
from luisa_nb.recording.naming import (
    array_name,
    code_line,
    code_site,
    data_address,
    memory_owner,
    owner_name,
    owners,
    user_frame,
)
from luisa_nb.recording.records import (
    BufferInfo,
    Capture,
    CommandKind,
    CompileRecord,
    DevicePrintRecord,
    DeviceRange,
    HostRange,
    KernelLaunch,
    PendingCommand,
    PrintedLine,
    RangeRecord,
    ReleaseRecord,
    Status,
    StreamInfo,
    SyncKind,
    value_layout,
)
from luisa_nb.recording.row_appender import (
    ACCESS_COLUMNS,
    COMPLETION_COLUMNS,
    NATIVE,
    RUN_COLUMNS,
    SEQ_COLUMN,
    SUBMISSION_COLUMNS,
    SYNC_COLUMNS,
    TICK_COLUMNS,
    UNNAMED_LIMIT,
    LogSnapshot,
    PythonRowAppender,
    RowAppender,
)
from luisa_nb.recording.synthetic_addresses import cluster_names

if TYPE_CHECKING:
    from luisa_nb.recording.trace import Trace

Namer = Callable[["Trace", Mapping[str, object]], None]
PendingFinder = Callable[[Mapping[str, object]], list[PendingCommand]]
"""Lists the commands waiting in command lists (added, not yet executed) right now,
naming their buffers after the variables of the namespace it is given."""

_namers: list[Namer] = []
_pending_finders: list[PendingFinder] = []

DESCRIBED = ("kind", "label", "device_ranges", "host", "enqueue_capture")
"""What a command says about itself in a trace (``trace_fields()``), in order."""
TraceFields = tuple[CommandKind, str, tuple[DeviceRange, ...], HostRange | None, Capture | None]
"""The type of a command's ``trace_fields()``: the values of :data:`DESCRIBED`."""
HOST_FIELD = DESCRIBED.index("host")
CAPTURE_FIELD = DESCRIBED.index("enqueue_capture")

MISSING = -1
"""A log's value for "none" (a sync point without a stream, an event, ...)."""
SYNC_KINDS = tuple(SyncKind)
STATUSES = tuple(Status)
_SYNC_KIND_CODES = {kind._value_: code for code, kind in enumerate(SYNC_KINDS)}
_STATUS_CODES = {status._value_: code for code, status in enumerate(STATUSES)}
"""Keyed by the members' values: hashing an enum member is a Python call."""


FrameSite = tuple[CodeType, int] | None
"""A line of code, kept cheaply: its code object and line number."""

HOST_WAITS = (SyncKind.SYNCHRONIZE, SyncKind.EVENT_SYNCHRONIZE)
"""Sync points at which the host waits for the device."""
if NATIVE:  # the C sync hooks log these members by position, SYNCHRONIZE first
    from luisa_nb.recording._row_appender import use_sync_kinds

    use_sync_kinds(SYNC_KINDS, HOST_WAITS, STATUSES)
_SYNCHRONIZE = SyncKind.SYNCHRONIZE  # read off the class once: it costs a Python call
_DISPATCH = CommandKind.DISPATCH


class RunTimer:
    """The null timer of one run. A trace's timer (:class:`~.row_appender.RunLog`) has
    ``times``, which the worker ticks (``times.tick()``) before each step and once after
    the last (steps run by one call elsewhere, in C, append theirs there with
    ``times.frombytes``); ``None``: nothing is timed."""

    __slots__ = ()
    times: Any = None

    def tick_at(self, time: int) -> None:
        """A tick at a moment measured elsewhere (a runtime that reports late)."""
        return None

    def failed(self, position: int, status: Status, error: str) -> None:
        return None

    def end_at(self, count: int) -> None:
        """The run ended after its first ``count`` steps (one of them failed); the steps
        after those belong to runs still to run, timed by their own timers."""
        return None

    def spans(self, spans: Sequence[tuple[int, Any]]) -> None:
        return None


NULL_TIMER = RunTimer()


class LoggedRuns(NamedTuple):
    """A snapshot of a recorder's runs (:meth:`TraceRecorderBase.run_log`)."""

    runs: LogSnapshot
    """A row per run (:data:`~.row_appender.RUN_COLUMNS`)."""
    steps: LogSnapshot
    """The command ``id`` of each step, run after run."""
    ticks: LogSnapshot
    """A row per tick (:data:`~.row_appender.TICK_COLUMNS`)."""
    failures: dict[int, tuple[int, Status, str, int]]
    ends: dict[int, int]
    spans: dict[int, Sequence[tuple[int, Any]]]


class Recorder:
    """The null recorder: every hook does nothing. Subclasses record.

    Hooks, in the order the runtime calls them: ``upload_enqueued`` and
    ``download_enqueued`` when a transfer is made; ``submitted`` (``submitted_one`` for a
    list of one) when a command list is submitted and ``run_timer`` when a worker starts a
    run, both only while
    :attr:`recording`;
    ``host_read``/``host_write`` inside the host-memory lock, right after the bytes moved;
    ``sync_issued`` and ``sync_completed`` around sync points; ``range_opened`` and
    ``range_closed`` around a user range; ``compiled`` after a kernel was prepared.
    """

    recording = False
    initial_pending: Mapping[int, Any] = MappingProxyType({})
    """Buffers made before the trace whose bytes it has not captured yet, by id: a worker
    calls :meth:`capture_initial` before running a run while there are any."""

    def capture_initial(self, steps: Sequence[Any]) -> None:
        """Capture the bytes of the pending buffers that ``steps`` touch, before they run."""

    def upload_enqueued(self, host: np.ndarray, data: np.ndarray) -> Capture | None:
        """An upload of ``host`` (whose bytes are ``data``) was made; returns the bytes'
        capture."""
        return None

    def download_enqueued(self, host: np.ndarray) -> None:
        """A download into ``host`` was made."""
        return None

    def submitted(
        self,
        stream_id: int,
        ids: Sequence[int],
        enqueued: Sequence[int],
        fields: Sequence[TraceFields],
        stream: Any,
        commands: Sequence[Any],
    ) -> None:
        """A list of commands was submitted to stream ``stream_id``: their ``ids``, enqueue
        times and trace fields, in order. ``stream`` and ``commands`` are what the recorder
        notes of a stream or trace fields it has not seen (:meth:`TraceRecorderBase._describe`)."""
        return None

    def submitted_one(
        self,
        stream_id: int,
        command_id: int,
        enqueued: int,
        fields: TraceFields,
        stream: Any,
        command: Any,
    ) -> None:
        """:meth:`submitted` of one command, given its values themselves: what a synchronous
        call submits, without building three sequences of one."""
        return None

    def run_timer(self, ids: Sequence[int]) -> RunTimer:
        """A worker starts a run of the commands with ``ids``, in order; returns its timer."""
        return NULL_TIMER

    def host_read(
        self, command_id: int, offset: int, data: np.ndarray, at: int | None = None
    ) -> None:
        """Command ``command_id`` read ``data`` from its host memory at byte ``offset``,
        now or ``at`` (a moment measured elsewhere)."""
        return None

    def host_reads(
        self, command_ids: Sequence[int], offset: int, data: np.ndarray, at: int
    ) -> None:
        """Commands ``command_ids`` each read ``data`` from their host memory at byte
        ``offset``, at ``at``: :meth:`host_read` of each, in one call."""
        return None

    def host_write(self, command_id: int, data: np.ndarray, at: int | None = None) -> None:
        return None

    def sync_issued(self, kind: SyncKind, stream: Any, event: int | None, sync_id: int) -> Any:
        """A sync point was issued; returns the token to complete it with."""
        return None

    def sync_completed(self, token: Any, status: Status, error: str | None = None) -> None:
        return None

    def range_opened(self, name: str) -> RangeRecord | None:
        """The user's program entered a range named ``name``; returns its token."""
        return None

    def range_closed(self, token: RangeRecord | None) -> None:
        return None

    def compiled(self, label: str, begin: int, end: int, cached: bool) -> None:
        """The host spent ``begin`` to ``end`` preparing a kernel (``cached``: loading a
        build made before)."""
        return None

    def device_printed(
        self, command_id: int, lines: Sequence[tuple[tuple[int, int, int], str]], dropped: int
    ) -> None:
        """Dispatch ``command_id`` printed ``lines`` (thread, text) and dropped ``dropped``
        more past its limit."""
        return None


NULL_RECORDER = Recorder()


class TraceRecorderBase(Recorder):
    """What a trace's recorder does in Python: the hooks called once per sync point (the C
    row appender has its own), range or compile, what the per-command hooks of its row
    appender (:mod:`.row_appender`) call for the cases they leave to Python, and reading
    the logs. A recorder class puts a row appender before this class
    (:class:`TraceRecorder`, :class:`PythonTraceRecorder`).

    The row appender's logs hold numbers; what they name is kept here once: a submission names
    its commands' trace fields by their position in :attr:`described`, a host access its
    bytes by digest (in the trace's captures). The few runs that failed, ended early or
    report device spans say so in :attr:`run_failures`, :attr:`run_ends` and
    :attr:`run_spans`.
    """

    recording = True
    submissions: Any
    accesses: Any
    steps: Any
    runs: Any
    ticks: Any

    def __init__(self, trace: Trace) -> None:
        self._trace = weakref.ref(trace, functools.partial(_trace_freed, weakref.ref(self)))
        self.described: list[TraceFields] = []
        """The distinct trace fields of the commands logged (see :meth:`_describe`)."""
        self.run_failures: dict[int, tuple[int, Status, str, int]] = {}
        """By run: the failed step's position, its status and error, and when it failed."""
        self.run_ends: dict[int, int] = {}
        """By run that ended early: how many of its steps it ran (the others ran later)."""
        self.run_spans: dict[int, Sequence[tuple[int, Any]]] = {}
        """By run: ``(position, DeviceSpan)`` of the steps the device timed."""
        self.ranges: list[RangeRecord] = []
        self.compiles: list[CompileRecord] = []
        self.device_prints: dict[int, DevicePrintRecord] = {}
        self.releases: list[ReleaseRecord] = []
        self._watches: dict[int, tuple[weakref.ref, HostRange, FrameSite]] = {}
        """Per memory owner (by ``id``): a weak reference to it, its memory, and where the
        program made the first download into it."""
        self._open_ranges = threading.local()
        self._lock = threading.Lock()
        self._hosts: dict[int, HostRange] = {}
        """By id: each host range described."""
        self._host_owners: dict[int, weakref.ref | tuple[weakref.ref, ...]] = {}
        """By id of a host range in :attr:`_hosts`: a weak reference to its array, or to it and
        each array it views. Two dicts, not one of pairs: a pair holding a weak reference
        is an object the garbage collector looks at on every pass, one per new array."""
        self._last_download: Callable[[], np.ndarray | None] = _nothing
        """A weak reference to the host array of the latest download (named and watched)."""
        self._captured = trace.captures
        self._blobs = trace.blobs  # the C hooks capture new bytes into these themselves
        self._capture_head = trace.capture_head  # where the policy keeps all bytes or none
        limit = trace.metadata.capture_limit
        self._capture_left = sys.maxsize if limit is None else min(limit, sys.maxsize)
        self.initial_pending: dict[int, Any] = {}
        self.excluded: frozenset[int] = frozenset()
        """Ids of the commands that waited in command lists when the trace started: made
        before it, they are not its commands even if they run while it records."""

    @property
    def trace(self) -> Trace | None:
        """The trace this records into (``None`` once it is freed), held weakly: a trace
        holds its recorder, and with no cycle between them a trace the program lets go of
        is freed at once, with the memory of its captured bytes (which the next trace then
        reuses)."""
        return self._trace()

    def _capture(
        self, data: np.ndarray, binary: bytes | None = None, owned: bool = False
    ) -> Capture:
        """Capture ``data`` into the trace (:meth:`Trace.capture`). A run of a trace
        freed while it ran keeps no bytes: its captures only name their digests."""
        trace = self.trace
        if trace is not None:
            return trace.capture(data, binary, owned)
        binary = xxh3_128_digest(data) if binary is None else binary
        return self._captured.setdefault(binary, Capture(data.nbytes, None, binary.hex()))

    def _note_array(self, array: np.ndarray) -> None:
        """Remember the name ``array`` has where the user's code made the command.

        Looking a new array up costs a pass over the caller's variables, so a line of
        code whose arrays were unnamed :data:`UNNAMED_LIMIT` times (a loop uploading
        temporaries) is not looked at again; :func:`stop` still names what it can."""
        known = self._array_names.get(id(array))
        if known is not None and known[0]() is array:
            return
        frame = user_frame()
        site = None if frame is None else (frame.f_code, frame.f_lineno)
        if frame is None or self._unnamed_sites.get(site, 0) >= UNNAMED_LIMIT:
            return
        name = array_name(array, (frame.f_locals, frame.f_globals))
        if name is None:
            self._unnamed_sites[site] = self._unnamed_sites.get(site, 0) + 1
        self._array_names[id(array)] = (weakref.ref(array), name)

    def download_enqueued(self, host: np.ndarray) -> None:
        if self._last_download() is host:  # a loop downloads into one array: noted already
            return
        self._note_array(host)
        self._watch_release(host)
        known = self._array_names.get(id(host))
        if known is not None and known[0]() is host:
            self._last_download = known[0]

    def _watch_release(self, host: np.ndarray) -> None:
        """Watch the array owning ``host``'s memory, to record a :class:`ReleaseRecord`
        when it is freed (see :meth:`_released`)."""
        owner = memory_owner(host)
        if owner is None:
            return
        key = id(owner)
        watch = self._watches.get(key)
        if watch is not None and watch[0]() is owner:
            return
        reference = weakref.ref(owner, functools.partial(_released, weakref.ref(self), key))
        dtype, shape = value_layout(owner.dtype, owner.shape)
        known = self._array_names.get(key)
        name = known[1] if known is not None and known[0]() is owner else None
        memory = HostRange(data_address(owner), owner.nbytes, dtype, shape, name)
        frame = user_frame()
        made_at = None if frame is None else (frame.f_code, frame.f_lineno)
        self._watches[key] = (reference, memory, made_at)

    def _released(self, key: int, reference: weakref.ref) -> None:
        """A watched array was freed (called by the weak reference's callback, the module's
        :func:`_released`). Whatever dropped the last reference is two frames up: the
        program's code (which names the site) or the runtime when a finished command held
        it. It runs wherever that happened, so it takes no lock but the seq's, which is
        never held while an array is dropped."""
        watch = self._watches.get(key)
        if watch is None or watch[0] is not reference:
            return
        del self._watches[key]
        trace = self.trace
        if trace is None or trace.metadata.stopped is not None:
            return
        time = now()
        site = code_site(sys._getframe(2))
        seq = min(self._host_waits.values(), default=None)
        if seq is None:
            seq = self.stamp_sync(None, 0)[0]
        made_at = None if watch[2] is None else code_line(*watch[2])
        self.releases.append(ReleaseRecord(seq, time, watch[1], site, made_at))

    def name_from(self, namespace: Mapping[str, object], *, replace: bool = False) -> None:
        """Name host ranges after the variables of ``namespace`` that hold their arrays, or
        arrays those view, while they are alive: the unnamed ones, or all with
        ``replace``."""
        for key, host in self._hosts.items():
            if host.name is None or replace:
                references = self._host_owners[key]
                if type(references) is not tuple:
                    references = (references,)
                alive = [owner for owner in (ref() for ref in references) if owner is not None]
                host.name = owner_name(alive, host.address, host.nbytes, (namespace,)) or host.name

    def name_the_unnamed(self) -> None:
        """Name each host range nothing named after the memory it lies in (``host#2``,
        ``host#2[0:512]``: :func:`~.synthetic_addresses.cluster_names`), so that no view
        or message of a stopped trace shows an address of the process."""
        hosts = list(self._hosts.values())
        if all(host.name is not None for host in hosts):
            return  # a loop's arrays, all named where they were made: nothing to cluster
        for host, name in zip(hosts, cluster_names(hosts), strict=True):
            if host.name is None:
                host.name = name

    def _describe(self, fields: TraceFields, command: Any, stream: Any) -> int:
        """Keep the trace fields of ``command`` (submitted to ``stream``), not logged
        before, and note its buffers and host array; returns their position. Commands with
        the same fields touch the same buffers and host array: a loop's commands mostly
        share theirs (a kernel's dispatches on the same arguments, the uploads of one array
        into one view), so this runs once for them. Two threads may keep the same fields
        twice; either position names them."""
        buffers = self.trace.buffers
        for view in command.views:
            if view.buffer.id not in buffers:
                self._first_use(view.buffer, stream.device)
        if fields[0] is _DISPATCH:
            self._note_launch(fields, command)
        host = fields[HOST_FIELD]
        if host is not None and id(host) not in self._hosts:
            # give the range the name its array had when the command was made, and keep
            # the array and those it views (weakly) for name_from()
            array = command.host
            known = self._array_names.get(id(array))
            if host.name is None and known is not None and known[0]() is array:
                host.name = known[1]
            self._hosts[id(host)] = host
            if array.base is None:  # owners(array) is [array]: the common case, without a call
                self._host_owners[id(host)] = weakref.ref(array)
            else:
                self._host_owners[id(host)] = tuple(weakref.ref(owner) for owner in owners(array))
        lock, described = self._lock, self.described
        lock.acquire()  # not `with`: two bound methods fewer
        try:
            position = self._described_at[id(fields)] = len(described)
            described.append(fields)
        finally:
            lock.release()
        return position

    def _note_launch(self, fields: TraceFields, command: Any) -> None:
        """Keep what dispatch ``command`` runs, by its label and device ranges (which name
        the kernel, its scalars, size and buffers); two different launches with the same
        key are kept as ``None``: replay then says it cannot tell them apart."""
        arguments = getattr(command, "arguments", None)
        dims = getattr(command, "dims", None)
        if dims is None or arguments is None or not hasattr(arguments.executable, "launch"):
            return  # an indirect dispatch, or a runtime whose kernels replay cannot run
        launch = KernelLaunch(
            arguments.executable,
            tuple(dims),
            tuple(
                (view.buffer.id, view.offset_bytes, view.nbytes, view.dtype)
                for view in arguments.views
            ),
            tuple(arguments.scalars),
        )
        key = (fields[1], fields[2])
        launches = self.trace.launches
        known = launches.setdefault(key, launch)
        if known is not None and known is not launch and not _same_launch(known, launch):
            launches[key] = None

    def _first_submission_of(self, stream: Any) -> None:
        """Note ``stream`` in the trace and its device's staging policy as rows record it
        (``device.staging.value``, looked up once per stream: an enum's value is slow)."""
        device = stream.device
        if stream.id not in self.trace.streams:
            reported = getattr(device, "times_reported", True)
            self.trace.streams[stream.id] = StreamInfo(
                stream.id, device.label, stream.name, reported
            )
        self._policies[stream.id] = device.staging.value

    def _first_use(self, buffer: Any, device: Any) -> None:
        """Note ``buffer`` (of ``device``) in the trace; one made before the trace started
        has its bytes captured before the first traced command that touches it runs."""
        created = getattr(buffer, "created", None)
        trace = self.trace
        before = created is not None and created < trace.metadata.started
        if before and trace.metadata.capture != "none":
            self.initial_pending[buffer.id] = buffer
        dtype, shape = value_layout(buffer.dtype, (buffer.size,))
        self.trace.buffers[buffer.id] = BufferInfo(
            buffer.id,
            buffer.nbytes,
            dtype,
            math.prod(shape),
            device.label,
            buffer.name,
            buffer.shape if getattr(buffer, "__lnb_image__", False) else None,
            getattr(buffer, "created", None),
        )

    def capture_initial(self, steps: Sequence[Any]) -> None:
        """Capture, on the worker that is about to run ``steps``, the bytes of the buffers
        made before the trace that they touch (in host-visible memory: the CPU backends'),
        as :attr:`BufferInfo.initial`. A loop's commands of one kernel share their views,
        and the look stops once nothing is pending: a run of many commands on the same
        buffers pays for the first few only."""
        pending = self.initial_pending
        looked_at = None
        trace = self.trace
        if trace is None:
            pending.clear()
            return
        for step in steps:
            if not pending:
                return
            views = getattr(step, "views", ())
            if views is looked_at:
                continue
            looked_at = views
            for view in views:
                buffer = pending.pop(view.buffer.id, None)
                if buffer is None:
                    continue
                allocation = getattr(buffer, "_allocation", None)
                data = getattr(allocation, "data", None)
                info = trace.buffers.get(buffer.id)
                if isinstance(data, np.ndarray) and info is not None:
                    info.initial = self._capture(data[: info.nbytes])

    def command_log(self) -> tuple[LogSnapshot, list[TraceFields]]:
        """The commands logged so far: a row per command
        (:data:`~.row_appender.SUBMISSION_COLUMNS`), and the trace fields the rows name."""
        rows = LogSnapshot(self.submissions, SUBMISSION_COLUMNS)
        return rows, self.described[:]  # holds every position that `rows` names

    def access_log(self) -> LogSnapshot:
        """The host reads and writes logged so far: a row per access
        (:data:`~.row_appender.ACCESS_COLUMNS`)."""
        return LogSnapshot(self.accesses, ACCESS_COLUMNS)

    def run_log(self) -> LoggedRuns:
        """The runs logged so far. The parts are read in this order so that each names
        only what the later ones hold: a failed run had ended (``end_at`` comes first) and
        ticked, a tick's run and a run's steps were logged."""
        failures, ends, spans = dict(self.run_failures), dict(self.run_ends), dict(self.run_spans)
        ticks = LogSnapshot(self.ticks, TICK_COLUMNS)
        runs = LogSnapshot(self.runs, RUN_COLUMNS)
        steps = LogSnapshot(self.steps, ("id",))
        return LoggedRuns(runs, steps, ticks, failures, ends, spans)

    def sync_log(self) -> tuple[LogSnapshot, LogSnapshot, list[str]]:
        """The sync points logged so far: a row per sync point issued
        (:data:`SYNC_COLUMNS`), a row per completion (:data:`COMPLETION_COLUMNS`), and the
        errors they name."""
        completions = LogSnapshot(self.sync_completions, COMPLETION_COLUMNS)  # first: each
        errors = self.sync_errors[:]  # names what the later parts hold
        return LogSnapshot(self.syncs, SYNC_COLUMNS), completions, errors

    def staging_of(self, stream_id: int) -> str:
        """The staging policy of the submissions of stream ``stream_id``."""
        return self._policies[stream_id]

    def _run_failed(self, run: int, position: int, status: Status, error: str) -> None:
        self.run_failures[run] = (position, status, error, now())

    def _run_ended(self, run: int, count: int) -> None:
        self.run_ends[run] = count

    def _run_spans(self, run: int, spans: Sequence[tuple[int, Any]]) -> None:
        self.run_spans[run] = spans

    def sync_issued(self, kind: SyncKind, stream: Any, event: int | None, sync_id: int) -> int:
        """Log the sync point; returns its row in :attr:`syncs`."""
        stream_id = None if stream is None else stream.id
        covers = kind is _SYNCHRONIZE
        covered = None
        with self._lock:
            looked_at, last = self._looked_at.get(stream_id, (0, None))
            seq, issued, row, rows = self.stamp_sync(stream_id if covers else None, looked_at)
            if covers:
                if row >= 0:
                    last = self.submissions.row(row)[SEQ_COLUMN]
                self._looked_at[stream_id] = (rows, last)
                placed = self._last_placed.get(stream_id)
                covered = placed if last is None or (placed is not None and placed > last) else last
            elif stream_id is not None:
                self._last_placed[stream_id] = seq
            token = len(self.syncs)
            self.syncs.append(
                sync_id, seq, _SYNC_KIND_CODES[kind._value_], _or_missing(stream_id),
                _or_missing(event), _or_missing(covered), issued,
            )  # fmt: skip
        if kind in HOST_WAITS:
            self._host_waits[token] = seq
        return token

    def sync_completed(self, token: int, status: Status, error: str | None = None) -> None:
        error_code = MISSING
        if error is not None:
            with self._lock:
                error_code = len(self.sync_errors)
                self.sync_errors.append(error)
        self.sync_completions.append(token, now(), _STATUS_CODES[status._value_], error_code)
        self._host_waits.pop(token, None)

    def range_opened(self, name: str) -> RangeRecord:
        stack = self._range_stack()
        parent = stack[-1] if stack else None
        with self._lock:
            parent_id = None if parent is None else parent.id
            record = RangeRecord(len(self.ranges), name, len(stack), parent_id, begin=now())
            self.ranges.append(record)
        stack.append(record)
        return record

    def range_closed(self, token: RangeRecord | None) -> None:
        if token.end is None:
            token.end = now()
        stack = self._range_stack()
        for position, record in enumerate(stack):
            if record is token:
                del stack[position:]
                break

    def _range_stack(self) -> list[RangeRecord]:
        """The ranges open on the calling thread, outermost first."""
        stack = getattr(self._open_ranges, "stack", None)
        if stack is None:
            stack = self._open_ranges.stack = []
        return stack

    def compiled(self, label: str, begin: int, end: int, cached: bool) -> None:
        self.compiles.append(CompileRecord(label, begin, end, cached))

    def device_printed(
        self, command_id: int, lines: Sequence[tuple[tuple[int, int, int], str]], dropped: int
    ) -> None:
        printed = [PrintedLine(thread, text) for thread, text in lines]
        self.device_prints[command_id] = DevicePrintRecord(command_id, printed, dropped)

    def close_ranges(self, time: int) -> None:
        """End every range still open at ``time`` (the trace stopped)."""
        for record in self.ranges:
            if record.end is None:
                record.end = time


def _trace_freed(recorder: weakref.ref, trace: weakref.ref) -> None:
    """The callback of a recorder's weak reference to its trace: the trace was freed (its
    ``with`` block left, and nothing holds it), so the runs of its commands that are still
    queued run unrecorded (:attr:`Recorder.recording`)."""
    alive = recorder()
    if alive is not None:
        alive.recording = False


def _released(recorder: weakref.ref, key: int, reference: weakref.ref) -> None:
    """The callback of a watched array's weak reference: tells the recorder, if it is still
    alive (the callback holds it weakly, so that a dropped trace is freed at once)."""
    alive = recorder()
    if alive is not None:
        alive._released(key, reference)


def _same_launch(first: KernelLaunch, second: KernelLaunch) -> bool:
    """Whether two launches run the same kernel on the same bytes (scalars compared as
    arrays: a struct scalar is one)."""
    return (
        first.executable is second.executable
        and first.dims == second.dims
        and first.buffers == second.buffers
        and len(first.scalars) == len(second.scalars)
        and all(
            np.array_equal(np.asarray(a), np.asarray(b))
            for a, b in zip(first.scalars, second.scalars, strict=True)
        )
    )


def _nothing() -> None:
    """A weak reference to nothing."""
    return None


def _or_missing(value: int | None) -> int:
    return MISSING if value is None else value


class TraceRecorder(RowAppender, TraceRecorderBase):
    """Appends to the logs of one :class:`~luisa_nb.recording.trace.Trace`; its
    per-command hooks are :data:`~.row_appender.RowAppender`'s (in C where it was
    built)."""


class PythonTraceRecorder(PythonRowAppender, TraceRecorderBase):
    """A :class:`TraceRecorder` whose per-command hooks run in Python (what a trace uses
    where the C appender was not built; the tests run both)."""


_active: Recorder = NULL_RECORDER


def register_namer(namer: Namer) -> None:
    """Add a function that names a stopped trace's objects from the variables in scope
    where the trace ended (the runtime names its buffers this way)."""
    _namers.append(namer)


def active_recorder() -> Recorder:
    return _active


def active_trace() -> Trace | None:
    return _active.trace if isinstance(_active, TraceRecorderBase) else None


def register_pending_finder(finder: PendingFinder) -> None:
    """Have ``finder`` list the commands waiting in command lists when a trace starts (they
    are left out of it) and when it stops (they are its pending commands)."""
    _pending_finders.append(finder)


def pending_commands(namespace: Mapping[str, object] | None = None) -> list[PendingCommand]:
    """Every command waiting in a command list right now, as the finders list them."""
    return [command for finder in _pending_finders for command in finder(namespace or {})]


def start(trace: Trace) -> None:
    global _active
    if _active is not NULL_RECORDER:
        raise TraceError(
            "a trace is already recording; stop it (leave its `with` block) before starting another"
        )
    trace.recorder.excluded = frozenset(command.id for command in pending_commands())
    trace.metadata.started = now()
    _active = trace.recorder


def stop(
    trace: Trace, namespace: Mapping[str, object] | None = None, *, rename: bool = False
) -> None:
    """Stop recording into ``trace``; name host arrays and buffers found in ``namespace``
    (with ``rename``, also those already named where their commands were made)."""
    global _active
    if _active is trace.recorder:
        _active = NULL_RECORDER
    trace.metadata.stopped = now()
    trace.recorder.close_ranges(trace.metadata.stopped)
    excluded = trace.recorder.excluded
    waiting = pending_commands(namespace)
    trace.metadata.pending = [command for command in waiting if command.id not in excluded]
    if namespace:
        trace.recorder.name_from(namespace, replace=rename)
    for namer in _namers:  # a namer may also note the API the commands came through
        namer(trace, namespace or {})
    trace.recorder.name_the_unnamed()
    if trace.metadata.pending:  # numbered after the trace's records, in the order made
        first = sum(trace.counts) + 1
        waiting = sorted(trace.metadata.pending, key=lambda command: command.id)
        trace.metadata.pending = [
            replace(command, id=first + place) for place, command in enumerate(waiting)
        ]
    trace.stopped_recording()
