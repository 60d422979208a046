"""The client side of the remote protocol: a connection, and one channel per thread.

Each thread that calls the backend (a stream's worker, or the user's thread for
``allocate``) gets its own channel (:mod:`luisa_nb.remote.channel`) with sockets of its
own, so no socket is shared between threads and each thread waits only for its own
replies.

On the server's host, as the server's user, a connection goes *direct*: ``hello`` names
the session's window and its worker's Unix socket, and a client that can map the window
(and finds the nonce the server wrote there) sends ``allocate`` and ``batch`` to the
worker itself over that socket and moves bulk bytes through the window, so they cross no
relay and no ZeroMQ I/O thread.
Everything else still goes to the supervisor, which tells the connection if the worker
ends.

``cancel`` and ``resume`` (a Ctrl-C in ``synchronize()``) travel on the interrupted
thread's own socket while a stream's thread waits for the cancelled kernel's reply; the
server's supervisor answers them at once, however long the kernel runs. A request cut
short by an interrupt leaves nothing behind: its late reply is dropped, never taken for
a later one's.

Nothing the server sends is trusted: a reply that does not fit the request it answers
breaks the connection with a :class:`RemoteError`, as does a dropped connection, a
session the server ended, or a silence longer than the timeout. No call blocks longer
than that, and none raises a ZeroMQ exception; a window is used only if it is a file
of this user's in a private directory of a luisa_nb server's.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import subprocess
import threading
from collections import deque
from typing import Any

import numpy as np
import zmq

from luisa_nb.errors import RemoteError
from luisa_nb.remote import regions
from luisa_nb.remote.channel import Channel
from luisa_nb.remote.protocol import MAX_FRAME_BYTES, PROTOCOL_VERSION
from luisa_nb.remote.window import WindowParts, local_window

CLOCK_ROUND_TRIPS = 9
CANCEL_REPLY_SECONDS = 5.0
"""How long ``cancel`` and ``resume`` wait for the supervisor, which answers them at once
(a server that does not is lost)."""
HELLO_FIELDS = {
    "backend": str,
    "simulated": bool,
    "max_message_bytes": int,
    "pid": int,
    "worker_pid": int,
}
WINDOW_PARTS = 4
"""A direct connection splits the window in this many parts: batches in flight at once."""


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
        direct: bool = True,
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
        self.parts: WindowParts | None = None
        self.worker_path: str | None = None
        """The worker's Unix stream socket, on a direct connection."""
        self.regions: regions.ClientRegions | None = None
        """The readback regions shared with the worker, on a direct connection."""
        self.shares_buffers = False
        """Whether large buffers live in memory shared with the worker (a direct
        connection, on Linux, to a server whose device memory is host memory)."""
        try:
            channel = self.channel()
            self.hello = channel.call("hello")
            for name, kind in HELLO_FIELDS.items():
                self.expect(self.hello, name, kind)
            self.chunk_bytes = max(1, min(MAX_FRAME_BYTES, self.hello["max_message_bytes"]))
            if direct:
                self._go_direct(channel)
            self.offset_ns, self.error_ns = channel.measure_clock(CLOCK_ROUND_TRIPS)
        except BaseException as error:
            self.fail(f"connecting to {endpoint} failed: {error}")  # close() sends nothing
            self.close()
            raise

    @property
    def direct(self) -> bool:
        """Whether requests go to the session's worker and bytes through the window."""
        return self.parts is not None

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
            if self.worker_path is not None:
                # the supervisor learns this socket (it tells it if the worker ends)
                channel.call("clock")
                channel.go_direct(self.worker_path)
        return channel

    def _go_direct(self, channel: Channel) -> None:
        """Use the session's window and its worker's socket, if ``hello`` named them and
        they are this host's, this user's and the server's."""
        found = local_window(self.hello.get("local"))
        if found is None:
            return
        window, path = found
        part_bytes = min(self.chunk_bytes, window.nbytes // WINDOW_PARTS)
        if part_bytes < 1:
            return
        self.chunk_bytes = part_bytes
        self.parts = WindowParts(window, part_bytes)
        self.worker_path = path
        channel.go_direct(path)
        if regions.AVAILABLE:
            self.regions = regions.ClientRegions()
            self.shares_buffers = self.hello.get("shared_buffers") is True

    def shared_readback(self, nbytes: int) -> np.ndarray | None:
        """``nbytes`` of memory shared with the session's worker, which a ``readback``
        writes into, if this connection can share it (a direct one, on Linux, for at
        least :data:`~luisa_nb.remote.regions.SHARED_READBACK_BYTES`, below
        :data:`~luisa_nb.remote.regions.MAX_REGIONS` regions); else ``None``."""
        shared = self.regions
        if shared is None or nbytes < regions.SHARED_READBACK_BYTES or self.broken:
            return None
        identifier = shared.reserve()
        if identifier is None:
            return None
        try:
            region = regions.ClientRegion(identifier, nbytes)
        except OSError:  # out of memory or descriptors: the window still works
            shared.forget(identifier)
            return None
        try:
            self.channel().call(
                "share",
                descriptors=(region.descriptor,),
                region=identifier,
                nbytes=nbytes,
                unshare=shared.take_unshared(),
            )
        except RemoteError:  # refused (the worker says why in its log), or broken
            shared.forget(identifier)
            return None
        except BaseException:  # interrupted: the worker may have mapped it
            shared.let_go(identifier)
            raise
        finally:
            region.shared()
        return shared.add(region)

    def allocate_shared(self, nbytes: int) -> tuple[int, np.ndarray] | None:
        """A buffer of ``nbytes`` whose device memory is shared with the session's
        worker: its handle, and its bytes mapped here. ``None`` where this
        connection does not share buffers, for one under
        :data:`~luisa_nb.remote.regions.SHARED_BUFFER_BYTES` or over this host's memory,
        or when no memory could be made here or the worker refused it (the caller then
        allocates as before)."""
        if not self.shares_buffers or nbytes < regions.SHARED_BUFFER_BYTES or self.broken:
            return None
        if not regions.fits_in_memory(nbytes):
            return None
        try:
            descriptor, memory = regions.sealed_memory("luisa_nb-buffer", nbytes)
        except OSError:  # out of memory or descriptors
            return None
        try:
            reply = self.channel().call(
                "allocate", descriptors=(descriptor,), nbytes=nbytes, shared=True
            )
        except RemoteError:  # refused (the worker says why in its log), or broken
            self.check()
            return None
        finally:
            os.close(descriptor)
        return self.expect(reply, "handle", int), memory

    def envelope(self, op: str) -> tuple[int, bytes]:
        """A fresh request id, and the envelope of a request ``op`` with it: protocol
        version, id, session, op (written out: ``op`` and the session need no escaping,
        and a JSON encoder costs more than the rest of a small request)."""
        request_id = next(self.ids)
        text = f'{{"v":{PROTOCOL_VERSION},"id":{request_id},"session":"{self.session}",'
        return request_id, f'{text}"op":"{op}"}}'.encode()

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
            for channel in channels:
                channel.close()
            self.context.destroy(linger=0)  # closes every ZeroMQ socket of this connection
