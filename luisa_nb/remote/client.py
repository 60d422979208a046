"""The client side of the remote protocol: a connection, and one channel per thread.

Each thread that calls the backend (a stream's worker, or the user's thread for
``allocate``) gets its own DEALER socket, so no socket is shared between threads and
each thread waits only for its own replies. Operations are queued on the calling
thread's channel and sent as ``batch`` messages: when the queue holds ``MAX_OPERATIONS``
operations or ``chunk_bytes`` of data, and at ``flush``. A flush waits for every reply
of its thread, fills the spans, writes downloaded bytes, and raises
:class:`OperationFailed` for the first operation that failed.

``cancel`` and ``resume`` (a Ctrl-C in ``synchronize()``) travel on the interrupted
thread's own socket while a stream's thread waits for the cancelled kernel's reply; the
server's supervisor answers them at once, however long the kernel runs. A request cut
short by an interrupt leaves nothing behind: its late reply is dropped, never taken for
a later one's.

Nothing the server sends is trusted: a reply that does not fit the request it answers
breaks the connection with a :class:`RemoteError`, as does a dropped connection, a
session the server ended, or a silence longer than the timeout. No call blocks longer
than that, and none raises a ZeroMQ exception.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import subprocess
import threading
import time
from array import array
from collections import deque
from typing import Any

import numpy as np
import zmq
from zmq.utils.monitor import recv_monitor_message

from luisa_nb.backends.base import DeviceSpan, OperationFailed
from luisa_nb.errors import RemoteError
from luisa_nb.kernels.checks import LaunchRecord
from luisa_nb.remote.protocol import (
    MAX_FRAME_BYTES,
    PLAIN_USER,
    PROTOCOL_VERSION,
    ProtocolError,
    decode,
    encode,
)

MAX_OPERATIONS = 2048
MAX_IN_FLIGHT = 4
CLOCK_ROUND_TRIPS = 9
CANCEL_REPLY_SECONDS = 5.0
"""How long ``cancel`` and ``resume`` wait for the supervisor, which answers them at once
(a server that does not is lost)."""
WAIT_SLICE_MILLISECONDS = 100
WATCHED_EVENTS = (
    zmq.EVENT_DISCONNECTED
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
)
HELLO_FIELDS = {
    "backend": str,
    "model": bool,
    "max_message_bytes": int,
    "pid": int,
    "worker_pid": int,
}

Entry = tuple[DeviceSpan, "np.ndarray | None"]


class ServerLostError(OperationFailed, RemoteError):
    """The connection broke during a flush (the server or the session's worker ended,
    the connection dropped, a reply did not fit its request, or none came in time);
    ``span`` is the first operation of the flush not known to have run (the runtime
    fails its command and skips the rest of the submission)."""


class LaunchStopped(OperationFailed):
    """A kernel launch on the server stopped early (a failed check); ``outcome`` is its
    launch record as :meth:`~luisa_nb.kernels.checks.LaunchRecord.outcome` numbers."""

    def __init__(self, span: DeviceSpan, message: str, outcome: list[int | float]) -> None:
        super().__init__(span, message)
        self.outcome = outcome


class Connection:
    """A session on the server at ``endpoint`` (``tcp://HOST:PORT``).

    Connecting says hello (checking the token) and measures the clock offset: of
    ``CLOCK_ROUND_TRIPS`` round trips, the one with the smallest round-trip time gives
    ``offset_ns = server_time - (sent + received) / 2``, good to ``error_ns`` (half
    that round trip). Server times minus ``offset_ns`` are times on this host's clock.
    """

    def __init__(
        self,
        endpoint: str,
        token: str,
        timeout: float,
        process: subprocess.Popen | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.token = token
        self.timeout = timeout
        self.process = process
        self.session = secrets.token_hex(8)
        self.context = zmq.Context()
        self.channels: dict[int, Channel] = {}
        self.released: deque[int] = deque()
        self.broken: RemoteError | None = None
        self.resume_owed = False
        """Whether a ``cancel`` or ``resume`` was interrupted, so the server may hold
        this session's kernels cancelled: the next batch is sent after a ``resume``."""
        self.ids = itertools.count(1)
        self.offset_ns = 0
        self.error_ns = 0
        self.chunk_bytes = MAX_FRAME_BYTES
        try:
            channel = self.channel()
            self.hello = channel.call("hello")
            for name, kind in HELLO_FIELDS.items():
                self.expect(self.hello, name, kind)
            self.chunk_bytes = max(1, min(MAX_FRAME_BYTES, self.hello["max_message_bytes"]))
            self.offset_ns, self.error_ns = channel.measure_clock()
        except BaseException as error:
            self.fail(f"connecting to {endpoint} failed: {error}")  # close() sends nothing
            self.close()
            raise

    def channel(self) -> Channel:
        """The calling thread's channel; :class:`RemoteError` once the connection is
        closed or broken."""
        thread = threading.get_ident()
        channel = self.channels.get(thread)
        if channel is None:
            self.check()
            try:
                channel = self.channels[thread] = Channel(self)
            except zmq.ZMQError as error:  # closed by another thread meanwhile
                raise self.fail(f"cannot open a socket to {self.endpoint}: {error}") from None
        return channel

    def envelope(self, op: str) -> dict[str, Any]:
        """The envelope of a new request: protocol version, a fresh id, session, op."""
        return {"v": PROTOCOL_VERSION, "id": next(self.ids), "session": self.session, "op": op}

    def check(self) -> None:
        if self.broken is not None:
            raise self.broken

    def cancel(self) -> None:
        """Ask the server to stop this session's running kernel at its next check, and
        every later one at its start, until :meth:`resume`."""
        self._cancel_request("cancel")

    def resume(self) -> None:
        """Let this session's kernels run again after :meth:`cancel`."""
        self._cancel_request("resume")

    def _cancel_request(self, op: str) -> None:
        try:
            self.channel().call(op, timeout=min(self.timeout, CANCEL_REPLY_SECONDS))
        except RemoteError:
            pass  # the connection is closed or broken, which the next call reports
        except BaseException:  # interrupted: the server may or may not have the request
            self.resume_owed = True
            raise
        else:
            self.resume_owed = False

    def fail(self, message: str) -> RemoteError:
        """Mark the connection unusable; every later call raises the same error."""
        if self.broken is None:
            self.broken = RemoteError(message)
        return self.broken

    def malformed(self, what: str) -> RemoteError:
        return self.fail(
            f"the server at {self.endpoint} sent a malformed reply ({what}); is it a "
            f"luisa_nb server of this version? Create a new device to reconnect"
        )

    def expect(self, reply: dict[str, Any], name: str, kind: type) -> Any:
        """``reply[name]``, which must be of type ``kind`` exactly (a bool is no int)."""
        value = reply.get(name)
        if type(value) is not kind:
            raise self.malformed(f"{name} is {str(value)[:80]!r}, not {kind.__name__}")
        return value

    def close(self) -> None:
        """End the session (best effort) and release the sockets."""
        channels = list(self.channels.values())
        idle = not any(channel.busy for channel in channels)
        if self.broken is None and channels and idle:
            with contextlib.suppress(RemoteError):
                channels[0].call("close", timeout=1.0)
        self.fail(
            f"this remote device ({self.endpoint}) was closed; create a new one with "
            f"luisa_nb.create_device(...) to keep working"
        )
        self.channels.clear()
        if idle:  # else a thread still uses its socket (at exit): leave it to the OS
            self.context.destroy(linger=0)  # closes every socket of this connection


class Channel:
    """One thread's socket, its queue of unsent operations and its messages in flight."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.socket = socket = connection.context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.RCVTIMEO, WAIT_SLICE_MILLISECONDS)
        socket.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)  # nor does a server send more
        socket.plain_username = PLAIN_USER.encode()
        socket.plain_password = connection.token.encode()
        with contextlib.suppress(AttributeError, zmq.ZMQError):  # a draft option in libzmq
            socket.setsockopt(zmq.RECONNECT_STOP, zmq.RECONNECT_STOP_HANDSHAKE_FAILED)
        self.monitor = socket.get_monitor_socket(WATCHED_EVENTS)
        socket.connect(connection.endpoint)
        self.operations: list[list[Any]] = []
        self.payload = bytearray()
        self.entries: list[Entry] = []
        self.defined: list[tuple[int, str]] = []
        self.weight = 0
        self.in_flight: dict[int, tuple[list[Entry], list[tuple[int, str]]] | None] = {}
        self.replies: dict[int, dict[str, Any]] = {}
        self.group = 1
        self.failure: tuple[DeviceSpan, str, list[int | float] | None] | None = None
        self.kernels: set[str] = set()
        self.busy = False

    # -- queueing ----------------------------------------------------------------------

    def add(
        self,
        operation: list[Any],
        span: DeviceSpan,
        out: np.ndarray | None = None,
        data: np.ndarray | None = None,
        weight: int = 0,
        kernel: str | None = None,
    ) -> None:
        """Queue ``operation``; ``data`` its upload bytes (copied now, their place in the
        payload is its last field), ``out`` where its download lands, ``weight`` its bytes
        on the wire, ``kernel`` the key of the kernel whose definition it carries."""
        if self.failure is not None:
            self.kernels.discard(kernel)  # the flush will raise; the rest is skipped
            return
        if (
            self.operations
            and self.connection.broken is None
            and (
                len(self.operations) >= MAX_OPERATIONS
                or self.weight + weight > self.connection.chunk_bytes
            )
        ):
            with contextlib.suppress(RemoteError):  # flush names the first operation lost
                self.send()
        if data is not None:
            operation[-1] = len(self.payload)
            self.payload += memoryview(data)
        if kernel is not None:
            self.defined.append((len(self.operations), kernel))
        self.operations.append(operation)
        self.entries.append((span, out))
        self.weight += weight

    def needs_definition(self, key: str) -> bool:
        """Whether a dispatch of kernel ``key`` must carry its definition: on the first
        dispatch of each channel, and again if that one did not run."""
        if key in self.kernels:
            return False
        self.kernels.add(key)
        return True

    def send(self) -> None:
        """Send the queued operations as one batch (and any buffers to free)."""
        connection = self.connection
        if connection.resume_owed:
            connection.resume()
        released = connection.released
        frees = [released.popleft() for _ in range(len(released))]
        envelope = connection.envelope("batch")
        arguments = {"group": self.group, "ops": self.operations, "frees": frees}
        frames: list[Any] = [encode(envelope), encode(arguments)]
        if self.payload:
            frames.append(self.payload)  # sent without a copy: a new one takes its place
        request_id = envelope["id"]
        was_busy, self.busy = self.busy, True
        try:
            self._send(frames)
            self.in_flight[request_id] = (self.entries, self.defined)
            self.operations, self.entries, self.defined = [], [], []
            self.payload = bytearray()
            self.weight = 0
            while len(self.in_flight) > MAX_IN_FLIGHT:
                self.receive()
        finally:
            self.busy = was_busy

    def flush(self) -> None:
        """Send what is queued, wait for every reply, raise the first failure; if the
        server is lost, blame the first operation not known to have run."""
        self.busy = True
        try:
            self.connection.check()
            if self.operations:
                self.send()
            while self.in_flight:
                self.receive()
        except RemoteError as error:
            unfinished = self._first_unfinished()
            if unfinished is None:
                raise
            raise ServerLostError(unfinished, str(error)) from error
        finally:
            self.operations, self.entries, self.defined = [], [], []
            self.payload = bytearray()
            self.weight = 0
            self.in_flight.clear()
            self.busy = False
            failure, self.failure = self.failure, None
            self.group += 1
        if failure is not None:
            span, message, outcome = failure
            if outcome is not None:
                raise LaunchStopped(span, message, outcome)
            raise OperationFailed(span, message)

    def _first_unfinished(self) -> DeviceSpan | None:
        for pending in [*self.in_flight.values(), (self.entries, ())]:
            for span, _ in pending[0] if pending is not None else ():
                if span.finished is None:
                    return span
        return None

    # -- requests and replies ------------------------------------------------------------

    def call(self, op: str, timeout: float | None = None, **arguments: Any) -> dict[str, Any]:
        """One request outside batches (hello, clock, allocate, close, cancel, resume);
        its reply header."""
        connection = self.connection
        connection.check()
        envelope = connection.envelope(op)
        request_id = envelope["id"]
        was_busy, self.busy = self.busy, True
        try:
            self.in_flight[request_id] = None
            self._send([encode(envelope), encode(arguments)] if arguments else [encode(envelope)])
            while request_id not in self.replies:
                self.receive(timeout)
        finally:  # interrupted or not, a late reply finds nobody waiting and is dropped
            self.in_flight.pop(request_id, None)
            reply = self.replies.pop(request_id, None)
            self.busy = was_busy
        if not reply["ok"]:
            raise RemoteError(f"the server at {connection.endpoint} refused {op}: {reply['error']}")
        return reply

    def _send(self, frames: list[Any]) -> None:
        try:
            self.socket.send_multipart(frames, copy=False)
        except zmq.ZMQError as error:
            raise self.connection.fail(
                f"cannot send to the server at {self.connection.endpoint}: {error}; create a "
                f"new device"
            ) from None

    def measure_clock(self) -> tuple[int, int]:
        """``(offset_ns, error_ns)`` from the round trip with the smallest delay."""
        best = None
        for _ in range(CLOCK_ROUND_TRIPS):
            sent = time.perf_counter_ns()
            server_time = self.connection.expect(self.call("clock"), "time", int)
            received = time.perf_counter_ns()
            if best is None or received - sent < best[0]:
                best = (received - sent, server_time - (sent + received) // 2)
        return best[1], (best[0] + 1) // 2

    def receive(self, timeout: float | None = None) -> None:
        """Wait for the next reply to this channel and handle it."""
        connection = self.connection
        deadline = time.monotonic() + (connection.timeout if timeout is None else timeout)
        while True:
            try:
                frames = self.socket.recv_multipart(copy=False)
            except zmq.Again:
                self._check_alive(deadline, timeout)
                continue
            except zmq.ZMQError as error:
                raise connection.fail(
                    f"cannot receive from the server at {connection.endpoint}: {error}; "
                    f"create a new device"
                ) from None
            try:
                header = decode(frames[0].buffer)
            except ProtocolError as error:
                raise connection.malformed(str(error)) from None
            request_id = header.get("id")
            if type(request_id) is int and request_id in self.in_flight:
                break
            if header.get("ok") is False and request_id is None:
                raise connection.fail(
                    f"the server at {connection.endpoint} rejected a request: "
                    f"{str(header.get('error'))[:1000]}"
                )
            # anything else (a probe after some connection dropped) needs no answer
        # until the reply has landed, its operations count as not known to have run
        pending = self.in_flight[request_id]
        ok = header.get("ok")
        if ok is False:
            error = header.get("error")
            if type(error) is not str:
                raise connection.malformed(f"error is {str(error)[:80]!r}, not str")
            if header.get("ended") is True:
                raise connection.fail(
                    f"the server at {connection.endpoint} ended the session: {error}"
                )
        elif ok is not True:
            raise connection.malformed(f"ok is {str(ok)[:80]!r}, not a bool")
        if pending is None:
            self.replies[request_id] = header
        elif ok:
            self._land(header, frames[1:], *pending)
        else:  # the whole batch was refused: fail its first operation
            refused = {"done": 0, "failed": 0, "error": f"the server refused: {header['error']}"}
            self._land(refused, [], *pending)
        del self.in_flight[request_id]

    def _land(
        self,
        header: dict[str, Any],
        frames: list[zmq.Frame],
        entries: list[Entry],
        defined: list[tuple[int, str]],
    ) -> None:
        """Fill the spans of the operations done, write their downloads, and note the
        failure, once the reply is known to fit the batch it answers."""
        done = self._check_batch_reply(header, frames, entries)
        offset = self.connection.offset_ns
        times = array("q")
        if done:
            times.frombytes(frames[0].buffer)
        downloads = frames[1].buffer if len(frames) > 1 else memoryview(b"")
        position = 0
        for index in range(done):
            span, out = entries[index]
            if span.started is None:
                span.started = times[2 * index] - offset
            span.finished = times[2 * index + 1] - offset
            if out is not None:
                out[...] = np.frombuffer(downloads, np.uint8, out.nbytes, position)
                position += out.nbytes
        failed = header.get("failed")
        if failed is not None and self.failure is None:
            self.failure = (entries[failed][0], header["error"], header.get("launch"))
        for position, key in defined:
            if position >= done:
                self.kernels.discard(key)

    def _check_batch_reply(
        self, header: dict[str, Any], frames: list[zmq.Frame], entries: list[Entry]
    ) -> int:
        """The number of operations done, after checking that the reply has their times,
        the bytes of their downloads, and a failure inside the batch."""
        malformed = self.connection.malformed
        done = header.get("done")
        if type(done) is not int or not 0 <= done <= len(entries):
            raise malformed(f"done is {str(done)[:80]!r} for a batch of {len(entries)}")
        failed = header.get("failed")
        if failed is not None:
            if type(failed) is not int or not done <= failed < len(entries):
                raise malformed(f"failed is {str(failed)[:80]!r} after {done} done")
            if type(header.get("error")) is not str:
                raise malformed("a failed batch has no error text")
            launch = header.get("launch")
            if launch is not None and not _is_launch_outcome(launch):
                raise malformed(f"launch is {str(launch)[:80]!r}, not a launch outcome")
        if done and (not frames or len(frames[0]) != 16 * done):
            raise malformed(f"the times of {done} operations are not {16 * done} bytes")
        sizes = [out.nbytes for _, out in entries[:done] if out is not None]
        received = [len(frame) for frame in frames[1:]]
        if received != ([sum(sizes)] if sizes else []):
            raise malformed(f"download frames of {received[:4]} bytes, expected {sum(sizes)}")
        return done

    def _check_alive(self, deadline: float, timeout: float | None) -> None:
        connection = self.connection
        process = connection.process
        if process is not None and process.poll() is not None:
            raise connection.fail(
                f"the server at {connection.endpoint} (pid {process.pid}) exited with code "
                f"{process.returncode}; create a new device"
            )
        problem = self._connection_problem()
        if problem is not None:
            raise connection.fail(problem)
        if time.monotonic() > deadline:
            waited = connection.timeout if timeout is None else timeout
            raise connection.fail(
                f"the server at {connection.endpoint} stopped answering: no reply within "
                f"{waited:g} s; check that it runs, or pass a larger timeout= to create_device"
            )

    def _connection_problem(self) -> str | None:
        """What the socket's monitor says went wrong with the connection, if anything:
        a refused token, a failed handshake, or a drop (after which no reply can come:
        the server ends a session whose connection dropped)."""
        events = 0
        while self.monitor.poll(0):
            events |= recv_monitor_message(self.monitor)["event"]
        endpoint = self.connection.endpoint
        if events & zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            return (
                f"the server at {endpoint} refused the token (authentication failed); pass "
                f"the token that `luisa-nb serve` printed: create_device(..., token=...)"
            )
        if events & (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
            return (
                f"the connection to {endpoint} failed during its handshake; is a luisa_nb "
                f"server of this version listening there?"
            )
        if events & zmq.EVENT_DISCONNECTED:
            return (
                f"the connection to the server at {endpoint} dropped: the server exited, was "
                f"killed or restarted, and this session's buffers are gone with it; create a "
                f"new device"
            )
        return None


def _is_launch_outcome(value: Any) -> bool:
    try:
        LaunchRecord.from_outcome(value)
    except ValueError:
        return False
    return True
