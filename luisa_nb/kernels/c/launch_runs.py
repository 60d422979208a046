"""Consecutive launches of compiled kernels in one C call.

A launch costs ~0.3 µs of C, but packing its arguments and calling through ctypes costs
several times that. So a launch is prepared once (:class:`PreparedLaunch`: the entry's
address and the packed argument struct, kept while the same arguments are dispatched
again) and a run of prepared launches goes to C as one array of (entry, arguments)
address pairs. The loop (:data:`RUNNER_SOURCE`) is compiled into every kernel's library,
so it costs no build of its own. It stops at the first launch that fails (a fault
included, see :mod:`~luisa_nb.kernels.c.fault_guard`) or is cancelled and says which one it
was; with a ``times`` array it also gives the time on the trace clock
(``CLOCK_MONOTONIC``, which ``time.perf_counter_ns`` reads) before each launch. On x86 a
run of several launches reads that clock twice, before the first launch and after the
last, and places each launch between the two by the time stamp counter (``rdtsc``),
which costs a fraction of a clock read (``benchmarks/bench_launch_times.py``).
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable, Sequence
from time import perf_counter_ns as now
from typing import TYPE_CHECKING, Any

from luisa_nb.kernels.c.fault_guard import guard_address
from luisa_nb.kernels.checks import LaunchRecord

if TYPE_CHECKING:
    from luisa_nb.backends.base import Times
    from luisa_nb.errors import KernelError
    from luisa_nb.kernels.c.executable import CExecutable
    from luisa_nb.kernels.executable import CancelFlag

RUNNER_SOURCE = """\
typedef void (*lnb_entry)(const void *arguments, void *launch);

/* Linux's struct timespec and CLOCK_MONOTONIC, declared here: <time.h> is slow to parse. */
struct lnb_timespec { long seconds; long nanoseconds; };
int clock_gettime(int clock, struct lnb_timespec *time);
enum { LNB_CLOCK_MONOTONIC = 1 };

static int64_t lnb_clock_ns(void) {
    struct lnb_timespec now;
    clock_gettime(LNB_CLOCK_MONOTONIC, &now);
    return (int64_t)now.seconds * 1000000000 + now.nanoseconds;
}

/* x86's time stamp counter: a few ns to read where clock_gettime takes tens. */
#if defined(__x86_64__) || defined(__i386__)
#define LNB_COUNTER 1
#define LNB_COUNT() ((int64_t)__builtin_ia32_rdtsc())
#else
#define LNB_COUNTER 0
#define LNB_COUNT() ((int64_t)0)
#endif

/* Runs launches[2i] (an entry) with launches[2i+1] (its packed arguments) for i < count,
   stopping after the first whose launch record's status is set; returns how many ran
   without stopping. With times, stores the CLOCK_MONOTONIC time (ns) before each that
   started: read for each, or (x86, several launches) placed by the time stamp counter
   between the clock read before the first and after the last, never decreasing. */
int64_t lnb_run_launches(const int64_t *launches, int64_t count, void *launch,
                         int64_t *times) {
    int counted = LNB_COUNTER && times && count > 1;
    int64_t first_ns = counted ? lnb_clock_ns() : 0, first_count = counted ? LNB_COUNT() : 0;
    int64_t done = 0;
    for (; done < count; ++done) {
        if (times) times[done] = counted ? LNB_COUNT() : lnb_clock_ns();
        ((lnb_entry)(intptr_t)launches[2 * done])(
            (const void *)(intptr_t)launches[2 * done + 1], launch);
        if (*(const volatile int32_t *)launch != 0) break;
    }
    if (counted) {
        int64_t last_count = LNB_COUNT(), last_ns = lnb_clock_ns(), latest = first_ns;
        double span = (double)(last_count - first_count);
        double scale = span > 0 ? (double)(last_ns - first_ns) / span : 0.0;
        int64_t started = done < count ? done + 1 : count;
        for (int64_t i = 0; i < started; ++i) {
            int64_t at = first_ns + (int64_t)((double)(times[i] - first_count) * scale);
            latest = at < latest ? latest : at > last_ns ? last_ns : at;
            times[i] = latest;
        }
    }
    return done;
}
"""

_PAIR = struct.Struct("=qq")
_CLOCK_BYTES = ctypes.sizeof(ctypes.c_int64)
_records = threading.local()  # each worker's launch record, reused while no launch stops


def runner_of(library: ctypes.CDLL) -> Callable[..., int]:
    """The C loop of a kernel library built from a source ending in
    :data:`RUNNER_SOURCE` (which takes ``int64_t`` and ``intptr_t`` from the kernel's
    prelude). Any kernel's copy runs launches of any kernels."""
    function = library.lnb_run_launches
    function.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
    function.restype = ctypes.c_int64
    return function


class PreparedLaunch:
    """One launch of ``executable`` over ``dims`` ready for :func:`run_launches`:
    ``pair`` holds the entry's address and the packed arguments' address as two int64;
    ``scalars`` are kept to explain a failure."""

    __slots__ = ("_packed", "dims", "executable", "pair", "scalars")

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
        self._packed = ctypes.create_string_buffer(packed, len(packed))
        self.pair = _PAIR.pack(executable.entry_address, ctypes.addressof(self._packed))


def run_launches(
    launches: Sequence[PreparedLaunch], cancel: CancelFlag, times: Times | None = None
) -> tuple[int, KernelError | None]:
    """Run ``launches`` in order until one stops; returns how many ran to the end and the
    error of the one that stopped (``None`` if none did). With ``times``, appends the clock
    before each launch that started."""
    runner = launches[0].executable.runner
    count = len(launches)
    pairs = launches[0].pair if count == 1 else b"".join([launch.pair for launch in launches])
    record = getattr(_records, "record", None)
    if record is None:
        record = _records.record = LaunchRecord(guard=guard_address())
    record.cancel = cancel.address
    clock = None
    if times is not None:
        if count == 1:
            times.append(now())
        else:
            clock = (ctypes.c_int64 * count)()
    done = runner(pairs, count, ctypes.addressof(record), clock)
    if clock is not None:  # as raw bytes: a slice of a ctypes array makes an int per item
        times.frombytes(memoryview(clock).cast("B")[: min(done + 1, count) * _CLOCK_BYTES])
    if done == count:
        return done, None
    _records.record = None  # the stopped launch's record explains it; the next gets a new one
    stopped = launches[done]
    return done, stopped.executable.failure(record, stopped.dims, stopped.scalars)
