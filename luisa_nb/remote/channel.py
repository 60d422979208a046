"""One thread's way to the server: its sockets, its queue of operations, its batches in
flight (see :mod:`luisa_nb.remote.client` for the connection they share).

Operations are queued and sent as ``batch`` messages: when the queue holds
``MAX_OPERATIONS`` operations or a chunk of data, and at ``flush``. A flush waits for
every reply of its thread, fills the spans, writes downloaded bytes, and raises
:class:`OperationFailed` for the first operation that failed.

Requests go to the server's supervisor over TCP; on the server's host (``direct``
connections) ``allocate`` and ``batch`` go to the session's worker over its Unix stream
socket instead (:mod:`luisa_nb.remote.stream`), and a batch's bytes cross the session's
shared window (see :mod:`luisa_nb.remote.window`): no relay, no I/O thread, no copy
through a socket. A reply is awaited on the socket it will come from; a notice from the
supervisor (the worker ended) is read while waiting for the worker.
"""

from __future__ import annotations

import contextlib
import select
import socket as sockets
import time
from array import array
from typing import TYPE_CHECKING, Any

import numpy as np
import zmq
from zmq.utils.monitor import recv_monitor_message

from luisa_nb.backends.base import DeviceSpan, OperationFailed, copy_bytes
from luisa_nb.errors import RemoteError
from luisa_nb.kernels.checks import LaunchRecord
from luisa_nb.remote.protocol import MAX_FRAME_BYTES, PLAIN_USER, ProtocolError, decode, encode
from luisa_nb.remote.stream import descriptor_message, message_pieces, receive_frames

if TYPE_CHECKING:
    from luisa_nb.remote.client import Connection

MAX_OPERATIONS = 2048
MAX_IN_FLIGHT = 4
WAIT_SLICE_MILLISECONDS = 100
NOTICE_SECONDS = 1.0
"""How long a direct connection whose worker closed its socket waits for the
supervisor's notice of why."""
CONNECT_RETRY_SECONDS = 0.002
"""How often a direct connection retries while the new worker has not bound its socket."""
WATCHED_EVENTS = (
    zmq.EVENT_DISCONNECTED
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
)
WORKER_REQUESTS = ("allocate", "batch", "share")

Entry = tuple[DeviceSpan, "np.ndarray | None"]
Failure = tuple[DeviceSpan, str, "list[int | float] | None"]
"""A failed operation's span, the server's error text and its launch outcome, if any."""
Batch = tuple[list[Entry], list[tuple[int, str]], "int | None", int]
"""A batch in flight: its operations' spans and download targets, the kernels whose
definitions it carries (position, key), and its window part (start, or ``None``: its
bytes travel in the messages) with the bytes of its uploads there."""


class LaunchStopped(OperationFailed):
    """A kernel launch on the server stopped early (a failed check); ``outcome`` is its
    launch record as :meth:`~luisa_nb.kernels.checks.LaunchRecord.outcome` numbers."""

    def __init__(self, span: DeviceSpan, message: str, outcome: list[int | float]) -> None:
        super().__init__(span, message)
        self.outcome = outcome


class ServerLostError(OperationFailed, RemoteError):
    """The connection broke during a flush (the server or the session's worker ended,
    the connection dropped, a reply did not fit its request, or none came in time);
    ``span`` is the first operation of the flush not known to have run (the runtime
    fails its command and skips the rest of the submission)."""


class Channel:
    """One thread's sockets, its queue of unsent operations and its batches in flight."""

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
        self.direct: sockets.socket | None = None
        self.direct_ready = select.poll()
        self.operations: list[list[Any]] = []
        self.payload = bytearray()
        self.part: int | None = None
        self.part_used = 0
        self.entries: list[Entry] = []
        self.defined: list[tuple[int, str]] = []
        self.weight = 0
        self.in_flight: dict[int, Batch | None] = {}
        self.replies: dict[int, dict[str, Any]] = {}
        self.group = 1
        self.failure: Failure | OperationFailed | None = None
        """The first failure of this flush, or one a flush raised early and deferred to the
        next (:meth:`defer`); operations queued meanwhile are skipped."""
        self.printed: list[tuple[int, bytes]] = []
        """The print logs of printing dispatches landed: (prints run, records)."""
        self.kernels: set[str] = set()
        self.busy = False

    def go_direct(self, path: str) -> None:
        """Send ``allocate`` and ``batch`` to the session's worker, at the Unix socket
        ``path`` (which a worker just started binds within milliseconds)."""
        connection = self.connection
        deadline = time.monotonic() + connection.timeout
        direct = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        while True:
            try:
                direct.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError) as error:
                if time.monotonic() > deadline:
                    direct.close()
                    raise connection.fail(f"cannot reach the session's worker: {error}") from None
            time.sleep(CONNECT_RETRY_SECONDS)
        direct.setblocking(False)  # waits only when nothing is there: see _send_direct
        self.direct = direct
        self.direct_ready.register(direct, select.POLLIN)

    def close(self) -> None:
        """Close the socket to the session's worker (the connection's context closes
        the others)."""
        if self.direct is not None:
            self.direct.close()

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
        if weight and not self.weight:
            self.part = self._take_part()
        if data is not None:
            if self.part is None:
                operation[-1] = len(self.payload)
                self.payload += memoryview(data)
            else:
                operation[-1] = used = self.part_used
                parts = self.connection.parts
                copy_bytes(parts.part(self.part)[used : used + data.nbytes], data)
                self.part_used = used + data.nbytes
        if kernel is not None:
            self.defined.append((len(self.operations), kernel))
        self.operations.append(operation)
        self.entries.append((span, out))
        self.weight += weight

    def _take_part(self) -> int | None:
        """A window part for the batch being queued, waiting for this thread's own
        batches to give one back if they hold any; ``None`` when there is none (no
        window, or other threads hold every part): its bytes travel in the messages."""
        parts = self.connection.parts
        if parts is None or self.connection.broken is not None:
            return None
        start = parts.take()
        while start is None and self._holds_parts():
            with contextlib.suppress(RemoteError):  # flush names the first operation lost
                self.receive()
            if self.connection.broken is not None:
                return None
            start = parts.take()
        return start

    def _holds_parts(self) -> bool:
        return any(batch is not None and batch[2] is not None for batch in self.in_flight.values())

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
        request_id, envelope = connection.envelope("batch")
        arguments: dict[str, Any] = {"group": self.group, "ops": self.operations, "frees": frees}
        regions = connection.regions
        if regions is not None and regions.unshared:
            arguments["unshare"] = regions.take_unshared()
        if self.part is not None:
            arguments["window"] = [self.part, self.part_used]
        frames: list[Any] = [envelope, encode(arguments)]
        if self.payload:
            frames.append(self.payload)  # sent without a copy: a new one takes its place
        was_busy, self.busy = self.busy, True
        try:
            self._send(frames, direct=True)
            self.in_flight[request_id] = (self.entries, self.defined, self.part, self.part_used)
            self.part = None  # the batch holds it now
            self._clear_queue()
            while len(self.in_flight) > MAX_IN_FLIGHT:
                self.receive()
        finally:
            self.busy = was_busy

    def _clear_queue(self) -> None:
        """Forget the queued operations (sent, or given up), giving back the window part
        of a batch never sent."""
        if self.part is not None:
            self.connection.parts.give_back(self.part)
        self.operations, self.entries, self.defined = [], [], []
        self.payload = bytearray()
        self.part, self.part_used = None, 0
        self.weight = 0

    def flush(self) -> None:
        """Send what is queued, wait for every reply, raise the first failure; if the
        server is lost, blame the first operation not known to have run."""
        self.busy = True
        try:
            if isinstance(self.failure, OperationFailed):
                raise self.failure
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
        except KeyboardInterrupt:
            self._stop_interrupted()
            raise
        finally:
            self._clear_queue()
            self.in_flight.clear()  # the parts of batches in flight are never reused
            self.busy = False
            failure, self.failure = self.failure, None
            self.group += 1
        if failure is not None:
            span, message, outcome = failure
            if outcome is not None:
                raise LaunchStopped(span, message, outcome)
            raise OperationFailed(span, message)

    def _stop_interrupted(self) -> None:
        """After Ctrl-C in a flush (on a thread that waited for its stream's work itself):
        cancel the session's kernels, take the replies of this thread's batches in flight
        (so none of them runs later, nor holds the worker), and let kernels run again."""
        connection = self.connection
        if not self.in_flight or connection.broken is not None:
            return
        connection.cancel()
        try:
            while self.in_flight:
                self.receive()
        except RemoteError:
            pass  # the next call reports the broken connection
        finally:
            connection.resume()

    def defer(self, failure: OperationFailed) -> None:
        """Raise ``failure`` (which a flush raised) at the next flush, skipping what is
        queued until then, as if that flush had found it."""
        self.failure = failure

    def take_printed(self) -> list[tuple[int, bytes]]:
        printed, self.printed = self.printed, []
        return printed

    def _first_unfinished(self) -> DeviceSpan | None:
        for pending in [*self.in_flight.values(), (self.entries,)]:
            for span, _ in pending[0] if pending is not None else ():
                if span.finished is None:
                    return span
        return None

    # -- requests and replies ------------------------------------------------------------

    def call(
        self,
        op: str,
        timeout: float | None = None,
        descriptors: tuple[int, ...] = (),
        **arguments: Any,
    ) -> dict[str, Any]:
        """One request outside batches (hello, clock, allocate, share, close, cancel,
        resume), with ``descriptors`` for the worker (``share``); its reply header."""
        connection = self.connection
        connection.check()
        request_id, envelope = connection.envelope(op)
        was_busy, self.busy = self.busy, True
        try:
            self.in_flight[request_id] = None
            frames = [envelope, encode(arguments)] if arguments else [envelope]
            self._send(frames, op in WORKER_REQUESTS, descriptors)
            while request_id not in self.replies:
                self.receive(timeout, direct=op in WORKER_REQUESTS)
        finally:  # interrupted or not, a late reply finds nobody waiting and is dropped
            self.in_flight.pop(request_id, None)
            reply = self.replies.pop(request_id, None)
            self.busy = was_busy
        if not reply["ok"]:
            raise RemoteError(f"the server at {connection.endpoint} refused {op}: {reply['error']}")
        return reply

    def _send(
        self, frames: list[Any], direct: bool = False, descriptors: tuple[int, ...] = ()
    ) -> None:
        """Send a request: to the session's worker if ``direct`` and this channel can,
        else to the supervisor; ``descriptors`` (file descriptors) go with it to the
        worker (``SCM_RIGHTS``)."""
        if direct and self.direct is not None:
            self._send_direct(frames, descriptors)
            return
        try:
            self.socket.send_multipart(frames, copy=False)
        except zmq.ZMQError as error:
            raise self.connection.fail(
                f"cannot send to the server at {self.connection.endpoint}: {error}; create a "
                f"new device"
            ) from None

    def _send_direct(self, frames: list[Any], descriptors: tuple[int, ...] = ()) -> None:
        """Send a request to the worker's stream, taking the replies that come meanwhile:
        the worker writes a reply before it reads the next request, so a client that
        only wrote would wait for a worker waiting for it, once both ways are full.
        ``descriptors`` travel with the request's first bytes."""
        pieces = message_pieces(frames)
        ready, direct = self.direct_ready, self.direct
        deadline = time.monotonic() + self.connection.timeout
        ancillary = descriptor_message(descriptors)
        try:
            while pieces:
                try:
                    sent = direct.sendmsg(pieces, ancillary)
                except BlockingIOError:
                    sent = 0
                if sent:
                    ancillary = []
                    while sent >= pieces[0].nbytes:
                        sent -= pieces.pop(0).nbytes
                        if not pieces:
                            return
                    pieces[0] = pieces[0][sent:]
                    continue
                ready.modify(direct, select.POLLIN | select.POLLOUT)
                try:
                    events = ready.poll(WAIT_SLICE_MILLISECONDS)
                finally:
                    ready.modify(direct, select.POLLIN)
                if any(event & select.POLLIN for _, event in events) and self.in_flight:
                    self.receive()
                elif not events:
                    self._read_notices()
                    self._check_alive(deadline, None)
        except OSError as error:
            pieces.clear()  # views of the payload, which the queue still holds
            raise self._worker_lost(error) from None

    def measure_clock(self, round_trips: int) -> tuple[int, int]:
        """``(offset_ns, error_ns)`` from the round trip with the smallest delay."""
        best = None
        for _ in range(round_trips):
            sent = time.perf_counter_ns()
            server_time = self.connection.expect(self.call("clock"), "time", int)
            received = time.perf_counter_ns()
            if best is None or received - sent < best[0]:
                best = (received - sent, server_time - (sent + received) // 2)
        return best[1], (best[0] + 1) // 2

    def receive(self, timeout: float | None = None, direct: bool = True) -> None:
        """Wait for the next reply to this channel and handle it: a batch's or
        ``allocate``'s if ``direct`` (from the session's worker, on a direct connection),
        else a request's to the supervisor."""
        connection = self.connection
        deadline = time.monotonic() + (connection.timeout if timeout is None else timeout)
        socket = self.direct if direct and self.direct is not None else self.socket
        while True:
            frames = self._next_message(socket, deadline, timeout)
            header = self._header(frames)
            request_id = header.get("id")
            if type(request_id) is int and request_id in self.in_flight:
                break
            self._unasked(header)
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

    def _header(self, frames: list[memoryview]) -> dict[str, Any]:
        try:
            return decode(frames[0])
        except ProtocolError as error:
            raise self.connection.malformed(str(error)) from None

    def _unasked(self, header: dict[str, Any]) -> None:
        """Handle a message that answers nothing this channel waits for: a notice that
        the session ended or that a request was rejected breaks the connection; anything
        else (a probe, a late reply to an interrupted request) needs no answer."""
        if header.get("ok") is False and header.get("id") is None:
            error = str(header.get("error"))[:1000]
            endpoint = self.connection.endpoint
            if header.get("ended") is True:
                raise self.connection.fail(f"the server at {endpoint} ended the session: {error}")
            raise self.connection.fail(f"the server at {endpoint} rejected a request: {error}")

    def _next_message(
        self, socket: zmq.Socket | sockets.socket, deadline: float, timeout: float | None
    ) -> list[memoryview]:
        """The next message on ``socket``, waiting at most until ``deadline``; while it
        waits for the worker, notices from the supervisor are read too."""
        while True:
            if socket is self.socket:
                try:
                    return [frame.buffer for frame in socket.recv_multipart(copy=False)]
                except zmq.Again:
                    pass
                except zmq.ZMQError as error:
                    raise self.connection.fail(
                        f"cannot receive from the server at {self.connection.endpoint}: "
                        f"{error}; create a new device"
                    ) from None
            else:
                if self.direct_ready.poll(WAIT_SLICE_MILLISECONDS):
                    return self._receive_direct(deadline, timeout)
                self._read_notices()
            self._check_alive(deadline, timeout)

    def _receive_direct(self, deadline: float, timeout: float | None) -> list[memoryview]:
        """The message waiting on the worker's socket. If the worker closed it, the
        supervisor's notice says why (it comes within moments); without one, the
        connection fails all the same."""
        try:
            return receive_frames(self.direct, MAX_FRAME_BYTES, self.connection.timeout)
        except ProtocolError as error:
            raise self.connection.malformed(str(error)) from None
        except OSError as error:
            raise self._worker_lost(error, deadline, timeout) from None

    def _worker_lost(
        self, error: OSError, deadline: float | None = None, timeout: float | None = None
    ) -> RemoteError:
        """The error of a direct connection whose worker socket failed with ``error``:
        the supervisor's notice of why the worker ended, which comes within moments, or
        else a plain one."""
        connection = self.connection
        if isinstance(error, TimeoutError):
            return connection.fail(
                f"the server at {connection.endpoint} stopped answering: its worker took "
                f"nothing and sent nothing within {connection.timeout:g} s; check that it "
                f"runs, or pass a larger timeout= to create_device"
            )
        now = time.monotonic()
        wait_until = min(
            now + connection.timeout if deadline is None else deadline, now + NOTICE_SECONDS
        )
        while time.monotonic() < wait_until:
            with contextlib.suppress(zmq.Again, zmq.ZMQError):
                self._unasked(self._header(self._notice()))
            self._check_alive(wait_until + 1, timeout)
        how = "closed" if isinstance(error, ConnectionError) else f"broken ({error})"
        return connection.fail(
            f"the connection to the session's worker on {connection.endpoint} was {how}: "
            f"the worker ended, and this session's buffers are gone with it; create a new "
            f"device"
        )

    def _notice(self) -> list[memoryview]:
        """The supervisor's next message, waiting one slice at most."""
        return [frame.buffer for frame in self.socket.recv_multipart(copy=False)]

    def _read_notices(self) -> None:
        """What the supervisor sent meanwhile (it says so when the worker ends)."""
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            except zmq.ZMQError:
                return  # the next wait reports a broken socket
            self._unasked(self._header([frame.buffer for frame in frames]))

    def _land(
        self,
        header: dict[str, Any],
        frames: list[memoryview],
        entries: list[Entry],
        defined: list[tuple[int, str]],
        part: int | None,
        uploaded: int,
    ) -> None:
        """Fill the spans of the operations done, write their downloads, and note the
        failure, once the reply is known to fit the batch it answers; then give back the
        batch's window part."""
        done = self._check_batch_reply(header, frames, entries, part is not None)
        offset = self.connection.offset_ns
        times = array("q")
        if done:
            times.frombytes(frames[0])
        if part is None:
            downloads = np.frombuffer(frames[1] if len(frames) > 1 else b"", np.uint8)
            position = 0
        else:
            downloads, position = self.connection.parts.part(part), uploaded
        for index in range(done):
            span, out = entries[index]
            if span.started is None:
                span.started = times[2 * index] - offset
            span.finished = times[2 * index + 1] - offset
            if out is not None:
                copy_bytes(out, downloads[position : position + out.nbytes])
                position += out.nbytes
        if part is not None:
            self.connection.parts.give_back(part)
        if "printed" in header:
            self._take_print_logs(header["printed"])
        failed = header.get("failed")
        if failed is not None and self.failure is None:
            self.failure = (entries[failed][0], header["error"], header.get("launch"))
        for position, key in defined:
            if position >= done:
                self.kernels.discard(key)

    def _take_print_logs(self, logs: Any) -> None:
        """Keep the print logs of a reply: a list of ``[count, records as hex]``."""
        if type(logs) is not list:
            raise self.connection.malformed("printed is not a list")
        for log in logs:
            if type(log) is not list or len(log) != 2 or type(log[0]) is not int:
                raise self.connection.malformed(f"a print log is {str(log)[:80]!r}")
            try:
                records = bytes.fromhex(log[1])
            except (TypeError, ValueError):
                raise self.connection.malformed("a print log's records are not hex") from None
            self.printed.append((log[0], records))

    def _check_batch_reply(
        self, header: dict[str, Any], frames: list[memoryview], entries: list[Entry], windowed: bool
    ) -> int:
        """The number of operations done, after checking that the reply has their times,
        the bytes of their downloads (unless they are in the window), and a failure
        inside the batch."""
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
        if received != ([sum(sizes)] if sizes and not windowed else []):
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
