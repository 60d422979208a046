"""The remote server: one local backend served to clients over a ZeroMQ ROUTER socket.

It runs on one thread and handles one message at a time, so a client's operations run
in the order it sent them. State is per *session* (a client): its buffer handles. A
session ends on ``close`` or when its last connection drops; its buffers are freed
then. Compiled kernels are shared by every session, keyed by a hash of their definition.
Nothing is kept per command, so memory stays flat however many commands run.

    python -m luisa_nb.remote.server --backend cpu --port 0 --ready   # used by clients
    luisa-nb serve --backend cpu                                        # for people
"""

from __future__ import annotations

import argparse
import hmac
import logging
import os
import secrets
import struct
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import zmq

from luisa_nb.backends import load_backend
from luisa_nb.backends.base import Allocation, Backend, KernelBuffer
from luisa_nb.errors import ConfigurationError, RemoteError
from luisa_nb.kernels.c_emitter import STRUCT_CODES
from luisa_nb.kernels.toolchain import build_library, load_function
from luisa_nb.kernels.type_system import ScalarType
from luisa_nb.remote.options import DEFAULT_PORT, add_serve_options
from luisa_nb.remote.protocol import (
    DEFAULT_MAX_MESSAGE_BYTES,
    MAX_HANDLE,
    MAX_HEADER_BYTES,
    MAX_OPS_PER_BATCH,
    PROTOCOL_VERSION,
    TOKEN_VARIABLE,
    ProtocolError,
    check_definition,
    check_integer,
    check_operation,
    check_request,
    decode,
    encode,
    kernel_key,
)

logger = logging.getLogger("luisa_nb.remote.server")
POLL_MILLISECONDS = 500
SWEEP_DELAYS = (0.05, 0.5)
PROBE = encode({"v": PROTOCOL_VERSION, "id": None, "ok": True, "probe": True})


class ServedKernel:
    """A kernel built on the server from a client's definition; ``launch`` takes the
    address of each buffer, like a local C executable."""

    mode = "c"

    def __init__(self, definition: dict[str, Any]) -> None:
        self.name = definition["name"]
        self.buffer_dtypes = [np.dtype(name) for name in definition["buffers"]]
        self.scalar_count = len(definition["scalars"])
        library = build_library(self.name, definition["source"])
        self._function = load_function(library, self.name)
        # the layout of the generated argument struct (see c_emitter.argument_struct)
        codes = "".join(STRUCT_CODES[ScalarType(name)] for name in definition["scalars"])
        self._pack = struct.Struct(f"@3q{'P' * len(self.buffer_dtypes)}{codes}0q").pack

    def launch(
        self, dims: tuple[int, int, int], buffers: Sequence[int], scalars: Sequence[Any]
    ) -> None:
        self._function(self._pack(*dims, *buffers, *scalars))


class Session:
    """One client's buffers, by handle, and the connections (peers) it talks through."""

    __slots__ = ("allocations", "next_handle", "peers")

    def __init__(self) -> None:
        self.allocations: dict[int, Allocation] = {}
        self.next_handle = 1
        self.peers: set[bytes] = set()

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


class Peer:
    """One connection: its session, and the last batch group that failed on it (later
    messages of that group are skipped, so a failure stops the rest of its flush)."""

    __slots__ = ("failed_group", "session")

    def __init__(self, session: str) -> None:
        self.session = session
        self.failed_group = -1


class Server:
    """Serves backend ``backend`` on ``tcp://host:port`` (``port=0``: any free port).

    Every request must carry ``token``. Messages whose data frames total more than
    ``max_message_bytes`` are rejected; a single frame over it makes ZeroMQ drop the
    connection. Call :meth:`serve` to run, :meth:`close` when done.
    """

    def __init__(
        self,
        backend: str = "cpu",
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        token: str,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if backend == "remote":
            raise ConfigurationError("a remote server serves a local backend, not 'remote'")
        if not token:
            raise ConfigurationError("a remote server needs a non-empty token")
        self.backend: Backend = load_backend(backend)()
        self.max_message_bytes = max_message_bytes
        self.token = token
        self._token = token.encode()
        self._sessions: dict[str, Session] = {}
        self._peers: dict[bytes, Peer] = {}
        self._kernels: dict[str, ServedKernel] = {}
        self._sweeps: list[float] = []
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.ROUTER)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self._socket.setsockopt(zmq.MAXMSGSIZE, max(max_message_bytes, MAX_HEADER_BYTES))
        self._monitor = self._socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        try:
            self._socket.bind(f"tcp://{host}:{port or '*'}")
        except zmq.ZMQError as error:
            self.close()
            raise RemoteError(
                f"cannot serve on tcp://{host}:{port}: {error}; pick another --port (0: any)"
            ) from None
        self.endpoint = self._socket.getsockopt_string(zmq.LAST_ENDPOINT)
        if host not in ("127.0.0.1", "localhost", "::1"):
            logger.warning(
                "serving on %s: whoever reaches it with the token can run code here",
                self.endpoint,
            )
        self._operations: dict[str, Callable[[Session, list[Any], list[zmq.Frame]], Any]] = {
            "upload": self._upload,
            "download": self._download,
            "copy": self._copy,
            "fill": self._fill,
            "dispatch": self._dispatch,
        }

    @property
    def address(self) -> str:
        """``remote://HOST:PORT``, as ``create_device`` takes it."""
        return "remote://" + self.endpoint.removeprefix("tcp://")

    # -- the loop --------------------------------------------------------------------

    def serve(self, stop: threading.Event | None = None, parent_pid: int | None = None) -> None:
        """Serve until ``stop`` is set, or until the process ``parent_pid`` is gone.

        A blocking receive with a timeout (rather than a poller over both sockets) keeps
        a round trip short; the monitor is checked after each message or timeout."""
        socket, timeout = self._socket, None
        next_check = time.monotonic() + POLL_MILLISECONDS / 1000
        while not (stop is not None and stop.is_set()):
            wait = POLL_MILLISECONDS
            if self._sweeps:
                wait = max(1, min(wait, int((self._sweeps[0] - time.monotonic()) * 1000) + 1))
            if wait != timeout:
                socket.setsockopt(zmq.RCVTIMEO, timeout := wait)
            try:
                frames = socket.recv_multipart(copy=False)
            except zmq.Again:
                frames = None
            if frames is not None:
                self._answer(frames)
            if self._monitor.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                while self._monitor.poll(0):
                    self._monitor.recv_multipart()
                now = time.monotonic()
                self._sweeps = [now + delay for delay in SWEEP_DELAYS]
                self._sweep()
            now = time.monotonic()
            if self._sweeps and now >= self._sweeps[0]:
                del self._sweeps[0]
                self._sweep()
            if parent_pid is not None and now >= next_check:
                next_check = now + POLL_MILLISECONDS / 1000
                if os.getppid() != parent_pid:
                    logger.info("the process that started this server is gone; stopping")
                    return

    def close(self) -> None:
        self._sessions.clear()
        self._peers.clear()
        self._socket.disable_monitor()
        self._monitor.close(linger=0)
        self._socket.close(linger=0)
        self._context.term()

    def _answer(self, frames: list[zmq.Frame]) -> None:
        try:
            reply = self._handle(frames)
        except Exception:  # a bug here must not stop the server
            logger.exception("internal error while handling a message")
            reply = _error(None, "internal server error; see the server log")
        self._send(frames[0].bytes, reply)

    def _send(self, identity: bytes, reply: list[Any]) -> None:
        try:
            self._socket.send_multipart([identity, *reply], zmq.NOBLOCK, copy=False)
        except zmq.ZMQError as error:  # the peer left, or stopped reading
            logger.info("dropped a reply to a peer that cannot take it: %s", error)

    def _sweep(self) -> None:
        """After a connection dropped: forget the peers ZeroMQ can no longer route to.
        The socket may learn of the drop a little after the monitor does, so this runs
        at once and again after each of ``SWEEP_DELAYS``."""
        self._socket.getsockopt(zmq.EVENTS)  # lets the socket process pending drops
        for identity in list(self._peers):
            try:
                self._socket.send_multipart([identity, PROBE], zmq.NOBLOCK)
            except zmq.ZMQError as error:
                if error.errno == zmq.EHOSTUNREACH:
                    self._forget(identity)

    def _forget(self, identity: bytes) -> None:
        peer = self._peers.pop(identity)
        session = self._sessions.get(peer.session)
        if session is not None:
            session.peers.discard(identity)
            if not session.peers:
                self._end_session(peer.session, "its last connection closed")

    def _end_session(self, name: str, why: str) -> None:
        session = self._sessions.pop(name)
        for identity in session.peers:
            self._peers.pop(identity, None)
        freed = len(session.allocations)
        logger.info("session %s ended (%s); freed %d buffer(s)", name, why, freed)

    # -- one message -----------------------------------------------------------------

    def _handle(self, frames: list[zmq.Frame]) -> list[Any]:
        identity, data = frames[0].bytes, frames[2:]
        request_id = None
        try:
            if len(frames) < 2:
                raise ProtocolError("a message needs a header frame")
            header = decode(frames[1].buffer)
            request_id = header.get("id") if type(header.get("id")) is int else None
            check_request(header)
            if not hmac.compare_digest(header["token"].encode(), self._token):
                logger.warning("rejected a message from %s: wrong token", _peer_address(frames))
                return _error(request_id, "authentication failed: wrong token")
            total = sum(len(frame) for frame in data)
            if total > self.max_message_bytes:
                raise ProtocolError(
                    f"message carries {total} data bytes; the limit is {self.max_message_bytes}"
                )
            peer = self._peer(identity, header["session"])
            return self._request(peer, header, data)
        except ProtocolError as error:
            logger.warning("rejected a message from %s: %s", _peer_address(frames), error)
            return _error(request_id, f"malformed message: {error}")

    def _peer(self, identity: bytes, session_name: str) -> Peer:
        peer = self._peers.get(identity)
        if peer is None or peer.session != session_name:
            if peer is not None:
                self._forget(identity)
            if session_name not in self._sessions:
                self._sessions[session_name] = Session()
            self._sessions[session_name].peers.add(identity)
            peer = self._peers[identity] = Peer(session_name)
        return peer

    def _request(self, peer: Peer, header: dict[str, Any], data: list[zmq.Frame]) -> list[Any]:
        op, request_id = header["op"], header["id"]
        session = self._sessions[peer.session]
        if op == "batch":
            return self._batch(peer, session, header, data)
        reply: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": request_id, "ok": True}
        if op == "clock":
            reply["time"] = time.perf_counter_ns()
        elif op == "hello":
            reply.update(self._hello())
        elif op == "allocate":
            nbytes = check_integer(header.get("nbytes"), "allocate nbytes")
            try:
                allocation = self.backend.allocate(max(nbytes, 1))
            except (MemoryError, ValueError) as error:
                return _error(request_id, f"cannot allocate {nbytes} bytes: {error!r}")
            reply["handle"] = handle = session.next_handle
            session.next_handle += 1
            session.allocations[handle] = allocation
        elif op == "close":
            self._end_session(peer.session, "the client closed it")
        return [encode(reply)]

    def _hello(self) -> dict[str, Any]:
        info = self.backend.info()
        return {
            "server": "luisa_nb",
            "backend": info["name"],
            "description": info["description"],
            "model": info["model"],
            "staging_capacity": info["staging_capacity"],
            "max_message_bytes": self.max_message_bytes,
            "pid": os.getpid(),
            "time": time.perf_counter_ns(),
        }

    def _batch(
        self, peer: Peer, session: Session, header: dict[str, Any], data: list[zmq.Frame]
    ) -> list[Any]:
        group = check_integer(header.get("group"), "group", MAX_HANDLE)
        operations, frees = header.get("ops"), header.get("frees")
        if type(operations) is not list or len(operations) > MAX_OPS_PER_BATCH:
            raise ProtocolError(f"ops must be a list of at most {MAX_OPS_PER_BATCH} operations")
        if type(frees) is not list or len(frees) > MAX_OPS_PER_BATCH:
            raise ProtocolError(f"frees must be a list of at most {MAX_OPS_PER_BATCH} handles")
        times = array("q")
        outputs: list[Any] = []
        failed, message = None, None
        if group != peer.failed_group:
            clock = time.perf_counter_ns
            run = self._operations
            for index, operation in enumerate(operations):
                started = clock()
                try:
                    check_operation(operation, len(data))
                    output = run[operation[0]](session, operation, data)
                except Exception as error:
                    failed, message = index, _describe(error)
                    peer.failed_group = group
                    level = logging.WARNING if type(error) is ProtocolError else logging.INFO
                    logger.log(level, "operation %d of a batch failed: %s", index, message)
                    break
                times.append(started)
                times.append(clock())
                if output is not None:
                    outputs.append(output)
        for handle in frees:
            session.allocations.pop(handle, None)
        reply = {"v": PROTOCOL_VERSION, "id": header["id"], "ok": True, "done": len(times) // 2}
        if failed is not None:
            reply.update(failed=failed, error=message)
        return [encode(reply), times.tobytes(), *outputs]

    # -- operations --------------------------------------------------------------------

    def _upload(self, session: Session, operation: list[Any], data: list[zmq.Frame]) -> None:
        _, handle, offset, frame = operation
        source = np.frombuffer(data[frame].buffer, np.uint8)
        self.backend.upload(session.memory(handle, offset, source.nbytes), offset, source)

    def _download(self, session: Session, operation: list[Any], data: list[zmq.Frame]) -> Any:
        _, handle, offset, nbytes = operation
        allocation = session.memory(handle, offset, nbytes)
        out = np.empty(nbytes, np.uint8)
        self.backend.download(allocation, offset, out)
        return out

    def _copy(self, session: Session, operation: list[Any], data: list[zmq.Frame]) -> None:
        _, source, source_offset, target, target_offset, nbytes = operation
        self.backend.copy(
            session.memory(source, source_offset, nbytes),
            source_offset,
            session.memory(target, target_offset, nbytes),
            target_offset,
            nbytes,
        )

    def _fill(self, session: Session, operation: list[Any], data: list[zmq.Frame]) -> None:
        _, handle, offset, nbytes, dtype, element_hex = operation
        try:
            element = np.frombuffer(bytes.fromhex(element_hex), np.dtype(dtype))
        except ValueError as error:
            raise ProtocolError(f"fill element {element_hex!r}: {error}") from None
        if element.size != 1 or nbytes % element.itemsize:
            raise ProtocolError(f"fill of {nbytes} bytes with one {dtype} element does not fit")
        self.backend.fill(session.memory(handle, offset, nbytes), offset, nbytes, element)

    def _dispatch(self, session: Session, operation: list[Any], data: list[zmq.Frame]) -> None:
        _, key, dims, buffers, scalars, definition = operation
        kernel = self._kernels.get(key)
        if kernel is None:
            if definition is None:
                raise ProtocolError(f"kernel {key} is unknown here; send its definition")
            if kernel_key(check_definition(definition)) != key:
                raise ProtocolError(f"kernel {key} does not match its definition's hash")
            kernel = self._kernels[key] = ServedKernel(definition)
        if len(buffers) != len(kernel.buffer_dtypes) or len(scalars) != kernel.scalar_count:
            raise ProtocolError(
                f"kernel {kernel.name} takes {len(kernel.buffer_dtypes)} buffer(s) and "
                f"{kernel.scalar_count} scalar(s), got {len(buffers)} and {len(scalars)}"
            )
        arguments = [
            KernelBuffer(session.memory(handle, offset, nbytes), offset, nbytes, dtype)
            for (handle, offset, nbytes), dtype in zip(buffers, kernel.buffer_dtypes, strict=True)
        ]
        self.backend.dispatch(kernel, tuple(dims), arguments, scalars)


def _error(request_id: int | None, message: str) -> list[bytes]:
    return [encode({"v": PROTOCOL_VERSION, "id": request_id, "ok": False, "error": message})]


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _peer_address(frames: list[zmq.Frame]) -> str:
    try:
        return frames[-1].get("Peer-Address")
    except zmq.ZMQError:
        return "an unknown peer"


def make_server(arguments: argparse.Namespace) -> Server:
    token = arguments.token or os.environ.get(TOKEN_VARIABLE) or secrets.token_hex(16)
    return Server(
        arguments.backend,
        host=arguments.host,
        port=arguments.port,
        token=token,
        max_message_bytes=arguments.max_message_bytes,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Serve for a client that started this process: print one JSON line when ready, and
    stop when that client (the parent process) is gone."""
    parser = argparse.ArgumentParser(prog="python -m luisa_nb.remote.server")
    add_serve_options(parser)
    parser.add_argument("--exit-with-parent", action="store_true")
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="luisa_nb server: %(message)s")
    parent = os.getppid() if arguments.exit_with_parent else None
    server = make_server(arguments)
    print(encode({"endpoint": server.endpoint, "pid": os.getpid()}).decode(), flush=True)
    try:
        server.serve(parent_pid=parent)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
