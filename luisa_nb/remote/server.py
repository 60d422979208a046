"""The remote server: one local backend served to clients over a ZeroMQ ROUTER socket.

The process that binds the port (this module, the *supervisor*) never runs a client's
operations. It checks each connection's token during the ZeroMQ handshake
(:mod:`~luisa_nb.remote.authentication`), reads each message's envelope before it keeps
any other frame, answers ``hello``, ``clock``, ``close``, ``cancel`` and ``resume``
itself, and relays ``allocate`` and ``batch`` to the session's worker process
(:mod:`~luisa_nb.remote.worker`), which holds that session's buffers and runs its
kernels; a client on this host sends those to the worker itself (``hello`` says where,
see :mod:`~luisa_nb.remote.window`). ``cancel`` sets a flag that the worker's running
kernel polls, so it reaches the kernel while the worker reads no message. A worker that
crashes ends its own session only: the supervisor answers that session's waiting and
later requests with an error saying how the worker ended, tells the session's
connections so, and every other session keeps running.

A session (a client) ends on ``close``, when its last connection drops, or when its
worker ends; its worker is stopped and its buffers are freed then. Nothing is kept per
command, so memory stays flat however many commands run.

    python -m luisa_nb.remote.server --backend cpu --port 0   # used by clients
    luisa-nb serve --backend cpu                                # for people

(both through :mod:`luisa_nb.remote.options`).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import zmq

from luisa_nb.backends import load_backend
from luisa_nb.errors import ConfigurationError, RemoteError
from luisa_nb.remote import regions
from luisa_nb.remote.authentication import TokenAuthenticator
from luisa_nb.remote.options import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_PORT,
    add_serve_options,
    stop_on_terminate,
)
from luisa_nb.remote.protocol import (
    CANCEL_REQUESTS,
    DEFAULT_MAX_MESSAGE_BYTES,
    MAX_ENVELOPE_BYTES,
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    TOKEN_VARIABLE,
    ZAP_DOMAIN,
    ProtocolError,
    check_request,
    decode,
    encode,
)
from luisa_nb.remote.supervision import WorkerProcess, exit_description, process_context
from luisa_nb.remote.worker import error_reply

logger = logging.getLogger("luisa_nb.remote.server")
POLL_MILLISECONDS = 500
SWEEP_DELAYS = (0.05, 0.5)
PROBE = encode({"v": PROTOCOL_VERSION, "id": None, "ok": True, "probe": True})
HANDSHAKE_MILLISECONDS = 5000
MAX_READS_PER_WAKE = 64
MAX_WAITING_PER_SESSION = 64
EXIT_REPLY_MILLISECONDS = 20
STOP_SECONDS = 2.0


class Session:
    """One client: its connections (peers), its worker, and why that worker ended."""

    __slots__ = ("ended", "peers", "worker")

    def __init__(self) -> None:
        self.peers: set[bytes] = set()
        self.worker: WorkerProcess | None = None
        self.ended: str | None = None


class Server:
    """Serves backend ``backend`` on ``tcp://host:port`` (``port=0``: any free port).

    Connections must log in with ``token`` (ZeroMQ PLAIN, checked during the handshake:
    a peer without it never has a message read). A request whose payload exceeds
    ``max_message_bytes`` is refused; a frame over ``MAX_FRAME_BYTES`` makes ZeroMQ drop
    the connection. At most ``max_sessions`` sessions have a worker at a time. Call
    :meth:`serve` to run, :meth:`close` when done.
    """

    def __init__(
        self,
        backend: str = "cpu",
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        token: str,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
    ) -> None:
        if backend == "remote":
            raise ConfigurationError("a remote server serves a local backend, not 'remote'")
        if not token:
            raise ConfigurationError("a remote server needs a non-empty token")
        if not 1 <= max_message_bytes <= MAX_FRAME_BYTES:
            raise ConfigurationError(
                f"max_message_bytes={max_message_bytes} is outside [1, {MAX_FRAME_BYTES}] "
                f"(the payload of a message is one frame, and no frame may exceed "
                f"{MAX_FRAME_BYTES} bytes); clients split larger transfers themselves"
            )
        if max_sessions < 1:
            raise ConfigurationError(f"max_sessions={max_sessions}: a server serves 1 or more")
        if not zmq.has("ipc"):
            raise ConfigurationError(
                "the remote server needs ZeroMQ's ipc:// transport to reach its worker "
                "processes, and this libzmq has none; serve from Linux or macOS"
            )
        backend_class = load_backend(backend)
        self.backend_info = backend_class().info()
        self.shared_buffers = backend_class.device_memory_is_host and regions.AVAILABLE
        self.backend_name = backend
        self.max_message_bytes = max_message_bytes
        self.max_sessions = max_sessions
        self.token = token
        self._token = token.encode()
        self._sessions: dict[str, Session] = {}
        self._peers: dict[bytes, str] = {}
        self._workers: set[WorkerProcess] = set()
        self._tickets = itertools.count(1)
        self._worker_numbers = itertools.count(1)
        self._sweeps: list[float] = []
        self._processes = process_context()
        # workers read the end of this pipe as closed once this process is gone
        self._lifeline_reader, self._lifeline = self._processes.Pipe(duplex=False)
        # mode 0700; in memory where it can be, as it holds the sessions' windows
        self._directory = tempfile.mkdtemp(prefix="luisa_nb-server-", dir=_memory_directory())
        self._context = zmq.Context()
        self._authenticator = TokenAuthenticator(self._context, self._token)
        self._socket = socket = self._context.socket(zmq.ROUTER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        socket.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
        socket.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_MILLISECONDS)
        socket.plain_server = True
        socket.zap_domain = ZAP_DOMAIN.encode()
        self._monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        try:
            socket.bind(f"tcp://{host}:{port or '*'}")
        except zmq.ZMQError as error:
            self.close()
            raise RemoteError(
                f"cannot serve on tcp://{host}:{port}: {error}; pick another --port (0: any)"
            ) from None
        self.endpoint = socket.getsockopt_string(zmq.LAST_ENDPOINT)
        if host not in ("127.0.0.1", "localhost", "::1"):
            logger.warning(
                "serving on %s: whoever reaches it with the token can run code here",
                self.endpoint,
            )
        self._poller = zmq.Poller()
        self._handlers: dict[Any, Callable[[], None]] = {}
        self._watch(socket, self._read_requests)
        self._watch(self._authenticator.socket, self._authenticator.answer)
        self._watch(self._monitor, self._connection_dropped)

    @property
    def address(self) -> str:
        """``remote://HOST:PORT``, as ``create_device`` takes it."""
        return "remote://" + self.endpoint.removeprefix("tcp://")

    # -- the loop --------------------------------------------------------------------

    def serve(self, stop: threading.Event | None = None, parent_pid: int | None = None) -> None:
        """Serve until ``stop`` is set, or until the process ``parent_pid`` is gone."""
        next_check = time.monotonic() + POLL_MILLISECONDS / 1000
        while not (stop is not None and stop.is_set()):
            wait = POLL_MILLISECONDS
            if self._sweeps:
                wait = max(1, min(wait, int((self._sweeps[0] - time.monotonic()) * 1000) + 1))
            for item, _ in self._poller.poll(wait):
                handler = self._handlers.get(item)  # an earlier handler may have dropped it
                if handler is None:
                    continue
                try:
                    handler()
                except Exception:  # a bug here must not stop the server
                    logger.exception("internal error while serving")
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
        """Stop every worker (freeing every session's buffers) and release the port."""
        for worker in self._workers:
            if not worker.stopping:
                worker.stop()
        for worker in self._workers:
            worker.finish(STOP_SECONDS)
        self._workers.clear()
        self._sessions.clear()
        self._peers.clear()
        self._socket.disable_monitor()
        self._context.destroy(linger=0)
        self._lifeline.close()
        self._lifeline_reader.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    def _watch(self, item: Any, handler: Callable[[], None]) -> None:
        self._poller.register(item, zmq.POLLIN)
        self._handlers[item] = handler

    def _unwatch(self, item: Any) -> None:
        if self._handlers.pop(item, None) is not None:
            self._poller.unregister(item)

    def _send(self, identity: bytes, reply: list[Any]) -> None:
        try:
            self._socket.send_multipart([identity, *reply], zmq.NOBLOCK, copy=False)
        except zmq.ZMQError as error:  # the peer left, or stopped reading
            logger.info("dropped a reply to a peer that cannot take it: %s", error)

    # -- connections ---------------------------------------------------------------------

    def _connection_dropped(self) -> None:
        while self._monitor.poll(0):
            self._monitor.recv_multipart()
        now = time.monotonic()
        self._sweeps = [now + delay for delay in SWEEP_DELAYS]
        self._sweep()

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

    def _join(self, identity: bytes, name: str) -> Session:
        """The session ``name``, with ``identity`` among its peers."""
        current = self._peers.get(identity)
        if current != name:
            if current is not None:
                self._forget(identity)
            session = self._sessions.get(name)
            if session is None:
                session = self._sessions[name] = Session()
            session.peers.add(identity)
            self._peers[identity] = name
        return self._sessions[name]

    def _forget(self, identity: bytes) -> None:
        name = self._peers.pop(identity)
        session = self._sessions.get(name)
        if session is not None:
            session.peers.discard(identity)
            if not session.peers:
                self._end_session(name, "its last connection closed")

    def _end_session(self, name: str, why: str) -> None:
        session = self._sessions.pop(name, None)
        if session is None:
            return
        for identity in session.peers:
            self._peers.pop(identity, None)
        if session.worker is not None:
            self._unwatch(session.worker.socket)
            session.worker.stop()
        logger.info("session %s ended (%s)", name, why)

    # -- requests ------------------------------------------------------------------------

    def _read_requests(self) -> None:
        for _ in range(MAX_READS_PER_WAKE):
            try:
                first = self._socket.recv(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            self._take_request(first)

    def _take_request(self, identity_frame: zmq.Frame) -> None:
        """Read one message frame by frame: the envelope is checked before any other
        frame is kept, and the rest of a refused message is read and dropped."""
        socket, identity = self._socket, identity_frame.bytes
        request_id = None
        try:
            if not identity_frame.more:
                raise ProtocolError("a message needs an envelope frame")
            envelope = socket.recv(copy=False)
            header = decode(envelope.buffer, "envelope", MAX_ENVELOPE_BYTES)
            request_id = header.get("id") if type(header.get("id")) is int else None
            check_request(header)
            data = self._take_data(envelope.more)
            reply = self._request(identity, header, envelope, data)
        except ProtocolError as error:
            logger.warning("refused a message from %s: %s", _peer_address(identity_frame), error)
            reply = error_reply(request_id, f"malformed message: {error}")
        except Exception:  # a bug here must not stop the server
            logger.exception("internal error while handling a message")
            reply = error_reply(request_id, "internal server error; see the server log")
        finally:
            while socket.getsockopt(zmq.RCVMORE):  # what a refused message still holds
                socket.recv(copy=False)
        if reply is not None:
            self._send(identity, reply)

    def _take_data(self, more: bool) -> list[zmq.Frame]:
        """The arguments and payload frames after an envelope, within the limits."""
        data: list[zmq.Frame] = []
        if more:
            data.append(self._socket.recv(copy=False))
            if data[0].more:
                data.append(self._socket.recv(copy=False))
                if len(data[1]) > self.max_message_bytes:
                    raise ProtocolError(
                        f"payload of {len(data[1])} bytes exceeds the server's limit of "
                        f"{self.max_message_bytes}; split it"
                    )
                if data[1].more:
                    raise ProtocolError("a request has at most 3 frames")
        return data

    def _request(
        self,
        identity: bytes,
        header: dict[str, Any],
        envelope: zmq.Frame,
        data: list[zmq.Frame],
    ) -> list[Any] | None:
        """Answer the request (``header``: its ``envelope`` decoded) or relay it to the
        session's worker (then ``None``: the worker's reply is relayed when it comes)."""
        op, request_id, name = header["op"], header["id"], header["session"]
        if op in CANCEL_REQUESTS and data:
            raise ProtocolError(f"{op} is an envelope alone; it takes no other frame")
        session = self._join(identity, name)
        if op == "clock":
            return [encode(_ok(request_id, time=time.perf_counter_ns()))]
        if op == "close":
            self._end_session(name, "the client closed it")
            return [encode(_ok(request_id))]
        if session.ended is not None:
            return error_reply(request_id, session.ended, ended=True)
        worker = session.worker
        if op in CANCEL_REQUESTS:
            if worker is not None:  # else no kernel of this session runs
                self._cancel(worker, op == "cancel")
            return [encode(_ok(request_id))]
        if worker is None:
            if sum(1 for s in self._sessions.values() if s.worker) >= self.max_sessions:
                return error_reply(
                    request_id,
                    f"the server serves {self.max_sessions} sessions already (--max-sessions); "
                    f"close devices you no longer use, or start it with a larger --max-sessions",
                )
            try:
                worker = session.worker = self._start_worker(name)
            except Exception as error:  # the fork server is gone, or out of processes
                logger.exception("cannot start a worker process for session %s", name)
                return error_reply(
                    request_id, f"cannot start a worker process: {error!r}; see the server log"
                )
        if op == "hello":
            return [encode(_ok(request_id, **self._hello(worker)))]
        if len(worker.waiting) >= MAX_WAITING_PER_SESSION:
            return error_reply(
                request_id,
                f"session has {MAX_WAITING_PER_SESSION} requests waiting for its worker; "
                f"wait for their replies before sending more",
            )
        ticket = next(self._tickets)
        frames = [ticket.to_bytes(8, "little"), identity, envelope, *data]
        worker.socket.send_multipart(frames, copy=False)
        worker.waiting[ticket] = (identity, request_id)
        return None

    def _hello(self, worker: WorkerProcess) -> dict[str, Any]:
        info = self.backend_info
        return {
            "server": "luisa_nb",
            "backend": info["name"],
            "description": info["description"],
            "simulated": info["simulated"],
            "staging_capacity": info["staging_capacity"],
            "max_message_bytes": self.max_message_bytes,
            "pid": os.getpid(),
            "worker_pid": worker.pid,
            "local": worker.local,
            "shared_buffers": self.shared_buffers,
            "time": time.perf_counter_ns(),
        }

    # -- workers -------------------------------------------------------------------------

    def _start_worker(self, session: str) -> WorkerProcess:
        worker = WorkerProcess(
            self._processes,
            self._context,
            f"{self._directory}/worker-{next(self._worker_numbers)}",
            session,
            self.backend_name,
            self.max_message_bytes,
            self._lifeline_reader,
        )
        self._workers.add(worker)
        self._watch(worker.socket, functools.partial(self._relay_replies, worker))
        self._watch(worker.process.sentinel, functools.partial(self._worker_exited, worker))
        logger.info("session %s: worker process %d started", session, worker.pid)
        return worker

    def _cancel(self, worker: WorkerProcess, cancelled: bool) -> None:
        """Set or clear the cancel flag that ``worker``'s kernels poll: a kernel running
        now stops at its next check, and later ones as they start, until cleared."""
        if cancelled:
            worker.cancel.set()
        else:
            worker.cancel.clear()
        state = "cancelled" if cancelled else "resumed"
        logger.info("session %s: its kernels are %s", worker.session, state)

    def _relay_replies(self, worker: WorkerProcess) -> None:
        for _ in range(MAX_READS_PER_WAKE):
            try:
                frames = worker.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            waiting = worker.waiting.pop(int.from_bytes(frames[0].bytes, "little"), None)
            if waiting is not None:
                self._send(waiting[0], frames[1:])

    def _worker_exited(self, worker: WorkerProcess) -> None:
        self._unwatch(worker.process.sentinel)
        self._workers.discard(worker)
        code = worker.reap()
        if worker.stopping:
            return
        if worker.socket.poll(EXIT_REPLY_MILLISECONDS):  # replies sent just before the end
            self._relay_replies(worker)
        self._unwatch(worker.socket)
        worker.socket.close(linger=0)
        why = exit_description(worker.pid, code)
        logger.warning("session %s: %s", worker.session, why)
        session = self._sessions.get(worker.session)
        if session is not None and session.worker is worker:
            session.worker = None
            session.ended = why
            notice = error_reply(None, why, ended=True)  # for requests sent to the worker
            for identity in session.peers:
                self._send(identity, notice)
        for identity, request_id in worker.waiting.values():
            self._send(identity, error_reply(request_id, why, ended=True))


def _ok(request_id: int, **fields: Any) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "id": request_id, "ok": True, **fields}


def _memory_directory() -> str | None:
    """``/dev/shm`` where this system has one that this user may write, else ``None``
    (the default temporary directory)."""
    shared = "/dev/shm"
    return shared if os.path.isdir(shared) and os.access(shared, os.W_OK) else None


def _peer_address(frame: zmq.Frame) -> str:
    try:
        return frame.get("Peer-Address")
    except zmq.ZMQError:
        return "an unknown peer"


def make_server(arguments: argparse.Namespace) -> Server:
    """A server with the options in ``arguments`` (bound, not serving yet)."""
    token = arguments.token or os.environ.get(TOKEN_VARIABLE) or secrets.token_hex(16)
    return Server(
        arguments.backend,
        host=arguments.host,
        port=arguments.port,
        token=token,
        max_message_bytes=arguments.max_message_bytes,
        max_sessions=arguments.max_sessions,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Serve: print one JSON line when ready. With ``--exit-with-parent`` (a client
    started this process), stop when that client is gone, and ignore Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m luisa_nb.remote.server")
    add_serve_options(parser)
    parser.add_argument("--exit-with-parent", action="store_true")
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="luisa_nb server: %(message)s")
    terminated = stop_on_terminate()
    parent = None
    if arguments.exit_with_parent:
        parent = os.getppid()
        # a terminal's Ctrl-C reaches the whole process group, this server included: it
        # is the client's to handle (it cancels its kernels here and keeps its device)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    server = make_server(arguments)
    print(encode({"endpoint": server.endpoint, "pid": os.getpid()}).decode(), flush=True)
    try:
        server.serve(stop=terminated, parent_pid=parent)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":  # how a client starts a server (see launcher)
    sys.exit(main())
