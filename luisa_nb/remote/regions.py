"""*Readback regions*: memory a direct client creates and shares with its session's
worker, so that a large download is written by the worker straight into the client's
readback memory (one copy there, one more into the user's array), not into the window
and then out of it.

The client makes a region with ``memfd_create``: anonymous memory, no file to remove,
gone with the last descriptor and mapping. It sizes the region, seals it against
shrinking and growing, maps it, and sends the descriptor to the worker over the Unix
socket of its direct link (``SCM_RIGHTS``) in a ``share`` request. The worker maps it
only if it is a regular file of exactly the size the request names, sealed against
shrinking (so no write of the worker's can fault past its end), and it holds at most
:data:`MAX_REGIONS` of a session's regions; it closes every descriptor it does not keep,
on every path. A ``readback`` operation names a region and a range inside it. When the
client's region is collected, its next batch tells the worker to unmap it (``unshare``).

A direct client also places its large buffers in such memory when the server's device
memory is host memory: it sends the descriptor with ``allocate`` (``"shared": true``),
the worker checks and maps it as a region and makes the buffer's device memory of it,
and the client keeps its mapping: a large download or upload, once the batches before
it have finished, is one copy between it and the user's bytes (:func:`sealed_memory`).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import mmap
import os
import stat
import threading
import weakref
from collections import deque

import numpy as np

from luisa_nb.remote.protocol import ProtocolError

MAX_REGIONS = 8
"""Regions of one session mapped at once (the client makes no more; the worker refuses more)."""
SHARED_READBACK_BYTES = 1 << 20
"""The smallest readback memory a direct client shares: smaller downloads cost less through
the window than a ``share`` round trip."""
SHARED_BUFFER_BYTES = 1 << 20
"""The smallest buffer a direct client places in memory shared with the worker (when the
server's device memory is host memory), and the smallest download it reads from there
itself: a smaller one costs less as a readback in the batch than as a flush of its own."""
AVAILABLE = hasattr(os, "memfd_create") and hasattr(fcntl, "F_GET_SEALS")
"""Whether this system has sealed anonymous memory (Linux)."""
REQUIRED_SEALS = getattr(fcntl, "F_SEAL_SHRINK", 0)
if AVAILABLE:  # mmap and munmap themselves: see map_memory
    _LIBC = ctypes.CDLL(None, use_errno=True)
    _LIBC.mmap.restype = ctypes.c_void_p
    _LIBC.mmap.argtypes = (
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    )
    _LIBC.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    MAP_FAILED = ctypes.c_void_p(-1).value


def fits_in_memory(nbytes: int) -> bool:
    """Whether ``nbytes`` are at most this host's memory. Memory files are sized without
    the check the OS makes of an allocation (a plain one larger than memory fails at
    once), so larger buffers are not placed in shared memory: their allocation fails, or
    not, as it would without it."""
    return nbytes <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def sealed_memory(name: str, nbytes: int) -> tuple[int, np.ndarray]:
    """A new memfd of ``nbytes`` zero bytes sealed against shrinking and growing, and its
    bytes mapped here: ``(descriptor, uint8 array)``. The
    caller closes the descriptor (the mapping keeps the memory); ``OSError`` when the
    system cannot make one."""
    descriptor = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(descriptor, nbytes)
        seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        fcntl.fcntl(descriptor, fcntl.F_ADD_SEALS, seals)
        memory = map_memory(descriptor, nbytes)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, memory


class Mapping:
    """Bytes ``[address, address + nbytes)`` mapped by :func:`map_memory`, unmapped when
    the last array of them is collected (arrays of them have it as their ``base``)."""

    __slots__ = ("__array_interface__", "__weakref__")

    def __init__(self, address: int, nbytes: int) -> None:
        self.__array_interface__ = {
            "data": (address, False),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }
        unmap = weakref.finalize(self, _LIBC.munmap, address, nbytes)
        unmap.atexit = False  # the process's end unmaps it; a thread may still copy then


def map_memory(descriptor: int, nbytes: int) -> np.ndarray:
    """The first ``nbytes`` of the file ``descriptor`` opens, mapped shared, as a uint8
    array; ``OSError`` when they cannot be mapped. The
    mapping keeps no descriptor: Python's ``mmap`` keeps a duplicate of each, and a
    descriptor per buffer in both processes would run out of them."""
    access = mmap.PROT_READ | mmap.PROT_WRITE
    address = _LIBC.mmap(None, nbytes, access, mmap.MAP_SHARED, descriptor, 0)
    if address is None or address == MAP_FAILED:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot map {nbytes} bytes: {os.strerror(code)}")
    return np.asarray(Mapping(address, nbytes))


class ClientRegion:
    """A region this client made: its id, its bytes (``array``, uint8) and its address."""

    __slots__ = ("__weakref__", "address", "array", "descriptor", "identifier", "nbytes")

    def __init__(self, identifier: int, nbytes: int) -> None:
        self.identifier = identifier
        self.nbytes = nbytes
        descriptor, self.array = sealed_memory(f"luisa_nb-readback-{identifier}", nbytes)
        self.descriptor: int | None = descriptor
        """Open until the worker has it (:meth:`shared`)."""
        self.address = self.array.ctypes.data

    def shared(self) -> None:
        """Close this process's descriptor: the mapping keeps the memory."""
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None


class ClientRegions:
    """A connection's regions, by address, and the ids of those collected since the last
    batch (which tells the worker to unmap them)."""

    def __init__(self) -> None:
        self.live: dict[int, tuple[int, int]] = {}
        """id: (first address, end address)."""
        self.unshared: deque[int] = deque()
        self._next = 1
        self._lock = threading.Lock()

    def reserve(self) -> int | None:
        """A fresh id, or ``None`` when :data:`MAX_REGIONS` are live."""
        with self._lock:
            if len(self.live) >= MAX_REGIONS:
                return None
            identifier = self._next
            self._next += 1
            self.live[identifier] = (0, 0)
            return identifier

    def add(self, region: ClientRegion) -> np.ndarray:
        """Track ``region`` (shared with the worker) until its memory is collected; its
        bytes, which nothing else holds."""
        array = region.array
        self.live[region.identifier] = (region.address, region.address + region.nbytes)
        weakref.finalize(array.base, self.let_go, region.identifier)
        return array

    def forget(self, identifier: int) -> None:
        """Drop a reserved id whose region the worker refused."""
        self.live.pop(identifier, None)

    def let_go(self, identifier: int) -> None:
        """Drop a region the worker may hold: the next batch tells it to unmap it."""
        self.live.pop(identifier, None)
        self.unshared.append(identifier)

    def find(self, out: np.ndarray) -> tuple[int, int] | None:
        """``(region id, offset)`` of ``out`` (contiguous bytes) if it lies in a region."""
        start = out.ctypes.data
        end = start + out.nbytes
        for identifier, (first, last) in list(self.live.items()):
            if first <= start and end <= last:
                return identifier, start - first
        return None

    def take_unshared(self) -> list[int]:
        unshared = self.unshared
        return [unshared.popleft() for _ in range(len(unshared))]


class WorkerRegion:
    """A client's region, mapped in the worker."""

    __slots__ = ("array", "nbytes")

    def __init__(self, descriptor: int, nbytes: int) -> None:
        """Map ``descriptor`` (always closed here) after checking that it is a sealed
        region of ``nbytes``; :class:`ProtocolError` if it is not."""
        try:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                raise ProtocolError("a shared region must be memory (memfd), not another file")
            if status.st_size != nbytes or nbytes == 0:
                raise ProtocolError(
                    f"the shared region holds {status.st_size} bytes, the request says {nbytes}"
                )
            try:
                seals = fcntl.fcntl(descriptor, fcntl.F_GET_SEALS)
            except OSError:
                seals = 0
            if seals & REQUIRED_SEALS != REQUIRED_SEALS:
                raise ProtocolError("a shared region must be a memfd sealed against shrinking")
            try:
                self.array = map_memory(descriptor, nbytes)
            except (OSError, ValueError, OverflowError) as error:
                raise ProtocolError(f"cannot map the shared region: {error}") from None
        finally:
            os.close(descriptor)
        self.nbytes = nbytes

    def part(self, offset: int, nbytes: int) -> np.ndarray:
        if offset + nbytes > self.nbytes:
            raise ProtocolError(
                f"bytes [{offset}, {offset + nbytes}) are outside the shared region of "
                f"{self.nbytes} bytes"
            )
        return self.array[offset : offset + nbytes]


def close_all(descriptors: list[int]) -> None:
    """Close descriptors a message carried that nobody took."""
    while descriptors:
        with contextlib.suppress(OSError):
            os.close(descriptors.pop())
