"""The client side of the remote protocol: a connection, and one channel per thread.

Each thread that calls the backend (a stream's worker, or the user's thread for
``allocate``) gets its own DEALER socket, so no socket is shared between threads and
each thread waits only for its own replies. Operations are queued on the calling
thread's channel and sent as ``batch`` messages: when the queue holds ``MAX_OPERATIONS``
operations or ``chunk_bytes`` of data, and at ``flush``. A flush waits for every reply
of its thread, fills the spans, writes downloaded bytes, and raises
:class:`OperationFailed` for the first operation that failed.
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

from luisa_nb.backends.base import DeviceSpan, OperationFailed
from luisa_nb.errors import RemoteError
from luisa_nb.remote.protocol import PROTOCOL_VERSION, ProtocolError, decode, encode

MAX_OPERATIONS = 2048
MAX_CHUNK_BYTES = 32 << 20
MAX_IN_FLIGHT = 4
CLOCK_ROUND_TRIPS = 9
WAIT_SLICE_MILLISECONDS = 100

Entry = tuple[DeviceSpan, "np.ndarray | None"]


class ServerLostError(OperationFailed, RemoteError):
    """The server died or stopped answering; ``span`` is the first operation of the
    flush that is not known to have run (the runtime fails its command and skips the
    rest of the submission)."""


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
        self.ids = itertools.count(1)
        self.offset_ns = 0
        self.error_ns = 0
        self.chunk_bytes = MAX_CHUNK_BYTES
        try:
            channel = self.channel()
            self.hello = channel.call("hello")
            self.chunk_bytes = max(1, min(MAX_CHUNK_BYTES, self.hello["max_message_bytes"] // 2))
            self.offset_ns, self.error_ns = channel.measure_clock()
        except BaseException as error:
            self.fail(f"connecting to {endpoint} failed: {error}")  # close() sends nothing
            self.close()
            raise

    def channel(self) -> Channel:
        """The calling thread's channel."""
        thread = threading.get_ident()
        channel = self.channels.get(thread)
        if channel is None:
            channel = self.channels[thread] = Channel(self)
        return channel

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """The header of a new request: protocol version, a fresh id, token, session."""
        return {
            "v": PROTOCOL_VERSION,
            "id": next(self.ids),
            "token": self.token,
            "session": self.session,
            "op": op,
            **fields,
        }

    def check(self) -> None:
        if self.broken is not None:
            raise self.broken

    def fail(self, message: str) -> RemoteError:
        """Mark the connection unusable; every later call raises the same error."""
        if self.broken is None:
            self.broken = RemoteError(message)
        return self.broken

    def close(self) -> None:
        """End the session (best effort) and release the sockets."""
        channels = list(self.channels.values())
        idle = not any(channel.busy for channel in channels)
        if self.broken is None and channels and idle:
            with contextlib.suppress(RemoteError):
                channels[0].call("close", timeout=1.0)
        self.fail(f"the connection to {self.endpoint} is closed")
        self.channels.clear()
        if idle:  # else a thread still uses its socket (at exit): leave it to the OS
            self.context.destroy(linger=0)  # closes every socket of this connection


class Channel:
    """One thread's socket, its queue of unsent operations and its messages in flight."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.socket = connection.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVTIMEO, WAIT_SLICE_MILLISECONDS)
        self.socket.connect(connection.endpoint)
        self.operations: list[list[Any]] = []
        self.frames: list[bytes] = []
        self.entries: list[Entry] = []
        self.defined: list[tuple[int, str]] = []
        self.weight = 0
        self.in_flight: dict[int, tuple[list[Entry], list[tuple[int, str]]] | None] = {}
        self.replies: dict[int, dict[str, Any]] = {}
        self.group = 1
        self.failure: tuple[DeviceSpan, str] | None = None
        self.kernels: set[str] = set()
        self.busy = False

    # -- queueing ----------------------------------------------------------------------

    def add(
        self,
        operation: list[Any],
        span: DeviceSpan,
        out: np.ndarray | None = None,
        data: bytes | None = None,
        weight: int = 0,
        kernel: str | None = None,
    ) -> None:
        """Queue ``operation``; ``data`` is its upload frame, ``out`` where its download
        lands, ``weight`` its bytes on the wire, ``kernel`` the key of the kernel whose
        definition it carries."""
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
            operation[-1] = len(self.frames)
            self.frames.append(data)
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
        released = connection.released
        frees = [released.popleft() for _ in range(len(released))]
        header = connection.request("batch", group=self.group, ops=self.operations, frees=frees)
        request_id = header["id"]
        was_busy, self.busy = self.busy, True
        try:
            self.socket.send_multipart([encode(header), *self.frames], copy=False)
            self.in_flight[request_id] = (self.entries, self.defined)
            self.operations, self.frames, self.entries, self.defined = [], [], [], []
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
            self.operations, self.frames, self.entries, self.defined = [], [], [], []
            self.weight = 0
            self.in_flight.clear()
            self.busy = False
            failure, self.failure = self.failure, None
            self.group += 1
        if failure is not None:
            raise OperationFailed(*failure)

    def _first_unfinished(self) -> DeviceSpan | None:
        for pending in [*self.in_flight.values(), (self.entries, ())]:
            for span, _ in pending[0] if pending is not None else ():
                if span.finished is None:
                    return span
        return None

    # -- requests and replies ------------------------------------------------------------

    def call(self, op: str, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        """One request outside batches (hello, clock, allocate, close); its reply header."""
        connection = self.connection
        connection.check()
        header = connection.request(op, **fields)
        request_id = header["id"]
        self.busy = True
        try:
            self.socket.send(encode(header))
            self.in_flight[request_id] = None
            while request_id not in self.replies:
                self.receive(timeout)
        finally:
            self.busy = False
        reply = self.replies.pop(request_id)
        if not reply["ok"]:
            raise RemoteError(f"the server at {connection.endpoint} refused {op}: {reply['error']}")
        return reply

    def measure_clock(self) -> tuple[int, int]:
        """``(offset_ns, error_ns)`` from the round trip with the smallest delay."""
        best = None
        for _ in range(CLOCK_ROUND_TRIPS):
            sent = time.perf_counter_ns()
            server_time = self.call("clock")["time"]
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
                frames = None
            if frames is None:
                self._check_alive(deadline, timeout)
                continue
            try:
                header = decode(frames[0].buffer)
            except ProtocolError as error:
                raise connection.fail(f"the server at {connection.endpoint} sent {error}") from None
            request_id = header.get("id")
            if request_id in self.in_flight:
                break
            if not header.get("ok", True) and request_id is None:
                raise connection.fail(
                    f"the server at {connection.endpoint} rejected a request: {header.get('error')}"
                )
            # anything else (a probe after some connection dropped) needs no answer
        pending = self.in_flight.pop(request_id)
        if pending is None:
            self.replies[request_id] = header
            return
        if not header["ok"]:  # the whole batch was refused: fail its first operation
            header = {"done": 0, "failed": 0, "error": f"the server refused: {header['error']}"}
        self._land(header, frames[1:], *pending)

    def _land(
        self,
        header: dict[str, Any],
        frames: list[zmq.Frame],
        entries: list[Entry],
        defined: list[tuple[int, str]],
    ) -> None:
        done = header["done"]
        offset = self.connection.offset_ns
        times = array("q")
        if done:
            times.frombytes(frames[0].buffer)
        downloads = iter(frames[1:])
        for index in range(done):
            span, out = entries[index]
            if span.started is None:
                span.started = times[2 * index] - offset
            span.finished = times[2 * index + 1] - offset
            if out is not None:
                out[...] = np.frombuffer(next(downloads).buffer, np.uint8)
        failed = header.get("failed")
        if failed is not None and self.failure is None:
            self.failure = (entries[failed][0], header["error"])
        for position, key in defined:
            if position >= done:
                self.kernels.discard(key)

    def _check_alive(self, deadline: float, timeout: float | None) -> None:
        connection = self.connection
        process = connection.process
        if process is not None and process.poll() is not None:
            raise connection.fail(
                f"the server at {connection.endpoint} (pid {process.pid}) exited with code "
                f"{process.returncode}; create a new device"
            )
        if time.monotonic() > deadline:
            waited = connection.timeout if timeout is None else timeout
            raise connection.fail(
                f"the server at {connection.endpoint} stopped answering: no reply within "
                f"{waited:g} s; check that it runs, or pass a larger timeout= to create_device"
            )
