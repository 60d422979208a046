"""Real LuisaCompute (luisa-python) under the debugger.

``instrument_luisa()`` wraps luisa-python's buffer and image copies, ``func`` dispatches,
``execute`` and ``synchronize``, so that every command of a program that uses real luisa
goes into the active ``lnb.trace()`` with the records luisa_nb's own runtime makes:
device and host ranges, enqueue captures, one submission per ``execute()``, host reads
and writes, and synchronize points. ``uninstrument_luisa()`` puts luisa-python's own
functions back.

What is measured and what is inferred, since luisa-python reports nothing per command:

- an upload's host read is at its list's submission: LuisaCompute's CPU backend copies
  upload bytes into staging when ``execute()`` hands it the list;
- the bytes it sent are read back from the device after it, before any command that may
  write its buffer, by a download into a private array that the instrumentation adds to the list
  (the *shadow readback*), so the trace holds what really reached the device; without
  the shadow, the host bytes at the submission;
- a download's host write is at the synchronize that waited for it, or just before a
  later list's upload read the same host bytes, when that upload sent exactly what the
  download wrote (the shadow proves the write came first);
- a list's commands are drawn at its submission; the last one ends at that synchronize.

What a traced command costs is kept small (``benchmarks/bench_luisa_instrument.py``):
a buffer upload's readback waits until the list is submitted or a command that may
write its buffer comes (a kernel, a download, another array's upload into it, a command
no trace records), so that a run of uploads of one host array into one buffer adds one
readback, after the last of them, and the earlier ones share its bytes: they sent the
same bytes, read at the same submission. An image upload is read back at once,
since texture-to-texture copies, which are not traced, may write an image in between.
Commands with the same buffers, host array and captured bytes share their trace fields.
The next upload of one host array into one buffer on a stream reuses the array's byte
view and the buffer's memory.

Where the extension ``_luisa_uploads`` was built, ``luisa.Buffer.copy_from`` is its
``TracedUpload``: a recorded upload of a C-contiguous array, by position, into a buffer
already seen makes the steps of :meth:`Instrumentation.upload` in one C call, on the same
objects, calling the same methods for what it leaves to Python (new trace fields, a
readback to add first); every other call goes to the Python wrapper. A finished list's
host reads go to the recorder in one ``host_reads`` call per run of uploads that sent the
same bytes. ``tests/luisa/test_luisa_upload_paths.py`` checks that both ways record the
same trace.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from operator import is_
from typing import Any

import numpy as np

from luisa_nb.errors import LuisaNbError
from luisa_nb.recording.clock import now
from luisa_nb.recording.naming import user_namespaces, variable_name
from luisa_nb.recording.recorder import (
    HOST_FIELD,
    Recorder,
    TraceFields,
    active_recorder,
    register_namer,
    register_pending_finder,
)
from luisa_nb.recording.records import (
    Access,
    CommandKind,
    DeviceRange,
    HostRange,
    PendingCommand,
    Status,
    SyncKind,
)
from luisa_nb.recording.row_appender import PYTHON_HOOKS_VARIABLE
from luisa_nb.runtime.buffer import next_buffer_id
from luisa_nb.runtime.commands import command_ids, next_id, report_submitted, start_run
from luisa_nb.runtime.host import host_range
from luisa_nb.runtime.image import storage_dtype
from luisa_nb.runtime.luisa_backends import check_backend_starts, started_backend
from luisa_nb.runtime.luisa_shutdown import leave_cleanly_at_exit
from luisa_nb.runtime.staging import StagingPolicy
from luisa_nb.runtime.stream import next_stream_id

_UPLOAD, _DOWNLOAD, _DISPATCH = CommandKind.UPLOAD, CommandKind.DOWNLOAD, CommandKind.DISPATCH
"""Read off the enums once: an enum member read off its class costs a metaclass hook."""
_BYTES = np.dtype(np.uint8)


class LuisaMemory:
    """A luisa-python buffer or image as the trace sees it; its own view. It keeps the
    trace fields of its latest upload and download, which the next ones of the same host
    array share (:meth:`transfer_fields`)."""

    def __init__(
        self, resource: Any, dtype: np.dtype, size: int, shape: tuple[int, int, int] | None
    ) -> None:
        self.id = next_buffer_id()
        self.buffer = self
        self.views = (self,)
        self.name: str | None = None
        self.handle = resource.handle
        self.nbytes = int(resource.bytesize)
        self.dtype = dtype
        self.size = size
        self.image = shape is not None
        if shape is not None:
            self.__lnb_image__ = True
            self.shape = shape
        self.upload_memo: tuple[Any, ...] | None = None
        self.download_memo: tuple[Any, ...] | None = None

    def ranges(self, access: Access) -> tuple[DeviceRange, ...]:
        return (DeviceRange(self.id, 0, self.nbytes, access),)

    def transfer_fields(self, host: np.ndarray, capture: Any, upload: bool) -> TraceFields:
        """The trace fields of an upload from (``upload``) or a download into ``host``,
        whose bytes at enqueue were captured as ``capture``: the latest ones, while they
        were made for the same live array with the same shape, dtype and capture."""
        memo = self.upload_memo if upload else self.download_memo
        if (
            memo is not None
            and memo[0]() is host
            and memo[1] == host.shape
            and memo[2] is host.dtype
            and memo[3] is capture
        ):
            return memo[4]
        kind, access = (_UPLOAD, Access.WRITE) if upload else (_DOWNLOAD, Access.READ)
        fields = (kind, "", self.ranges(access), host_range(host), capture)
        memo = (weakref.ref(host), host.shape, host.dtype, capture, fields)
        if upload:
            self.upload_memo = memo
        else:
            self.download_memo = memo
        return fields


class LuisaCommand:
    """One command added to a luisa-python stream, with its trace fields."""

    __slots__ = ("enqueued", "fields", "host", "id", "sent", "views")

    def __init__(
        self,
        fields: TraceFields,
        views: Sequence[LuisaMemory],
        host: np.ndarray | None = None,
    ) -> None:
        self.id = next_id()
        self.enqueued = now()
        self.fields = fields
        self.views = views
        self.host = host
        self.sent: np.ndarray | None = None
        """An upload's bytes as the device got them (shadow) or as the host held them."""

    @property
    def kind(self) -> CommandKind:
        return self.fields[0]

    @property
    def label(self) -> str:
        return self.fields[1]

    def host_range(self) -> HostRange | None:
        return self.fields[HOST_FIELD]

    def trace_fields(self) -> TraceFields:
        """What the trace records of this command besides ids and times."""
        return self.fields


class LuisaDevice:
    """luisa-python's device as the trace names it (``luisa:cpu``, ``luisa:cuda``, or
    ``luisa`` while the backend is unknown). Its staging is recorded as ``submit``, what
    LuisaCompute's CPU backend does; the shadow readback shows what any backend sent."""

    staging = StagingPolicy.SUBMIT
    times_reported = False
    """luisa-python reports no per-command times (docs/luisa.md)."""

    def __init__(self) -> None:
        self.name = "luisa"

    @property
    def label(self) -> str:
        return self.name


class LuisaStream:
    """The trace's side of one luisa-python stream: the commands added since the last
    ``execute()``, the lists submitted since the last ``synchronize()``, and the buffer
    uploads whose shadow readback is still to be added, by buffer: the luisa buffer and
    the uploads that will share the readback, the last of them last."""

    __slots__ = (
        "device",
        "id",
        "in_flight",
        "last_upload",
        "name",
        "pending",
        "stream",
        "unread",
    )
    """Slots, which the C upload (:data:`TracedUpload`) reads at their offsets."""

    def __init__(self, stream: Any, device: LuisaDevice) -> None:
        self.device = device
        self.stream = stream
        self.id = next_stream_id()
        self.name = f"luisa stream {self.id}"
        self.pending: list[LuisaCommand] = []
        self.in_flight: list[tuple[list[LuisaCommand], int, Recorder]] = []
        """Each submitted list: its commands, its submission time, its recorder."""
        self.unread: dict[int, tuple[Any, list[LuisaCommand]]] = {}
        self.last_upload: tuple[Any, np.ndarray, np.ndarray, LuisaMemory] | None = None
        """The luisa resource and host array of the latest upload, the array's bytes (a
        uint8 view) and the resource's memory, which the next upload of the same pair
        reuses (a view and lookups cost more than the check); dropped at synchronize,
        with the commands that hold the array too (the memories hold the resource)."""


class Instrumentation:
    """The wrapped luisa-python functions and the trace state of its streams."""

    def __init__(self, luisa: Any, lcapi: Any, shadow: bool) -> None:
        self.luisa = luisa
        self.lcapi = lcapi
        self.shadow = shadow
        self.device = LuisaDevice()
        self.streams: dict[int, LuisaStream] = {}
        self.memories: dict[int, tuple[Any, LuisaMemory]] = {}
        self.originals: list[tuple[Any, str, Any]] = []
        self.unread: set[LuisaStream] = set()
        """The streams with uploads whose readback is still to be added."""
        self.dispatches: dict[int, tuple[tuple[Any, ...], TraceFields, list[LuisaMemory]]] = {}
        """By luisa ``func`` (its ``id``): the arguments of its latest traced dispatch, and
        their trace fields and memories, which a dispatch with the same arguments shares."""

    # -- luisa-python objects as the trace sees them -----------------------------------

    def stream_of(self, stream: Any) -> LuisaStream:
        if stream is None:
            stream = self.luisa.globalvars.vars.stream
        known = self.streams.get(id(stream))
        if known is None or known.stream is not stream:
            if self.device.name == "luisa" and (backend := started_backend(self.luisa)):
                self.device.name = f"{REAL_LUISA_PREFIX}{backend}"
            known = self.streams[id(stream)] = LuisaStream(stream, self.device)
        return known

    def memory_of(self, resource: Any) -> LuisaMemory:
        known = self.memories.get(id(resource))
        if known is not None and known[0] is resource:
            return known[1]
        if hasattr(resource, "channel"):
            kind = resource.dtype.__name__
            _, channel = storage_dtype(kind, resource.storage_name.lower())
            shape = (resource.height, resource.width, resource.channel)
            memory = LuisaMemory(resource, channel, int(np.prod(shape)), shape)
        else:
            dtype = self._element_dtype(resource.dtype)
            memory = LuisaMemory(resource, dtype, resource.bytesize // dtype.itemsize, None)
        memory.name = variable_name(resource, user_namespaces())
        self.memories[id(resource)] = (resource, memory)
        return memory

    def _element_dtype(self, element: Any) -> np.dtype:
        types = self.luisa.types
        scalars = {
            float: np.float32,
            int: np.int32,
            bool: np.bool_,
            types.uint: np.uint32,
            types.long: np.int64,
            types.ulong: np.uint64,
        }
        if element in scalars:
            return np.dtype(scalars[element])
        try:
            return np.dtype(scalars[types.element_of(element)])
        except (KeyError, TypeError, AttributeError, AssertionError):
            # a struct or array element: luisa-python's element_of asserts on it; bytes
            return np.dtype(np.uint8)

    # -- commands ----------------------------------------------------------------------

    def upload(
        self,
        original: Callable[..., None],
        resource: Any,
        host: Any,
        stream: Any,
        recorder: Recorder,
    ) -> LuisaStream:
        """Add an upload of ``host`` (an array) into ``resource`` to the stream, traced,
        with its shadow readback added or waiting."""
        luisa_stream = self.stream_of(stream)
        last = luisa_stream.last_upload
        if last is not None and last[0] is resource and last[1] is host:
            data, memory = last[2], last[3]
        else:
            memory = self.memory_of(resource)
            data = _bytes_of(host)
            # a view follows the array's later writes; a non-contiguous array's is a copy
            contiguous = host.flags.c_contiguous
            luisa_stream.last_upload = (resource, host, data, memory) if contiguous else None
        capture = recorder.upload_enqueued(host, data)
        memo = memory.upload_memo  # transfer_fields(), its common case written out
        if (
            memo is not None
            and memo[0]() is host
            and memo[1] == host.shape
            and memo[2] is host.dtype
            and memo[3] is capture
        ):
            fields = memo[4]
        else:
            fields = memory.transfer_fields(host, capture, True)
        unread = luisa_stream.unread.get(memory.id)
        if unread is not None and unread[1][-1].fields[HOST_FIELD] is not fields[HOST_FIELD]:
            self.read_back(luisa_stream)  # the readback of another array's upload goes first
            unread = None
        original(resource, host, False, luisa_stream.stream)
        command = LuisaCommand(fields, memory.views, host)
        luisa_stream.pending.append(command)
        if not self.shadow:
            return luisa_stream
        if memory.image:
            self.add_shadow(resource, luisa_stream, [command])
        elif unread is None:
            luisa_stream.unread[memory.id] = (resource, [command])
            self.unread.add(luisa_stream)
        else:
            unread[1].append(command)
        return luisa_stream

    def download(
        self,
        original: Callable[..., None],
        resource: Any,
        host: Any,
        stream: Any,
        recorder: Recorder,
    ) -> LuisaStream:
        """Add a download from ``resource`` into ``host`` (an array) to the stream, traced."""
        luisa_stream = self.stream_of(stream)
        if luisa_stream.unread:
            self.read_back(luisa_stream)
        memory = self.memory_of(resource)
        recorder.download_enqueued(host)
        fields = memory.transfer_fields(host, None, False)
        original(resource, host, False, luisa_stream.stream)
        luisa_stream.pending.append(LuisaCommand(fields, memory.views, host))
        return luisa_stream

    def add_shadow(
        self, resource: Any, luisa_stream: LuisaStream, commands: Sequence[LuisaCommand]
    ) -> None:
        """Read the device bytes the last of ``commands`` (uploads into ``resource``) left
        into a private array, which all of them share as the bytes they sent."""
        lcapi = self.lcapi
        shadow = np.empty(commands[-1].views[0].nbytes, np.uint8)
        if hasattr(resource, "channel"):
            size = lcapi.uint3(resource.width, resource.height, 1)
            readback = lcapi.TextureDownloadCommand.create(
                resource.handle, resource.storage, 0, size, shadow
            )
        else:
            readback = lcapi.BufferDownloadCommand.create(
                resource.handle, 0, resource.bytesize, shadow
            )
        luisa_stream.stream.add(readback)
        for command in commands:
            command.sent = shadow

    def read_back(self, luisa_stream: LuisaStream) -> None:
        """Add the shadow readbacks still waiting on ``luisa_stream``."""
        unread, luisa_stream.unread = luisa_stream.unread, {}
        self.unread.discard(luisa_stream)
        for resource, commands in unread.values():
            self.add_shadow(resource, luisa_stream, commands)

    def read_back_all(self) -> None:
        """Add every stream's waiting shadow readbacks (before a command that no trace
        records, which may write their buffers)."""
        for luisa_stream in list(self.unread):
            self.read_back(luisa_stream)

    def dispatch(self, function: Any, args: tuple[Any, ...], luisa_stream: LuisaStream) -> None:
        """Record a dispatch of ``function`` with ``args``, just added to the stream."""
        known = self.dispatches.get(id(function))
        if known is not None and _same_objects(known[0], args):
            fields, memories = known[1], known[2]
        else:
            memories = [
                self.memory_of(argument)
                for argument in args
                if hasattr(argument, "handle") and hasattr(argument, "bytesize")
            ]
            ranges = tuple(
                memory_range
                for memory in memories
                for memory_range in memory.ranges(Access.READ_WRITE)
            )
            label = getattr(function, "__name__", "func")
            fields = (_DISPATCH, label, ranges, None, None)
            self.dispatches[id(function)] = (args, fields, memories)
        luisa_stream.pending.append(LuisaCommand(fields, memories))

    # -- submission and completion -----------------------------------------------------

    def submitted(self, luisa_stream: LuisaStream) -> None:
        """Add the waiting shadow readbacks, and record the pending list as one
        submission, at this moment."""
        if luisa_stream.unread:
            self.read_back(luisa_stream)
        commands, luisa_stream.pending = luisa_stream.pending, []
        recorder = active_recorder()
        if not commands or not recorder.recording:
            return
        report_submitted(recorder, luisa_stream, commands)
        if not self.shadow:
            _copy_sent_bytes(commands)
        luisa_stream.in_flight.append((commands, now(), recorder))

    def completed(self, luisa_stream: LuisaStream, done: int) -> None:
        """Record the runs, host reads and host writes of the lists a synchronize waited
        for, which ended by ``done``."""
        lists, luisa_stream.in_flight = luisa_stream.in_flight, []
        luisa_stream.last_upload = None
        writes = _write_times(lists, done)
        for commands, submitted, recorder in lists:
            log = start_run(recorder, commands)
            ticks = np.full(len(commands) + 1, submitted, np.int64)  # one call, not one each
            ticks[-1] = done
            log.times.frombytes(ticks)
            log.spans(())
            others = record_host_accesses(recorder, commands, submitted, _UPLOAD, LuisaCommand)
            host_write = recorder.host_write
            for command in others:
                if command.fields[0] is _DOWNLOAD:
                    host_write(command.id, _bytes_of(command.host), writes.get(command.id, done))

    # -- wrapping ----------------------------------------------------------------------

    def wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = getattr(owner, name)
        self.originals.append((owner, name, original))
        setattr(owner, name, make(original))

    def restore(self) -> None:
        for owner, name, original in reversed(self.originals):
            setattr(owner, name, original)
        self.originals.clear()


def _same_objects(first: tuple[Any, ...], second: tuple[Any, ...]) -> bool:
    if len(first) == 1:  # the common case, a kernel of one argument, without a map
        return len(second) == 1 and first[0] is second[0]
    return len(first) == len(second) and all(map(is_, first, second))


def _bytes_of(array: np.ndarray) -> np.ndarray:
    """``array``'s bytes in C order: a view of a C-contiguous array, else a copy."""
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return (array if array.ndim == 1 else array.reshape(-1)).view(_BYTES)


def python_record_host_accesses(
    recorder: Recorder,
    commands: list[LuisaCommand],
    submitted: int,
    upload_kind: CommandKind,
    command_type: type,
) -> list[LuisaCommand]:
    """Record the host read of each upload of ``commands`` (a finished list's, all of
    ``command_type``) at ``submitted``, the bytes it sent; returns the other commands.
    :data:`record_host_accesses` is this, or the same in C."""
    others = []
    host_read = recorder.host_read
    for command in commands:
        if command.fields[0] is upload_kind:
            host_read(command.id, 0, command.sent, submitted)
        else:
            others.append(command)
    return others


record_host_accesses, TracedUpload = python_record_host_accesses, None
"""The host reads of a finished list (:func:`python_record_host_accesses`) and the traced
``luisa.Buffer.copy_from`` (None: the Python wrapper, :func:`_transfer`): in C where the
extension ``_luisa_uploads`` was built and the recorder's Python hooks are not asked for
(``LUISA_NB_PYTHON_RECORDER``)."""
if os.environ.get(PYTHON_HOOKS_VARIABLE, "") in ("", "0"):
    try:
        from luisa_nb.runtime._luisa_uploads import TracedUpload, record_host_accesses
        from luisa_nb.runtime._submission_fields import use_fields_slot_type
    except ImportError:  # not built (no C compiler or Python headers at install)
        pass
    else:
        use_fields_slot_type(LuisaCommand)

NATIVE = TracedUpload is not None
"""Whether traced buffer uploads and a list's host reads are recorded in C."""


def _copy_sent_bytes(commands: Sequence[LuisaCommand]) -> None:
    """Without the shadow, the bytes each upload of a list sent are its host bytes now, at
    the list's submission: one copy per host range, which its uploads share."""
    copies: dict[int, np.ndarray] = {}
    for command in commands:
        if command.fields[0] is _UPLOAD:
            read = command.fields[HOST_FIELD]
            sent = copies.get(id(read))
            if sent is None:
                sent = copies[id(read)] = _bytes_of(command.host).copy()
            command.sent = sent


def _write_times(
    lists: Sequence[tuple[list[LuisaCommand], int, Recorder]], done: int
) -> dict[int, int]:
    """Downloads whose host write a later list's upload proves: it sent exactly the bytes
    the download wrote, so the write came before that upload's submission."""
    times: dict[int, int] = {}
    if len(lists) == 1:  # the common case: no later list to prove a write
        return times
    for position, (commands, _, _) in enumerate(lists):
        for download in commands:
            if download.fields[0] is not _DOWNLOAD:
                continue
            written = download.host_range()
            for later, submitted, _ in lists[position + 1 :]:
                for upload in later:
                    if upload.fields[0] is _UPLOAD and _sent_what_was_written(
                        upload, download, written
                    ):
                        times[download.id] = min(times.get(download.id, done), submitted - 1)
    return times


def _sent_what_was_written(
    upload: LuisaCommand, download: LuisaCommand, written: HostRange
) -> bool:
    read = upload.host_range()
    low, high = max(read.address, written.address), min(read.end, written.end)
    if low >= high:
        return False
    sent = upload.sent[low - read.address : high - read.address]
    now_held = _bytes_of(download.host)[low - written.address : high - written.address]
    return bool(np.array_equal(sent, now_held))


_active: Instrumentation | None = None


def instrument_luisa(*, shadow: bool = True) -> None:
    """Record every command of real luisa-python into the active ``lnb.trace()``. Call it
    after ``import luisa`` and before ``from luisa import *`` (a star import copies the
    functions it wraps). ``shadow`` adds the readback of each upload's device bytes."""
    global _active
    try:
        import luisa
        import luisa.types
        from luisa.dylibs import lcapi
    except ImportError as error:
        raise LuisaNbError(
            f"instrument_luisa needs real LuisaCompute: pip install luisa-python ({error})"
        ) from None
    if _active is not None:
        uninstrument_luisa()
    leave_cleanly_at_exit(luisa)
    state = _active = Instrumentation(luisa, lcapi, shadow)
    state.wrap(luisa.Buffer, "copy_from", lambda original: _buffer_upload(state, original))
    state.wrap(luisa.Image2D, "copy_from", lambda f: _transfer(state, f, True, False))
    for resource_class in (luisa.Buffer, luisa.Image2D):
        state.wrap(resource_class, "copy_to", lambda f: _transfer(state, f, False, True))
    state.wrap(luisa.func, "__call__", lambda original: _dispatch(state, original))
    state.wrap(luisa, "execute", lambda original: _execute(state, original))
    state.wrap(luisa, "synchronize", lambda original: _synchronize(state, original))


def _name_memories(trace: Any, namespace: Any) -> None:
    """Name the luisa-python buffers and images of a trace after the variables holding
    them, and say that its commands came through luisa-python where some did."""
    if _active is None:
        return
    streams = list(_active.streams.values())
    waiting = {command.id for stream in streams for command in stream.pending}
    ran = {stream.id for stream in streams} & trace.streams.keys()
    if ran or waiting & {command.id for command in trace.metadata.pending}:
        trace.metadata.api = "luisa"
    for name, value in namespace.items():
        known = _active.memories.get(id(value))
        if known is not None and known[0] is value and not name.startswith("_"):
            info = trace.buffers.get(known[1].id)
            if info is not None and info.name is None:
                info.name = name


register_namer(_name_memories)


def _pending_commands(namespace: Any) -> list[PendingCommand]:
    """The commands added to luisa-python's streams and not yet executed (their memories
    are named when made)."""
    if _active is None:
        return []
    return [
        PendingCommand(
            command.id,
            command.kind.value,
            f"{command.kind.value} {command.label or ''}".rstrip()
            + f" ({', '.join(str(memory.name) for memory in command.views)})",
            stream.name,
        )
        for stream in _active.streams.values()
        for command in stream.pending
    ]


register_pending_finder(_pending_commands)


REAL_LUISA_PREFIX = "luisa:"
"""Device names such as ``luisa:cpu`` mean real luisa-python on that backend."""


def real_luisa_backend(name: str | None) -> str | None:
    """``"cpu"`` for ``"luisa:cpu"``; None for a luisa_nb device name."""
    if name is None or not name.startswith(REAL_LUISA_PREFIX):
        return None
    backend = name.removeprefix(REAL_LUISA_PREFIX)
    if not backend:
        raise LuisaNbError(f"device {name!r} names no backend; use e.g. luisa:cpu")
    return backend


def start_real_luisa(backend: str) -> Any:
    """Real luisa-python, instrumented and initialized on ``backend`` (once per process,
    as luisa-python allows); returns the ``luisa`` module."""
    if _active is None:
        instrument_luisa()
    luisa = _active.luisa
    started = started_backend(luisa)
    if started is not None and started != backend:
        raise LuisaNbError(
            f"real luisa-python runs on {started!r} already, and it starts once per process; "
            f"restart the kernel (or the program) to use {backend!r}"
        )
    if started is None:
        check_backend_starts(backend)
    try:
        luisa.init(backend, support_gui=False)
    except Exception as error:
        # init() keeps the session it began, which a second init() would take as started
        luisa.globalvars.vars = None
        raise LuisaNbError(f"real luisa-python cannot start backend {backend!r}: {error}") from None
    _active.device.name = f"luisa:{backend}"
    return luisa


@contextmanager
def instrumented(backend: str) -> Iterator[Any]:
    """:func:`start_real_luisa` for a block, whose end synchronizes luisa's stream, as at
    a program's end, so that every command of the block is in the trace. The
    instrumentation stays: without a trace it passes calls through."""
    luisa = start_real_luisa(backend)
    try:
        yield luisa
    finally:
        luisa.synchronize()


def uninstrument_luisa() -> None:
    """Put luisa-python's own functions back."""
    global _active
    if _active is not None:
        _active.restore()
        _active = None


def _transfer(
    state: Instrumentation, original: Callable[..., None], upload: bool, default_sync: bool
) -> Callable[..., None]:
    """A wrapped ``copy_from`` (``upload``) or ``copy_to`` of a luisa buffer or image."""
    traced = state.upload if upload else state.download

    def copy(self: Any, arr: Any, sync: bool = default_sync, stream: Any = None) -> None:
        recorder = active_recorder()
        if not recorder.recording or not isinstance(arr, np.ndarray):
            if state.unread:  # a list's upload, say, may write a buffer waiting for one
                state.read_back_all()
            original(self, arr, sync, stream)
            return
        luisa_stream = traced(original, self, arr, stream, recorder)
        if sync:
            state.luisa.synchronize(luisa_stream.stream)

    return copy


def _buffer_upload(state: Instrumentation, original: Callable[..., None]) -> Any:
    """A wrapped ``copy_from`` of a luisa buffer: in C (:data:`TracedUpload`) where built,
    whose calls out of its common case go to the Python wrapper (:func:`_transfer`)."""
    python_wrapper = _transfer(state, original, True, False)
    if TracedUpload is None:
        return python_wrapper
    return TracedUpload(
        state,
        python_wrapper,
        original,
        active_recorder,
        state.luisa.globalvars,
        command_ids,
        LuisaCommand,
        LuisaStream,
        HOST_FIELD,
        state.shadow,
    )


def _dispatch(state: Instrumentation, original: Callable[..., None]) -> Callable[..., None]:
    def __call__(self: Any, *args: Any, dispatch_size: Any = None, stream: Any = None, **kw: Any):
        if not active_recorder().recording:
            if state.unread:  # the kernel may write a buffer waiting for its readback
                state.read_back_all()
            original(self, *args, dispatch_size=dispatch_size, stream=stream, **kw)
            return
        luisa_stream = state.stream_of(stream)
        if luisa_stream.unread:
            state.read_back(luisa_stream)
        original(self, *args, dispatch_size=dispatch_size, stream=stream, **kw)
        state.dispatch(self, args, luisa_stream)

    return __call__


def _execute(state: Instrumentation, original: Callable[..., None]) -> Callable[..., None]:
    def execute(stream: Any = None) -> None:
        luisa_stream = state.stream_of(stream)
        state.submitted(luisa_stream)
        original(luisa_stream.stream)

    return execute


def _synchronize(state: Instrumentation, original: Callable[..., None]) -> Callable[..., None]:
    def synchronize(stream: Any = None) -> None:
        luisa_stream = state.stream_of(stream)
        state.submitted(luisa_stream)
        recorder = active_recorder()
        token = recorder.sync_issued(SyncKind.SYNCHRONIZE, luisa_stream, None, next_id())
        original(luisa_stream.stream)
        done = now()
        state.completed(luisa_stream, done)  # drops the commands: a release comes before
        recorder.sync_completed(token, Status.OK)

    return synchronize
