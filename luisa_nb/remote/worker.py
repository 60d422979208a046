"""A session's worker process: it holds one client's buffers and runs its operations.

The server (:mod:`luisa_nb.remote.server`) starts one worker per session, forked from a
process that has imported this module already. The worker binds one ``ipc://`` socket in
a directory only the server's user can enter. A crash here (a fault in a backend, or one
the kernels' fault guard misses) ends this process and so this session only: the server
sees the process end, tells the client how it ended, and keeps serving the other
sessions.

The server relays ``[ticket, peer, envelope, arguments, payload]`` as the client sent
them (the envelope already checked by :func:`~luisa_nb.remote.protocol.check_request`,
the payload there only for batches with uploads) from a socket whose routing id only it
knows; the worker answers ``[ticket, *reply]``, ``reply`` being the frames the client
gets. A client on the server's host connects to the worker's Unix stream socket
(:mod:`~luisa_nb.remote.stream`) beside it, sends ``[envelope, arguments]`` there and
gets ``reply``; the worker checks those envelopes itself.
"""

from __future__ import annotations

import ctypes
import faulthandler
import functools
import logging
import os
import select
import signal
import socket
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import zmq

from luisa_nb.backends import load_backend
from luisa_nb.backends.base import Allocation, Backend, KernelBuffer
from luisa_nb.kernels.c.device_print import PRINT_TARGET, RECORD_HEADER, PrintLogStruct
from luisa_nb.kernels.c.executable import run_launch
from luisa_nb.kernels.c.toolchain import build_library, launch_function, load_library
from luisa_nb.kernels.checks import LaunchRecord
from luisa_nb.kernels.executable import CancelFlag
from luisa_nb.remote.cancellation import session_cancel_flag
from luisa_nb.remote.layouts import check_definition, dtype_from
from luisa_nb.remote.lifeline import exit_with_server
from luisa_nb.remote.protocol import (
    DIRECT_REQUESTS,
    MAX_ENVELOPE_BYTES,
    MAX_FRAME_BYTES,
    MAX_HANDLE,
    MAX_OPS_PER_BATCH,
    MAX_PRINT_BYTES,
    PROTOCOL_VERSION,
    ProtocolError,
    check_integer,
    check_operation,
    check_request,
    decode,
    encode,
    kernel_key,
)
from luisa_nb.remote.regions import (
    AVAILABLE,
    MAX_REGIONS,
    WorkerRegion,
    close_all,
    fits_in_memory,
)
from luisa_nb.remote.stream import receive_frames, send_frames
from luisa_nb.remote.window import Window

logger = logging.getLogger("luisa_nb.remote.worker")
MAX_WAITING = 64
"""Requests a connection may have waiting for the worker (the supervisor keeps as many)."""
STREAM_SECONDS = 5.0
"""How long the worker waits for the rest of a message a direct client has begun, or
for that client to take a reply, before it drops the connection."""
MAX_DIRECT_CONNECTIONS = 256
"""Direct connections a worker serves at once (one per client thread); more are closed."""
LINGER_NANOSECONDS = 200_000
"""How long the worker keeps looking for the next request before it sleeps, while requests
come this soon after the replies before them (:class:`Waiting`)."""

Operation = Callable[[list[Any], memoryview, "Readbacks"], None]


class LaunchStoppedHere(Exception):
    """A served kernel's launch stopped early; ``record`` says where and why."""

    def __init__(self, name: str, record: LaunchRecord) -> None:
        super().__init__(f"kernel {name} stopped with status {record.status}")
        self.record = record


class ServedKernel:
    """A kernel built on the server from a client's definition; ``launch`` takes the
    address of each buffer, like a local C executable, and raises
    :class:`LaunchStoppedHere` when a check or the session's ``cancel`` flag stops it
    (the client explains the record)."""

    mode = "c"

    def __init__(self, definition: dict[str, Any], cancel: CancelFlag) -> None:
        self.name = definition["name"]
        self.cancel = cancel
        self.buffer_dtypes, self.layout = check_definition(definition)
        self.scalar_count = len(definition["scalars"])
        library = load_library(build_library(self.name, definition["source"]))
        self._function = launch_function(library, f"{self.name}_launch")
        try:
            self.print_target: ctypes.c_void_p | None = ctypes.c_void_p.in_dll(
                library, PRINT_TARGET
            )
        except ValueError:  # the kernel has no device print
            self.print_target = None
        self.print_log: ServedPrintLog | None = None
        """Where the next launch's device prints go (none: they do nothing)."""

    def launch(
        self,
        dims: tuple[int, int, int],
        buffers: Sequence[int],
        scalars: Sequence[Any],
        cancel: CancelFlag | None = None,
    ) -> None:
        """Run the kernel; it polls the session's flag, not ``cancel`` (the served
        backend's own flag, which nothing sets in a worker)."""
        packed = self.layout.pack(dims, buffers, scalars)
        log, target = self.print_log, self.print_target
        if log is None or target is None:
            stopped = run_launch(self._function, packed, self.cancel)
        else:
            target.value = log.address
            try:
                stopped = run_launch(self._function, packed, self.cancel)
            finally:
                target.value = None
        if stopped is not None:
            raise LaunchStoppedHere(self.name, stopped)


class ServedPrintLog:
    """The print log of one launch of a served kernel: ``capacity`` records of ``width``
    words (the client's numbers, checked), which the client decodes."""

    def __init__(self, width: int, capacity: int) -> None:
        if width < RECORD_HEADER or width * max(capacity, 1) * 8 > MAX_PRINT_BYTES:
            raise ProtocolError(
                f"a print log of {capacity} records of {width} words exceeds "
                f"{MAX_PRINT_BYTES} bytes or has records under {RECORD_HEADER} words"
            )
        self.records = np.zeros((max(capacity, 1), width), np.uint64)
        self.struct = PrintLogStruct(0, capacity, width, self.records.ctypes.data)

    @property
    def address(self) -> int:
        return ctypes.addressof(self.struct)

    def reply(self) -> list[Any]:
        """``[count, hex of the records kept]``: how many prints ran, and the first
        ``capacity`` of them."""
        count = int(self.struct.count)
        kept = self.records[: min(count, int(self.struct.capacity))]
        return [count, kept.tobytes().hex()]


class SessionWorker:
    """One session's buffers (by handle) and the kernels it built, which stop when
    ``cancel`` is set (by the supervisor; by default, a flag nothing sets).

    :meth:`answer` runs one ``allocate`` or ``batch`` request and returns the reply
    frames; whatever an operation raises (a kernel error included) becomes the error of
    that operation, so nothing a client sends ends this process short of a crash. A
    batch's bytes travel in its message or, with a ``window`` (shared with a client on
    this host, see :mod:`~luisa_nb.remote.window`), in a part of it; a ``readback``
    writes into a region the client shared (:mod:`~luisa_nb.remote.regions`)."""

    def __init__(
        self,
        backend: Backend,
        cancel: CancelFlag | None = None,
        window: Window | None = None,
    ) -> None:
        self.backend = backend
        self.cancel = cancel if cancel is not None else CancelFlag()
        self.window = window
        self.allocations: dict[int, Allocation] = {}
        self.next_handle = 1
        self.kernels: dict[str, ServedKernel] = {}
        self.regions: dict[int, WorkerRegion] = {}
        self.printed: list[list[Any]] = []
        """The print logs of the batch's printing dispatches so far, in order."""
        self.failed_groups: dict[bytes, int] = {}
        """Per connection (peer): the batch group that failed last. Later batches of that
        group are skipped, so a failure stops the rest of its flush."""
        self._operations: dict[str, Operation] = {
            "upload": self._upload,
            "download": self._download,
            "readback": self._readback,
            "copy": self._copy,
            "fill": self._fill,
            "dispatch": self._dispatch,
            "dispatch_printing": self._dispatch_printing,
        }

    def answer(
        self,
        peer: bytes,
        envelope: memoryview,
        data: list[memoryview],
        check: Callable[[dict[str, Any], list[memoryview]], None] | None = None,
        descriptors: list[int] | None = None,
    ) -> list[Any]:
        """The reply to the request in ``envelope`` and ``data`` (its arguments and
        payload) that connection ``peer`` sent; ``check`` checks the envelope and frames
        of a request that no supervisor has checked; ``descriptors``, the file
        descriptors that came with it (``share`` takes one; the caller closes the rest)."""
        request_id = None
        try:
            header = decode(envelope, "envelope", MAX_ENVELOPE_BYTES)
            request_id = header.get("id") if type(header.get("id")) is int else None
            if check is not None:
                check(header, data)
                if self.window is not None:
                    self.window.unlink()  # a direct client maps it before it connects
            if not data:
                raise ProtocolError(f"{header['op']} needs an arguments frame")
            arguments = decode(data[0], "arguments")
            if header["op"] == "share":
                return self._share(request_id, arguments, descriptors or [])
            if header["op"] == "allocate":
                return self._allocate(request_id, arguments, descriptors or [])
            if descriptors:
                raise ProtocolError(f"{header['op']} carries no file descriptor; share does")
            if header["op"] == "batch":
                return self._batch(peer, request_id, arguments, data[1:])
            raise ProtocolError(f"op {header['op']!r} is not one a session worker runs")
        except ProtocolError as error:
            logger.warning("rejected a request: %s", error)
            return error_reply(request_id, f"malformed message: {error}")
        except Exception:  # a bug here must not end the session
            logger.exception("internal error while handling a request")
            return error_reply(request_id, "internal server error; see the server log")

    def memory(self, handle: int, offset: int, nbytes: int) -> Allocation:
        """The allocation of ``handle``, checking that ``[offset, offset + nbytes)`` fits."""
        allocation = self.allocations.get(handle)
        if allocation is None:
            raise ProtocolError(f"buffer handle {handle} is unknown (freed, or never allocated)")
        if offset + nbytes > allocation.nbytes:
            raise ProtocolError(
                f"bytes [{offset}, {offset + nbytes}) are outside buffer handle {handle} "
                f"of {allocation.nbytes} bytes"
            )
        return allocation

    def _allocate(
        self, request_id: int, arguments: dict[str, Any], descriptors: list[int]
    ) -> list[Any]:
        """A new buffer: of the backend's memory, or (``"shared": true``) of the memory
        whose descriptor came with the request, on a backend whose device memory is host
        memory (see :mod:`~luisa_nb.remote.regions`)."""
        nbytes = check_integer(arguments.get("nbytes"), "allocate nbytes")
        shared = arguments.get("shared", False)
        if type(shared) is not bool:
            raise ProtocolError(f"allocate shared must be true or false, not {shared!r}")
        if not shared and descriptors:
            raise ProtocolError("allocate carries no file descriptor unless it is shared")
        try:
            if shared:
                allocation = self._allocate_shared(nbytes, descriptors)
            else:
                allocation = self.backend.allocate(max(nbytes, 1))
        except (MemoryError, ValueError) as error:
            return error_reply(request_id, f"cannot allocate {nbytes} bytes: {error!r}")
        handle = self.next_handle
        self.next_handle += 1
        self.allocations[handle] = allocation
        return [encode({"v": PROTOCOL_VERSION, "id": request_id, "ok": True, "handle": handle})]

    def _allocate_shared(self, nbytes: int, descriptors: list[int]) -> Allocation:
        if len(descriptors) != 1:
            raise ProtocolError(
                f"a shared allocate carries one file descriptor, not {len(descriptors)}"
            )
        backend = self.backend
        if not AVAILABLE:
            raise ProtocolError("this server's system has no sealed memory files (memfd)")
        if not backend.device_memory_is_host:
            raise ProtocolError(
                f"backend {backend.name!r} keeps buffers in device memory, not in shared "
                f"memory: allocate without shared"
            )
        if nbytes > backend.max_allocation_bytes or not fits_in_memory(nbytes):
            raise MemoryError("more than this host's memory, or than a buffer holds")
        return backend.allocate_in(WorkerRegion(descriptors.pop(), nbytes).array)

    def _share(
        self, request_id: int, arguments: dict[str, Any], descriptors: list[int]
    ) -> list[Any]:
        """Map the region whose descriptor came with the request (``region``: its id,
        ``nbytes``: its size), after unmapping those the client no longer has."""
        self._unshare(arguments.get("unshare"))
        identifier = check_integer(arguments.get("region"), "share region", MAX_HANDLE)
        nbytes = check_integer(arguments.get("nbytes"), "share nbytes")
        if len(descriptors) != 1:
            raise ProtocolError(f"share carries one file descriptor, not {len(descriptors)}")
        if identifier in self.regions:
            raise ProtocolError(f"region {identifier} is shared already")
        if len(self.regions) >= MAX_REGIONS:
            raise ProtocolError(f"a session shares at most {MAX_REGIONS} regions at once")
        self.regions[identifier] = WorkerRegion(descriptors.pop(), nbytes)
        return [encode({"v": PROTOCOL_VERSION, "id": request_id, "ok": True})]

    def _unshare(self, identifiers: Any) -> None:
        """Unmap the regions ``identifiers`` names (absent: none)."""
        if identifiers is None:
            return
        if type(identifiers) is not list or len(identifiers) > MAX_OPS_PER_BATCH:
            raise ProtocolError(f"unshare must be a list of at most {MAX_OPS_PER_BATCH} ids")
        for identifier in identifiers:
            if type(identifier) is int:
                self.regions.pop(identifier, None)

    def _batch(
        self, peer: bytes, request_id: int, arguments: dict[str, Any], frames: list[memoryview]
    ) -> list[Any]:
        group = check_integer(arguments.get("group"), "group", MAX_HANDLE)
        operations, frees = arguments.get("ops"), arguments.get("frees")
        if type(operations) is not list or len(operations) > MAX_OPS_PER_BATCH:
            raise ProtocolError(f"ops must be a list of at most {MAX_OPS_PER_BATCH} operations")
        if type(frees) is not list or len(frees) > MAX_OPS_PER_BATCH:
            raise ProtocolError(f"frees must be a list of at most {MAX_OPS_PER_BATCH} handles")
        payload, readbacks = self._transfers(arguments.get("window"), frames)
        self._unshare(arguments.get("unshare"))
        times = array("q")
        failed, message, launch = None, None, None
        if group != self.failed_groups.get(peer):
            clock = time.perf_counter_ns
            run = self._operations
            for index, operation in enumerate(operations):
                started = clock()
                try:
                    check_operation(operation, len(payload))
                    run[operation[0]](operation, payload, readbacks)
                except Exception as error:
                    failed, message = index, f"{type(error).__name__}: {error}"
                    if isinstance(error, LaunchStoppedHere):
                        launch = error.record.outcome()
                    self.failed_groups[peer] = group
                    level = logging.WARNING if type(error) is ProtocolError else logging.INFO
                    logger.log(level, "operation %d of a batch failed: %s", index, message)
                    break
                times.append(started)
                times.append(clock())
        for handle in frees:
            if type(handle) is int:
                self.allocations.pop(handle, None)
        reply = {"v": PROTOCOL_VERSION, "id": request_id, "ok": True, "done": len(times) // 2}
        if self.printed:
            reply["printed"], self.printed = self.printed, []
        if failed is not None:
            reply.update(failed=failed, error=message)
        if launch is not None:
            reply["launch"] = launch
        return [encode(reply), times.tobytes(), *readbacks.frames()]

    def _transfers(self, window: Any, frames: list[memoryview]) -> tuple[memoryview, Readbacks]:
        """Where a batch's upload bytes are and its downloads go: its payload frame and a
        reply frame, or the part of the window that ``window`` (``[start, payload bytes]``)
        names."""
        if window is None:
            return (frames[0] if frames else memoryview(b"")), Readbacks()
        if self.window is None:
            raise ProtocolError("this session has no window; send the bytes in the message")
        if frames:
            raise ProtocolError("a batch's bytes are in the window or in a frame, not both")
        if type(window) is not list or len(window) != 2:
            raise ProtocolError("window must be [start, payload bytes]")
        size = self.window.nbytes
        start = check_integer(window[0], "window start", size)
        end = start + check_integer(window[1], "window payload bytes", size - start)
        return memoryview(self.window.array[start:end]), Readbacks(self.window.array, end)

    # -- operations --------------------------------------------------------------------

    def _upload(self, operation: list[Any], payload: memoryview, readbacks: Readbacks) -> None:
        _, handle, offset, nbytes, start = operation
        source = np.frombuffer(payload, np.uint8, nbytes, start)
        self.backend.upload(self.memory(handle, offset, nbytes), offset, source)

    def _download(self, operation: list[Any], payload: memoryview, readbacks: Readbacks) -> None:
        _, handle, offset, nbytes = operation
        allocation = self.memory(handle, offset, nbytes)
        self.backend.download(allocation, offset, readbacks.take(nbytes))

    def _readback(self, operation: list[Any], payload: memoryview, readbacks: Readbacks) -> None:
        _, handle, offset, nbytes, identifier, region_offset = operation
        region = self.regions.get(identifier)
        if region is None:
            raise ProtocolError(f"region {identifier} is not shared (or was unshared)")
        allocation = self.memory(handle, offset, nbytes)
        self.backend.download(allocation, offset, region.part(region_offset, nbytes))

    def _copy(self, operation: list[Any], payload: memoryview, readbacks: Readbacks) -> None:
        _, source, source_offset, target, target_offset, nbytes = operation
        self.backend.copy(
            self.memory(source, source_offset, nbytes),
            source_offset,
            self.memory(target, target_offset, nbytes),
            target_offset,
            nbytes,
        )

    def _fill(self, operation: list[Any], payload: memoryview, readbacks: Readbacks) -> None:
        _, handle, offset, nbytes, description, element_hex = operation
        try:
            dtype = dtype_from(description)
        except ProtocolError as error:
            raise ProtocolError(f"fill dtype: {error}") from None
        try:
            element = np.frombuffer(bytes.fromhex(element_hex), dtype)
        except ValueError as error:
            raise ProtocolError(f"fill element {element_hex[:40]!r}: {error}") from None
        if element.size != 1 or nbytes % element.itemsize:
            raise ProtocolError(
                f"fill of {nbytes} bytes with one {element.dtype} element does not fit"
            )
        self.backend.fill(self.memory(handle, offset, nbytes), offset, nbytes, element)

    def _dispatch(self, operation: list[Any], payload: memoryview, readbacks: Readbacks) -> None:
        self.backend.dispatch(*self._launch(operation))

    def _dispatch_printing(
        self, operation: list[Any], payload: memoryview, readbacks: Readbacks
    ) -> None:
        """A dispatch whose device prints are kept (``[width, capacity]`` of its log,
        the last field) and sent back, with the batch's reply, even if it fails."""
        kernel, dims, arguments, scalars = self._launch(operation[:-1])
        if kernel.print_target is None:
            raise ProtocolError(f"kernel {kernel.name} has no device print")
        log = kernel.print_log = ServedPrintLog(*operation[-1])
        try:
            self.backend.dispatch(kernel, dims, arguments, scalars)
        finally:
            kernel.print_log = None
            self.printed.append(log.reply())

    def _launch(
        self, operation: list[Any]
    ) -> tuple[ServedKernel, tuple[int, int, int], list[KernelBuffer], list[Any]]:
        """The kernel, dims, buffers and scalars of a dispatch (built on first use)."""
        _, key, dims, buffers, scalars, definition = operation
        kernel = self.kernels.get(key)
        if kernel is None:
            if definition is None:
                raise ProtocolError(f"kernel {key} is unknown here; send its definition")
            if kernel_key(definition) != key:
                raise ProtocolError(f"kernel {key} does not match its definition's hash")
            kernel = self.kernels[key] = ServedKernel(definition, self.cancel)
        if len(buffers) != len(kernel.buffer_dtypes) or len(scalars) != kernel.scalar_count:
            raise ProtocolError(
                f"kernel {kernel.name} takes {len(kernel.buffer_dtypes)} buffer(s) and "
                f"{kernel.scalar_count} scalar(s), got {len(buffers)} and {len(scalars)}"
            )
        arguments = [
            KernelBuffer(self.memory(handle, offset, nbytes), offset, nbytes, dtype)
            for (handle, offset, nbytes), dtype in zip(buffers, kernel.buffer_dtypes, strict=True)
        ]
        return kernel, tuple(dims), arguments, scalars


class Readbacks:
    """Where a batch's downloads go, one after the other: new memory sent as the reply's
    last frame, or ``window`` from byte ``start`` on."""

    __slots__ = ("arrays", "position", "window")

    def __init__(self, window: np.ndarray | None = None, start: int = 0) -> None:
        self.window = window
        self.position = start
        self.arrays: list[np.ndarray] = []

    def take(self, nbytes: int) -> np.ndarray:
        """Memory for the next download's ``nbytes``."""
        if self.window is None:
            self.arrays.append(np.empty(nbytes, np.uint8))
            return self.arrays[-1]
        start, end = self.position, self.position + nbytes
        if end > self.window.nbytes:
            raise ProtocolError(f"downloads up to byte {end} overrun the window")
        self.position = end
        return self.window[start:end]

    def frames(self) -> list[np.ndarray]:
        """The reply frame of the downloads (none in the window)."""
        arrays = self.arrays
        if not arrays:
            return []
        return [arrays[0] if len(arrays) == 1 else np.concatenate(arrays)]


def error_reply(request_id: int | None, message: str, *, ended: bool = False) -> list[bytes]:
    """The frames of a refusal; ``ended``: the session is gone, and so is every later
    request of it."""
    reply: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": request_id, "ok": False}
    reply["error"] = message
    if ended:
        reply["ended"] = True
    return [encode(reply)]


@dataclass(frozen=True)
class WorkerPlaces:
    """Where a session's worker serves: the ``ipc://`` endpoint that its supervisor
    connects to (with the routing id ``supervisor``, a secret), the Unix socket that
    clients on this host connect to (``stream``), and the files of the session's cancel
    flag and of its window of ``window_bytes``."""

    endpoint: str
    supervisor: bytes
    stream: str
    cancel: str
    window: str
    window_bytes: int

    @property
    def files(self) -> tuple[str, ...]:
        """The files the worker and its supervisor share, all in one directory."""
        return (self.endpoint.removeprefix("ipc://"), self.stream, self.cancel, self.window)


def check_direct(
    session: str, max_message_bytes: int, header: dict[str, Any], data: list[memoryview]
) -> None:
    """What the supervisor checks of a relayed request, for one sent to the worker
    directly: the envelope, this worker's session, and the frames' number and size."""
    check_request(header, DIRECT_REQUESTS)
    if header["session"] != session:
        raise ProtocolError("this worker serves another session")
    if len(data) > 2:
        raise ProtocolError("a request has at most 3 frames")
    if len(data) == 2 and len(data[1]) > max_message_bytes:
        raise ProtocolError(
            f"payload of {len(data[1])} bytes exceeds the server's limit of {max_message_bytes}"
        )


class DirectClients:
    """The worker's Unix stream socket at ``path`` and the clients on this host connected
    to it, each answered by ``answer(peer, frames)``. A connection that breaks the
    message format, stalls inside a message for :data:`STREAM_SECONDS` or leaves its
    reply untaken as long is dropped (the worker cannot tell where its next message
    would begin); the client then fails as for a lost server."""

    def __init__(
        self, path: str, answer: Callable[[bytes, list[memoryview], list[int]], list[Any]]
    ) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)
        self.answer = answer
        self.connections: dict[int, socket.socket] = {}

    def accept(self, poller: select.poll) -> None:
        connection, _ = self.listener.accept()
        if len(self.connections) >= MAX_DIRECT_CONNECTIONS:
            logger.warning("refused a direct connection: %d are open", len(self.connections))
            connection.close()
            return
        connection.setblocking(False)  # waits only when a read or write finds nothing to do
        self.connections[connection.fileno()] = connection
        poller.register(connection.fileno(), select.POLLIN)

    def serve(self, descriptor: int, poller: select.poll) -> None:
        """Answer the message waiting on connection ``descriptor``."""
        connection = self.connections[descriptor]
        passed: list[int] = []  # file descriptors that came with the message
        try:
            frames = receive_frames(connection, MAX_FRAME_BYTES, STREAM_SECONDS, passed)
            reply = self.answer(b"d%d" % descriptor, frames, passed)
            close_all(passed)
            send_frames(connection, reply, STREAM_SECONDS)
        except (ProtocolError, OSError) as error:
            close_all(passed)  # ConnectionError, TimeoutError included
            if not isinstance(error, ConnectionError):
                logger.warning("dropped a direct connection: %s", error or type(error).__name__)
            poller.unregister(descriptor)
            del self.connections[descriptor]
            connection.close()

    def close(self) -> None:
        for connection in [self.listener, *self.connections.values()]:
            connection.close()


class Waiting:
    """How the worker waits for its next request. A client in a loop of synchronous round
    trips sends the next request some 50 µs after it got a reply; a worker asleep by then
    must be woken, which costs the client's send the wake-up of another vCPU and the
    worker the time to be scheduled (on this 2-vCPU VM a round trip went from about 150 µs
    to 95 µs when the worker did not sleep). So while requests come within
    :data:`LINGER_NANOSECONDS` of the reply before them, the worker polls without
    sleeping for up to that long before it sleeps; once a request comes later, it sleeps
    at once again. A burst's end costs one such look, and an idle worker none."""

    def __init__(
        self, poller: select.poll, clock: Callable[[], int] = time.perf_counter_ns
    ) -> None:
        self.poller = poller
        self.clock = clock
        self.lingers = False

    def next_events(self) -> list[tuple[int, int]]:
        """The events of the next descriptors ready (``poll()``'s list)."""
        poll, clock = self.poller.poll, self.clock
        start = clock()
        if self.lingers:
            until = start + LINGER_NANOSECONDS
            while clock() < until:
                if events := poll(0):
                    return events
        events = poll()
        self.lingers = clock() - start < LINGER_NANOSECONDS
        return events


def serve_session(
    places: WorkerPlaces,
    session: str,
    backend: str,
    max_message_bytes: int,
    log_level: int,
    lifeline: Connection,
) -> None:
    """A worker process's main function: answer the requests of ``session`` until the
    server stops this process, or is gone itself (see :mod:`~luisa_nb.remote.lifeline`:
    ``lifeline`` is the reading end of a pipe only the server writes to). Requests come
    relayed by the server, or straight from a client on this host; kernels poll the
    session's cancel flag, which the server sets and clears."""
    exit_with_server(lifeline, places.files)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group
    faulthandler.enable()  # a crash prints the Python stack into the server's log
    logging.basicConfig(level=log_level, format=f"luisa_nb worker {os.getpid()}: %(message)s")
    window = Window(places.window, places.window_bytes)
    cancel = session_cancel_flag(places.cancel)
    worker = SessionWorker(load_backend(backend)(), cancel, window)
    check = functools.partial(check_direct, session, max_message_bytes)
    supervisor = places.supervisor
    context = zmq.Context(1)
    relayed = context.socket(zmq.ROUTER)
    relayed.setsockopt(zmq.LINGER, 0)
    relayed.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
    relayed.setsockopt(zmq.RCVHWM, MAX_WAITING)
    relayed.bind(places.endpoint)
    direct = DirectClients(
        places.stream,
        lambda peer, frames, passed: worker.answer(peer, frames[0], frames[1:], check, passed),
    )
    listener = direct.listener.fileno()
    relay = relayed.getsockopt(zmq.FD)
    # One poll() on plain descriptors: ZeroMQ's own poller costs six system calls a wake.
    # The relay socket's descriptor says only that its state may have changed, so a wake
    # on it reads every waiting message (until none is left, which rearms it).
    poller = select.poll()
    for descriptor in (relay, listener):
        poller.register(descriptor, select.POLLIN)
    waiting = Waiting(poller)
    try:
        _relay(relayed, worker, supervisor)  # what came before the descriptor was read
        while True:
            for ready, _ in waiting.next_events():
                if ready == relay:
                    _relay(relayed, worker, supervisor)
                elif ready == listener:
                    direct.accept(poller)
                else:
                    direct.serve(ready, poller)
    finally:
        direct.close()
        context.destroy(linger=0)


def _relay(relayed: zmq.Socket, worker: SessionWorker, supervisor: bytes) -> None:
    """Answer the supervisor's relayed requests waiting on ``relayed``."""
    while True:
        try:
            frames = relayed.recv_multipart(zmq.NOBLOCK, copy=False)
        except zmq.Again:
            return
        if frames[0].bytes != supervisor or len(frames) < 4:  # ticket, peer, envelope, ...
            logger.warning("dropped a message on the relay socket that is not the server's")
            continue
        data = [frame.buffer for frame in frames[4:]]
        reply = worker.answer(b"r" + frames[2].bytes, frames[3].buffer, data)
        relayed.send_multipart([frames[0], frames[1], *reply], copy=False)
