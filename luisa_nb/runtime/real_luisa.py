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
- the bytes it sent are read back from the device right after it by a download into a
  private array that the instrumentation adds to the list (the *shadow readback*), so the
  trace holds what really reached the device; without the shadow, the host bytes at the
  submission;
- a download's host write is at the synchronize that waited for it, or just before a
  later list's upload read the same host bytes, when that upload sent exactly what the
  download wrote (the shadow proves the write came first);
- a list's commands are drawn at its submission; the last one ends at that synchronize.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from luisa_nb.errors import LuisaNbError
from luisa_nb.recording.clock import now
from luisa_nb.recording.naming import user_namespaces, variable_name
from luisa_nb.recording.recorder import (
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
from luisa_nb.runtime.buffer import next_buffer_id
from luisa_nb.runtime.commands import next_id, report_submitted, start_run
from luisa_nb.runtime.host import host_range
from luisa_nb.runtime.image import storage_dtype
from luisa_nb.runtime.staging import StagingPolicy
from luisa_nb.runtime.stream import next_stream_id


class LuisaMemory:
    """A luisa-python buffer or image as the trace sees it; its own view."""

    def __init__(
        self, resource: Any, dtype: np.dtype, size: int, shape: tuple[int, int, int] | None
    ) -> None:
        self.id = next_buffer_id()
        self.buffer = self
        self.name: str | None = None
        self.handle = resource.handle
        self.nbytes = int(resource.bytesize)
        self.dtype = dtype
        self.size = size
        if shape is not None:
            self.__lnb_image__ = True
            self.shape = shape

    def ranges(self, access: Access) -> tuple[DeviceRange, ...]:
        return (DeviceRange(self.id, 0, self.nbytes, access),)


class LuisaCommand:
    """One command added to a luisa-python stream, with what its trace records need."""

    def __init__(
        self,
        kind: CommandKind,
        label: str,
        memories: Sequence[tuple[LuisaMemory, Access]],
        host: np.ndarray | None = None,
    ) -> None:
        self.id = next_id()
        self.enqueued = now()
        self.kind = kind
        self.label = label
        self.views = [memory for memory, _ in memories]
        self._ranges = tuple(r for memory, access in memories for r in memory.ranges(access))
        self.host = host
        self.enqueue_capture = None
        self.sent: np.ndarray | None = None
        """An upload's bytes as the device got them (shadow) or as the host held them."""

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        return self._ranges

    def host_range(self) -> HostRange | None:
        return None if self.host is None else host_range(self.host)

    def trace_fields(self) -> TraceFields:
        """What the trace records of this command besides ids and times."""
        return (self.kind, self.label, self._ranges, self.host_range(), self.enqueue_capture)


class LuisaDevice:
    """luisa-python's device as the trace names it (``luisa:cpu``, or ``luisa`` while the
    backend is unknown). Its staging is recorded as ``submit``, what LuisaCompute's CPU
    backend does."""

    staging = StagingPolicy.SUBMIT

    def __init__(self) -> None:
        self.name = "luisa"

    @property
    def label(self) -> str:
        return self.name


class LuisaStream:
    """The trace's side of one luisa-python stream: the commands added since the last
    ``execute()`` and the lists submitted since the last ``synchronize()``."""

    def __init__(self, stream: Any, device: LuisaDevice) -> None:
        self.device = device
        self.stream = stream
        self.id = next_stream_id()
        self.name = f"luisa stream {self.id}"
        self.pending: list[LuisaCommand] = []
        self.in_flight: list[tuple[list[LuisaCommand], int, Recorder]] = []


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

    # -- luisa-python objects as the trace sees them -----------------------------------

    def stream_of(self, stream: Any) -> LuisaStream:
        stream = stream if stream is not None else self.luisa.globalvars.vars.stream
        known = self.streams.get(id(stream))
        if known is None or known.stream is not stream:
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
        except (KeyError, TypeError, AttributeError):
            return np.dtype(np.uint8)

    # -- commands ----------------------------------------------------------------------

    def transfer(
        self, resource: Any, host: Any, stream: Any, upload: bool
    ) -> tuple[LuisaStream, LuisaCommand] | None:
        """The command of a copy between ``resource`` and a host array, or None when no
        trace records it (no trace, or a list rather than an array)."""
        recorder = active_recorder()
        if not recorder.recording or not isinstance(host, np.ndarray):
            return None
        memory = self.memory_of(resource)
        kind = CommandKind.UPLOAD if upload else CommandKind.DOWNLOAD
        access = Access.WRITE if upload else Access.READ
        command = LuisaCommand(kind, "", [(memory, access)], host)
        if upload:
            command.enqueue_capture = recorder.upload_enqueued(host, _bytes_of(host))
        else:
            recorder.download_enqueued(host)
        return self.stream_of(stream), command

    def add_shadow(self, resource: Any, luisa_stream: LuisaStream, command: LuisaCommand) -> None:
        """Read the device bytes an upload left into a private array, right after it."""
        lcapi = self.lcapi
        shadow = np.empty(command.views[0].nbytes, np.uint8)
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
        command.sent = shadow

    def dispatch(self, function: Any, args: Sequence[Any], stream: Any) -> None:
        if not active_recorder().recording:
            return
        memories = [
            (self.memory_of(argument), Access.READ_WRITE)
            for argument in args
            if hasattr(argument, "handle") and hasattr(argument, "bytesize")
        ]
        label = getattr(function, "__name__", "func")
        self.stream_of(stream).pending.append(LuisaCommand(CommandKind.DISPATCH, label, memories))

    # -- submission and completion -----------------------------------------------------

    def submitted(self, luisa_stream: LuisaStream) -> None:
        """Record the pending list as one submission, at this moment."""
        commands, luisa_stream.pending = luisa_stream.pending, []
        recorder = active_recorder()
        if not commands or not recorder.recording:
            return
        report_submitted(recorder, luisa_stream, commands)
        for command in commands:
            if command.kind is CommandKind.UPLOAD and command.sent is None:
                command.sent = _bytes_of(command.host).copy()
        luisa_stream.in_flight.append((commands, now(), recorder))

    def completed(self, luisa_stream: LuisaStream, done: int) -> None:
        """Record the runs, host reads and host writes of the lists a synchronize waited
        for, which ended by ``done``."""
        lists, luisa_stream.in_flight = luisa_stream.in_flight, []
        writes = _write_times(lists, done)
        for commands, submitted, recorder in lists:
            log = start_run(recorder, commands)
            for _ in commands:
                log.tick_at(submitted)
            log.tick_at(done)
            log.spans(())
            for command in commands:
                if command.kind is CommandKind.UPLOAD:
                    recorder.host_read(command.id, 0, command.sent, at=submitted)
                elif command.kind is CommandKind.DOWNLOAD:
                    at = writes.get(command.id, done)
                    recorder.host_write(command.id, _bytes_of(command.host), at=at)

    # -- wrapping ----------------------------------------------------------------------

    def wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = getattr(owner, name)
        self.originals.append((owner, name, original))
        setattr(owner, name, make(original))

    def restore(self) -> None:
        for owner, name, original in reversed(self.originals):
            setattr(owner, name, original)
        self.originals.clear()


def _bytes_of(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1).view(np.uint8)


def _write_times(
    lists: Sequence[tuple[list[LuisaCommand], int, Recorder]], done: int
) -> dict[int, int]:
    """Downloads whose host write a later list's upload proves: it sent exactly the bytes
    the download wrote, so the write came before that upload's submission."""
    times: dict[int, int] = {}
    for position, (commands, _, _) in enumerate(lists):
        for download in commands:
            if download.kind is not CommandKind.DOWNLOAD:
                continue
            written = download.host_range()
            for later, submitted, _ in lists[position + 1 :]:
                for upload in later:
                    if upload.kind is CommandKind.UPLOAD and _sent_what_was_written(
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
    state = _active = Instrumentation(luisa, lcapi, shadow)
    for resource_class in (luisa.Buffer, luisa.Image2D):
        state.wrap(resource_class, "copy_from", lambda f: _transfer(state, f, True, False))
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
    started = _active.device.name.removeprefix(REAL_LUISA_PREFIX)
    if _active.device.name.startswith(REAL_LUISA_PREFIX) and started != backend:
        raise LuisaNbError(
            f"real luisa-python runs on {started!r} already, and it starts once per process; "
            f"restart the kernel (or the program) to use {backend!r}"
        )
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

    def copy(self: Any, arr: Any, sync: bool = default_sync, stream: Any = None) -> None:
        traced = state.transfer(self, arr, stream, upload=upload)
        if traced is None:
            original(self, arr, sync, stream)
            return
        luisa_stream, command = traced
        original(self, arr, False, luisa_stream.stream)
        if upload and state.shadow:
            state.add_shadow(self, luisa_stream, command)
        luisa_stream.pending.append(command)
        if sync:
            state.luisa.synchronize(luisa_stream.stream)

    return copy


def _dispatch(state: Instrumentation, original: Callable[..., None]) -> Callable[..., None]:
    def __call__(self: Any, *args: Any, dispatch_size: Any = None, stream: Any = None, **kw: Any):
        original(self, *args, dispatch_size=dispatch_size, stream=stream, **kw)
        state.dispatch(self, args, stream)

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
