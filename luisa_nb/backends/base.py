"""The interface every backend fills in: device memory and the commands that touch it.

A backend is small. It allocates device memory, copies bytes between host arrays and
device memory, and runs compiled kernels. It does not decide *when* host memory is
read: that is the staging policy, shared by every backend in ``luisa_nb.runtime``.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np

SMALL_COPY_BYTES = 64 * 1024
"""Host copies up to this size are made with the GIL held. numpy lets other threads run
during any copy of more than a few hundred bytes, and handing the GIL to another thread
and back costs more than copying a few KiB (it doubled the time of a loop of 4 KiB
``copy_from`` calls); a larger copy lets the other thread run meanwhile."""

CACHE_LINE = 64


def aligned_empty(nbytes: int) -> np.ndarray:
    """``nbytes`` of uninitialized memory as a 1-D uint8 array starting on a cache line."""
    raw = np.empty(nbytes + CACHE_LINE, np.uint8)
    start = -raw.ctypes.data % CACHE_LINE
    return raw[start : start + nbytes]


def aligned_zeros(nbytes: int) -> np.ndarray:
    """``nbytes`` zero bytes as a 1-D uint8 array starting on a cache line.

    ``np.zeros`` asks the allocator for zeroed memory (``calloc``): a large block comes
    as fresh pages the OS zeroes as they are first touched, so it costs what
    :func:`aligned_empty` costs (``benchmarks/bench_allocation.py``)."""
    raw = np.zeros(nbytes + CACHE_LINE, np.uint8)
    start = -raw.ctypes.data % CACHE_LINE
    return raw[start : start + nbytes]


def copy_bytes(target: np.ndarray | memoryview, source: np.ndarray | memoryview) -> None:
    """Copy the bytes of ``source`` into ``target`` (both flat, of one length), holding
    the GIL up to :data:`SMALL_COPY_BYTES`."""
    if source.nbytes <= SMALL_COPY_BYTES:
        memoryview(target)[:] = source
    else:
        np.copyto(np.asarray(target), np.asarray(source))


class SnapshotArena:
    """Host memory for uploads read at ``submit()``: consecutive slices of blocks of
    :attr:`BLOCK_BYTES`, each starting on a cache line. A block is freed with the last
    slice of it; a request of more than an eighth of a block gets memory of its own.

    A new array per upload is memory the OS maps page by page as the copy first touches
    it (the worker frees it only after the user's thread has run far ahead): that cost a
    third of a loop of 4 KiB uploads. numpy asks for huge pages for a block this large."""

    BLOCK_BYTES = 8 << 20

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._block: np.ndarray | None = None
        self._used = 0

    def take(self, nbytes: int) -> np.ndarray:
        """``nbytes`` of memory as a 1-D uint8 array."""
        if nbytes > self.BLOCK_BYTES // 8:
            return np.empty(nbytes, np.uint8)
        with self._lock:
            start, block = self._used, self._block
            if block is None or start + nbytes > block.nbytes:
                block = self._block = aligned_empty(self.BLOCK_BYTES)
                start = 0
            self._used = start + -(-nbytes // CACHE_LINE) * CACHE_LINE
            return block[start : start + nbytes]


SNAPSHOTS = SnapshotArena()
"""The process's snapshot memory (shared by every backend that has none of its own)."""


class Times(Protocol):
    """Where a traced run's times go (the recorder's log of one value per row)."""

    def append(self, time: int) -> None: ...

    def frombytes(self, data: bytes | memoryview) -> None:
        """Append times given as native int64 values."""


class Allocation(ABC):
    """Device memory of one buffer; released when garbage-collected."""

    nbytes: int


class DeviceSpan:
    """When the device ran one operation, on the host clock (ns); a backend that runs
    operations later than it is called returns one and fills it in by ``flush()``."""

    __slots__ = ("finished", "started")

    def __init__(self, started: int | None = None, finished: int | None = None) -> None:
        self.started = started
        self.finished = finished


class DispatchSpan(DeviceSpan):
    """The span of a dispatch, with what explains a launch that failed on the device: the
    executable, the dispatch size and the scalar arguments."""

    __slots__ = ("dims", "executable", "scalars")

    def __init__(self, executable: Any, dims: tuple[int, int, int], scalars: Any) -> None:
        super().__init__()
        self.executable = executable
        self.dims = dims
        self.scalars = scalars


class OperationFailed(Exception):
    """Raised by ``flush()`` when an operation that was deferred failed on the device;
    ``span`` is the one its call returned, so the runtime can name the command.
    ``cause``, when known, is the error the operation would have raised if run here."""

    def __init__(self, span: DeviceSpan, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.span = span
        self.cause = cause


class KernelBuffer(NamedTuple):
    """One buffer argument of a dispatch: ``nbytes`` bytes at ``offset`` of ``allocation``."""

    allocation: Allocation
    offset: int
    nbytes: int
    dtype: np.dtype


class Backend(ABC):
    """Base class of backends. Subclasses set ``name`` and fill in the abstract hooks."""

    name: ClassVar[str]
    default_staging: ClassVar[str] = "execute"
    is_simulated: ClassVar[bool] = False
    """Whether the backend simulates another on the CPU (``dx``, ``metal``)."""
    description: ClassVar[str] = ""
    readback: ClassVar[str] = "execute"
    """When downloads write host memory: ``"execute"`` (as the download runs) or
    ``"fence"`` (once its submission has finished, like a readback after a fence)."""
    staging_capacity: int | None = None
    """Bytes of upload staging memory; ``None`` means unbounded."""
    stops_flush_at_failure: ClassVar[bool] = False
    """Whether an operation that fails stops every operation called after it until the
    next ``flush()``, so that none of them runs (``remote``). Then the runs queued behind
    one another may share a flush: those behind a failed run have not run, and run again."""
    runs_elsewhere: ClassVar[bool] = False
    """Whether operations run in another process, the calling thread only sending them
    and waiting for the replies (``remote``). A thread waiting for a stream may then run
    its work itself, as it does prepared launches: a dispatch counts as quick when the
    device time its span reports was (see :mod:`luisa_nb.runtime.execution`)."""
    max_allocation_bytes: ClassVar[int] = 1 << 48
    """The most bytes one allocation may have (what 48-bit addresses reach; the remote
    protocol's limit too). The runtime refuses a larger buffer before ``allocate``."""
    device_memory_is_host: ClassVar[bool] = False
    """Whether device memory is host memory, so that :meth:`allocate_in` can place a
    buffer in memory the caller gives (memory shared with another process)."""

    @abstractmethod
    def allocate(self, nbytes: int) -> Allocation:
        """``nbytes`` (at most :attr:`max_allocation_bytes`) of device memory; raises
        ``MemoryError`` when the device has not that much."""

    def allocate_in(self, memory: np.ndarray) -> Allocation:
        """A buffer whose device memory is ``memory`` (1-D uint8, zeroed, page-aligned),
        on a backend whose :attr:`device_memory_is_host`."""
        raise NotImplementedError(f"{self.name} cannot place a buffer in host memory")

    @abstractmethod
    def upload(self, allocation: Allocation, offset: int, data: np.ndarray) -> DeviceSpan | None:
        """Copy the uint8 array ``data`` into device memory at byte ``offset``."""

    def readback_memory(self, nbytes: int) -> np.ndarray:
        """``nbytes`` (uint8) for a fence backend's downloads to land in before the
        runtime copies them into host arrays; a backend may hand out memory its device
        writes directly."""
        return np.empty(nbytes, np.uint8)

    @abstractmethod
    def download(self, allocation: Allocation, offset: int, out: np.ndarray) -> DeviceSpan | None:
        """Copy ``out.nbytes`` device bytes at ``offset`` into the uint8 array ``out``."""

    def mapped_bytes(self, allocation: Allocation, offset: int, nbytes: int) -> np.ndarray | None:
        """Device bytes ``[offset, offset + nbytes)`` as memory this process maps, which a
        fence backend lets the runtime read or write itself once ``flush()`` has returned
        (a download or upload of one copy, with no readback memory and no operation);
        ``None`` (the default) where it has no such mapping or a transfer that small
        costs less as an operation."""
        return None

    @abstractmethod
    def copy(
        self,
        source: Allocation,
        source_offset: int,
        target: Allocation,
        target_offset: int,
        nbytes: int,
    ) -> DeviceSpan | None: ...

    @abstractmethod
    def fill(
        self, allocation: Allocation, offset: int, nbytes: int, element: np.ndarray
    ) -> DeviceSpan | None:
        """Repeat the one-element array ``element`` over ``nbytes`` bytes at ``offset``."""

    @abstractmethod
    def dispatch(
        self,
        executable: Any,
        dims: tuple[int, int, int],
        buffers: Sequence[KernelBuffer],
        scalars: Sequence[Any],
    ) -> DeviceSpan | None:
        """Run ``executable`` over ``dims`` threads. Each operation returns ``None`` when it
        has finished on return, or a :class:`DeviceSpan` that ``flush()`` fills in."""

    def prepare_dispatch(
        self,
        executable: Any,
        dims: tuple[int, int, int],
        buffers: Sequence[KernelBuffer],
        scalars: Sequence[Any],
    ) -> Any | None:
        """The dispatch made ready for :meth:`run_dispatches` (the runtime keeps it while
        the same arguments are dispatched again at the same size), or ``None`` when this
        backend runs it with :meth:`dispatch` only (the default)."""
        return None

    def run_dispatches(
        self, prepared: Sequence[Any], times: Times | None
    ) -> tuple[int, BaseException | None]:
        """Run dispatches from :meth:`prepare_dispatch` in order, finished on return, until
        one fails; returns how many ran and the error of the one that failed, if any. With
        ``times``, appends the clock before each one that started."""
        raise NotImplementedError(f"backend {self.name!r} does not prepare dispatches")

    def snapshot_memory(self, nbytes: int) -> np.ndarray:
        """``nbytes`` of host memory (a 1-D uint8 array) to hold an upload's host bytes
        read at ``submit()`` (``staging="submit"`` without a staging heap); ``upload``
        later receives exactly this array as its ``data``. Default: a slice of
        :data:`SNAPSHOTS`. A backend whose transfers need host memory of its own (CUDA:
        pinned) returns that, and its ``upload`` sends it without a second copy."""
        return SNAPSHOTS.take(nbytes)

    def check_executable(self, executable: Any) -> None:
        """Raise a :class:`~luisa_nb.errors.LuisaNbError` if this backend cannot run the
        kernel ``executable``; called before a dispatch is enqueued."""
        return None

    def schedule(self, commands: Sequence[Any]) -> Sequence[Any]:
        """The order to run one submission's commands in (default: as submitted)."""
        return commands

    def flush(self) -> None:
        """Finish every operation called so far (deferred downloads included); raise
        :class:`OperationFailed` for one that failed. Called at the end of each
        submission, and before host memory is read while readbacks are pending."""
        return None

    def cancel(self) -> None:
        """Ask running and later kernels to stop as soon as they can, until ``resume()``;
        called when the user interrupts a wait. A cancelled kernel raises on the worker."""
        return None

    def resume(self) -> None:
        """Let kernels run again after ``cancel()``."""
        return None

    def close(self) -> None:
        """Release what the backend holds (connections, processes); called once by
        ``Device.close()``."""
        return None

    @property
    def label(self) -> str:
        """The device's name in traces: the backend's name, unless a backend can serve
        two devices that a trace must tell apart."""
        return self.name

    def info(self) -> dict[str, Any]:
        """What the device reports about itself; the runtime adds the staging policy."""
        return {
            "name": self.name,
            "simulated": self.is_simulated,
            "description": self.description,
            "readback": self.readback,
            "staging_capacity": self.staging_capacity,
        }
