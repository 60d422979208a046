"""Consecutive launches of compiled kernels in one C call.

A launch costs ~0.3 µs of C, but packing its arguments and calling through ctypes costs
several times that. So a launch is prepared once (:class:`PreparedLaunch`: the entry's
address and the packed argument struct, kept while the same arguments are dispatched
again) and a run of prepared launches goes to C as one array of (entry, arguments)
address pairs. The loop (``fault_guard.RUNNER_SOURCE``) is in the fault guard's library,
built once, not in each kernel's build (it cost each ``-O0`` build ~3 ms, each ``-O2``
one 5-14 ms); where that
library could not be built, a loop in Python calls the entries one by one. It stops at
the first launch that fails (a fault included, see :mod:`~luisa_nb.kernels.c.fault_guard`)
or is cancelled and says which one it was; with a ``times`` array it also gives the time
on the trace clock
(``CLOCK_MONOTONIC``, which ``time.perf_counter_ns`` reads) before each launch. On x86 a
run of several launches reads that clock twice, before the first launch and after the
last, and places each launch between the two by the time stamp counter (``rdtsc``),
which costs a fraction of a clock read (``benchmarks/bench_launch_times.py``).
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Sequence
from time import perf_counter_ns as now
from typing import TYPE_CHECKING, Any

from luisa_nb.kernels.c.fault_guard import guard_address, launch_loop
from luisa_nb.kernels.checks import LaunchRecord

if TYPE_CHECKING:
    from luisa_nb.backends.base import Times
    from luisa_nb.errors import KernelError
    from luisa_nb.kernels.c.executable import CExecutable
    from luisa_nb.kernels.executable import CancelFlag


_PAIR = struct.Struct("=qq")
_CLOCK_BYTES = ctypes.sizeof(ctypes.c_int64)
_records = threading.local()  # each worker's launch record, reused while no launch stops


class PreparedLaunch:
    """One launch of ``executable`` over ``dims`` ready for :func:`run_launches`:
    ``pair`` holds the entry's address and the packed arguments' address as two int64;
    ``scalars`` are kept to explain a failure."""

    __slots__ = ("dims", "executable", "packed", "pair", "scalars")

    def __init__(
        self,
        executable: CExecutable,
        dims: tuple[int, int, int],
        packed: bytes,
        scalars: Sequence[Any],
    ) -> None:
        self.executable = executable
        self.dims = dims
        self.scalars = scalars
        self.packed = ctypes.create_string_buffer(packed, len(packed))
        self.pair = _PAIR.pack(executable.entry_address, ctypes.addressof(self.packed))


def run_launches(
    launches: Sequence[PreparedLaunch], cancel: CancelFlag, times: Times | None = None
) -> tuple[int, KernelError | None]:
    """Run ``launches`` in order until one stops; returns how many ran to the end and the
    error of the one that stopped (``None`` if none did). With ``times``, appends the clock
    before each launch that started."""
    count = len(launches)
    record = getattr(_records, "record", None)
    if record is None:
        record = _records.record = LaunchRecord(guard=guard_address())
    record.cancel = cancel.address
    runner = launch_loop()
    if runner is None:
        done = _run_one_by_one(launches, record, times)
        return _outcome(launches, done, record)
    pairs = launches[0].pair if count == 1 else b"".join([launch.pair for launch in launches])
    clock = None
    if times is not None:
        if count == 1:
            times.append(now())
        else:
            clock = (ctypes.c_int64 * count)()
    done = runner(pairs, count, ctypes.addressof(record), clock)
    if clock is not None:  # as raw bytes: a slice of a ctypes array makes an int per item
        times.frombytes(memoryview(clock).cast("B")[: min(done + 1, count) * _CLOCK_BYTES])
    return _outcome(launches, done, record)


def _run_one_by_one(
    launches: Sequence[PreparedLaunch], record: LaunchRecord, times: Times | None
) -> int:
    """The launch loop in Python, where the guard's library (which holds the C one) could
    not be built: how many launches ran without stopping."""
    for done, launch in enumerate(launches):
        if times is not None:
            times.append(now())
        launch.executable.launch_entry(launch.packed, ctypes.byref(record))
        if record.status:
            return done
    return len(launches)


def _outcome(
    launches: Sequence[PreparedLaunch], done: int, record: LaunchRecord
) -> tuple[int, KernelError | None]:
    if done == len(launches):
        return done, None
    _records.record = None  # the stopped launch's record explains it; the next gets a new one
    stopped = launches[done]
    return done, stopped.executable.failure(record, stopped.dims, stopped.scalars)
