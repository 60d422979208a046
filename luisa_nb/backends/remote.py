"""The remote backend: a device served by another process, over ZeroMQ (pyzmq).

``create_device("remote")`` starts a server process on 127.0.0.1 for this device;
``create_device("remote://HOST:PORT", token=...)`` connects to one started with
``luisa-nb serve``. Like LuisaCompute's remote backend it stages at submission: the
default staging policy is ``"submit"``, and upload bytes travel with the commands.

Operations return at once and run when the calling thread's queue is sent (in batches,
and at ``flush()``, which the runtime calls at the end of each submission). Downloads
land when their reply arrives (``readback = "fence"``); under ``staging="execute"`` the
runtime flushes before any later upload of the submission, so stream order holds.
Times the server measured are mapped onto this host's clock (offset measured at
connect) and land in each command's ``device_started``/``device_finished``. Ctrl-C in
``synchronize()`` cancels the kernel running on the server, as on a local backend.
See ``docs/remote.md``.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from luisa_nb.backends.base import (
    Allocation,
    Backend,
    DeviceSpan,
    DispatchSpan,
    KernelBuffer,
    OperationFailed,
)
from luisa_nb.errors import ConfigurationError, RemoteError
from luisa_nb.kernels.c.device_print import PrintLog, record_width
from luisa_nb.kernels.c.emitter import c_identifier
from luisa_nb.kernels.checks import LaunchRecord
from luisa_nb.kernels.lang.aggregates import alignment_of, to_bytes
from luisa_nb.kernels.lang.device_print import current_collector, deliver
from luisa_nb.kernels.type_system import BufferType
from luisa_nb.remote.channel import Channel, LaunchStopped
from luisa_nb.remote.client import Connection
from luisa_nb.remote.launcher import LocalServer
from luisa_nb.remote.layouts import describe_dtype, describe_scalar
from luisa_nb.remote.protocol import MAX_PRINT_BYTES, kernel_key
from luisa_nb.remote.regions import SHARED_BUFFER_BYTES

DEFAULT_TIMEOUT = 60.0


class RemoteAllocation(Allocation):
    """A buffer on the server, by handle; freed with the next batch once collected.
    ``mapped``: its device memory, where it is shared with the worker."""

    __slots__ = ("handle", "mapped", "nbytes", "released")

    def __init__(
        self,
        handle: int,
        nbytes: int,
        released: deque[int],
        mapped: np.ndarray | None = None,
    ) -> None:
        self.handle = handle
        self.nbytes = nbytes
        self.released = released
        self.mapped = mapped

    def __del__(self) -> None:
        self.released.append(self.handle)


class RemoteBackend(Backend):
    name = "remote"
    default_staging = "submit"
    readback = "fence"
    stops_flush_at_failure = True  # the worker skips the rest of a flush's batches
    runs_elsewhere = True
    description = "a device served by another process over ZeroMQ; bytes travel with commands"

    def __init__(
        self,
        address: str | None = None,
        token: str | None = None,
        backend: str = "cpu",
        timeout: float = DEFAULT_TIMEOUT,
        direct: bool = True,
    ) -> None:
        server = None
        if address is None:
            server = LocalServer(backend, timeout)
            endpoint, token = server.endpoint, server.token
        else:
            if not token:
                raise ConfigurationError(
                    f"remote://{address} needs token=...: the token `luisa-nb serve` printed"
                )
            endpoint = address if address.startswith("tcp://") else f"tcp://{address}"
        try:
            self._connection = Connection(
                endpoint, token, timeout, server.process if server else None, direct
            )
        except BaseException:
            if server is not None:
                server.stop()
            raise
        self._server = server
        self._kernels: weakref.WeakKeyDictionary[Any, ServedDefinition] = (
            weakref.WeakKeyDictionary()
        )
        self.address = endpoint
        self._finalizer = weakref.finalize(self, _shut_down, self._connection, server)

    @property
    def label(self) -> str:
        """``remote:HOST:PORT``: two remote devices in one trace are two devices."""
        return f"remote:{self.address.removeprefix('tcp://')}"

    def close(self) -> None:
        """End the session and stop the server this backend started (if it did)."""
        self._finalizer()

    def cancel(self) -> None:
        """Stop the server's running kernel at its next check, and later ones at their
        start, until ``resume()``. Sent on the calling thread's own socket, and answered
        at once by the server's supervisor, however long the kernel runs."""
        self._connection.cancel()

    def resume(self) -> None:
        self._connection.resume()

    def info(self) -> dict[str, Any]:
        connection = self._connection
        return {
            **super().info(),
            "address": self.address,
            "server_backend": connection.hello["backend"],
            "server_simulated": connection.hello["simulated"],
            "server_pid": connection.hello["pid"],
            "server_worker_pid": connection.hello["worker_pid"],
            "started_server": self._server is not None,
            "direct": connection.direct,
            "max_message_bytes": connection.hello["max_message_bytes"],
            "clock_offset_ns": connection.offset_ns,
            "clock_error_ns": connection.error_ns,
        }

    # -- operations ------------------------------------------------------------------------

    def allocate(self, nbytes: int) -> RemoteAllocation:
        connection = self._connection
        shared = connection.allocate_shared(nbytes)
        if shared is not None:
            handle, mapped = shared
            return RemoteAllocation(handle, nbytes, connection.released, mapped)
        reply = connection.channel().call("allocate", nbytes=nbytes)
        return RemoteAllocation(
            connection.expect(reply, "handle", int), nbytes, connection.released
        )

    def upload(self, allocation: RemoteAllocation, offset: int, data: np.ndarray) -> DeviceSpan:
        span = DeviceSpan()
        channel = self._connection.channel()
        data = data.reshape(-1).view(np.uint8)
        for start, stop in self._chunks(data.nbytes):
            operation = ["upload", allocation.handle, offset + start, stop - start, 0]
            channel.add(operation, span, data=data[start:stop], weight=stop - start)
        return span

    def readback_memory(self, nbytes: int) -> np.ndarray:
        """Large readbacks of a direct connection are memory shared with the session's
        worker, which writes downloads straight into it (see ``docs/remote.md``)."""
        shared = self._connection.shared_readback(nbytes)
        return np.empty(nbytes, np.uint8) if shared is None else shared

    def download(self, allocation: RemoteAllocation, offset: int, out: np.ndarray) -> DeviceSpan:
        span = DeviceSpan()
        connection = self._connection
        channel = connection.channel()
        out = out.reshape(-1).view(np.uint8)
        found = connection.regions.find(out) if connection.regions else None
        if found is not None:
            region, region_offset = found
            operation = ["readback", allocation.handle, offset, out.nbytes, region, region_offset]
            channel.add(operation, span)
            return span
        for start, stop in self._chunks(out.nbytes):
            operation = ["download", allocation.handle, offset + start, stop - start]
            channel.add(operation, span, out[start:stop], weight=stop - start)
        return span

    def mapped_bytes(
        self, allocation: RemoteAllocation, offset: int, nbytes: int
    ) -> np.ndarray | None:
        """A large download or upload of a buffer shared with the worker is a copy from
        or into this process's mapping of it (see ``docs/remote.md``)."""
        mapped = allocation.mapped
        if mapped is None or nbytes < SHARED_BUFFER_BYTES:
            return None
        return mapped[offset : offset + nbytes]

    def copy(
        self,
        source: RemoteAllocation,
        source_offset: int,
        target: RemoteAllocation,
        target_offset: int,
        nbytes: int,
    ) -> DeviceSpan:
        span = DeviceSpan()
        operation = ["copy", source.handle, source_offset, target.handle, target_offset, nbytes]
        self._connection.channel().add(operation, span)
        return span

    def fill(
        self, allocation: RemoteAllocation, offset: int, nbytes: int, element: np.ndarray
    ) -> DeviceSpan:
        span = DeviceSpan()
        element_hex = element.tobytes().hex()
        dtype = describe_dtype(element.dtype)
        operation = ["fill", allocation.handle, offset, nbytes, dtype, element_hex]
        self._connection.channel().add(operation, span)
        return span

    def dispatch(
        self,
        executable: Any,
        dims: tuple[int, int, int],
        buffers: Sequence[KernelBuffer],
        scalars: Sequence[Any],
    ) -> DeviceSpan:
        known = self._kernels.get(executable)
        if known is None:
            known = self._kernels[executable] = ServedDefinition(executable)
        key, definition = known.key, known.definition
        channel = self._connection.channel()
        carried = definition if channel.needs_definition(key) else None
        operation = [
            "dispatch",
            key,
            list(dims),
            [[b.allocation.handle, b.offset, b.nbytes] for b in buffers],
            known.scalar_values(scalars),
            carried,
        ]
        span = DispatchSpan(executable, dims, scalars)
        if getattr(executable, "prints", None):
            self._printing_dispatch(channel, operation, span, key if carried is not None else None)
            return span
        channel.add(operation, span, kernel=key if carried is not None else None)
        return span

    def _printing_dispatch(
        self, channel: Channel, operation: list[Any], span: DispatchSpan, carried: str | None
    ) -> None:
        """Run a dispatch of a kernel with device prints now (a flush of its own, as a
        local backend runs one such launch at a time) and hand its lines to this
        thread's collector, as a local launch does, failed or not. The collector's limit
        bounds the server's log (and :data:`MAX_PRINT_BYTES`); what did not fit counts
        as dropped. A failure is raised by the next flush, which names its command."""
        executable = span.executable
        collector = current_collector()
        width = record_width(executable.prints)
        room = max(collector.limit - len(collector.lines), 0)
        capacity = min(room, MAX_PRINT_BYTES // (8 * width))
        operation[0] = "dispatch_printing"
        operation.append([width, capacity])
        channel.add(operation, span, kernel=carried)
        try:
            channel.flush()
        except OperationFailed as failure:
            channel.defer(failure)
        finally:
            for count, records in channel.take_printed():
                log = PrintLog(executable.prints, capacity)
                kept = log.records[: len(records) // (8 * width)]
                if kept.nbytes != len(records) or count < len(kept):
                    raise self._connection.malformed(
                        f"a print log of {len(records)} bytes for {count} prints"
                    )
                kept.reshape(-1).view(np.uint8)[:] = np.frombuffer(records, np.uint8)
                log.struct.count = count
                log.collect(collector)
            deliver(collector)

    def check_executable(self, executable: Any) -> None:
        if executable.mode != "c":
            raise ConfigurationError(
                f"kernel {executable.name!r} runs in {executable.mode!r} mode; the remote "
                f"backend runs compiled C only: declare it with @kernel(mode='c') (and make "
                f"sure a C compiler exists here: set CC or put `cc` on PATH)"
            )

    def flush(self) -> None:
        try:
            self._connection.channel().flush()
        except LaunchStopped as stopped:
            span = stopped.span
            if not isinstance(span, DispatchSpan):
                raise
            cause = span.executable.failure(
                LaunchRecord.from_outcome(stopped.outcome), span.dims, span.scalars
            )
            raise OperationFailed(span, str(cause), cause) from None

    def _chunks(self, nbytes: int) -> Sequence[tuple[int, int]]:
        """Byte ranges of at most one chunk each, so no message exceeds the server's limit."""
        step = self._connection.chunk_bytes
        if nbytes <= step:
            return ((0, nbytes),)
        return [(start, min(start + step, nbytes)) for start in range(0, nbytes, step)]


class ServedDefinition:
    """What the server needs to build and launch a compiled-C executable: its C source,
    its buffers' dtypes and its scalars' layout (see :mod:`luisa_nb.remote.layouts`),
    named by their hash ``key``."""

    __slots__ = ("by_value", "definition", "key")

    def __init__(self, executable: Any) -> None:
        self.by_value = {
            position: BufferType.of_dtype(parameter.dtype).element
            for position, parameter in enumerate(executable.scalar_parameters)
            if parameter.dtype.fields is not None
        }
        """The positions of vector, matrix, struct and array arguments, with their types."""
        scalars = [
            describe_scalar(parameter.dtype, _alignment(self.by_value.get(position)))
            for position, parameter in enumerate(executable.scalar_parameters)
        ]
        self.definition = {
            "name": f"lnb_{c_identifier(executable.name)}",
            "source": executable.source,
            "buffers": [describe_dtype(p.dtype) for p in executable.buffer_parameters],
            "scalars": scalars,
        }
        self.key = kernel_key(self.definition)

    def scalar_values(self, scalars: Sequence[Any]) -> list[Any]:
        """The scalars as JSON: numbers, and the hex of the bytes of by-value composites."""
        by_value = self.by_value
        values = []
        for position, value in enumerate(scalars):
            kind = by_value.get(position) if by_value else None
            if kind is not None:
                values.append(to_bytes(kind, value).hex())
            else:
                values.append(value.item() if isinstance(value, np.generic) else value)
        return values


def _alignment(kind: Any) -> int | None:
    return None if kind is None else alignment_of(kind)


def _shut_down(connection: Connection, server: LocalServer | None) -> None:
    try:
        connection.close()
    except (RemoteError, OSError):
        pass
    finally:
        if server is not None:
            server.stop()


backend_class = RemoteBackend
