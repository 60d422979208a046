"""The fault guard: a memory fault (SIGSEGV, SIGBUS) in a compiled kernel stops its launch
with ``STATUS_FAULT`` instead of ending the process.

A small C library, built by the toolchain once per compiler and loaded for the life of the
process, holds a handler for both signals and the guard's entry, whose address each launch
record carries (``LaunchRecord.guard``). Every thread running a launch, OpenMP's included,
calls its share of the launch through the entry, which sets a recovery point
(``sigsetjmp``) and marks the thread as inside a kernel (a thread-local pointer). On a fault
in such a thread the handler jumps back to that point, on the same thread and inside the
same OpenMP region; the entry writes the fault into the launch record (the generated
launch adds which block faulted), whose status stops the launch's other threads before
their next block. A fault in any other thread goes to the handler that was installed
before, or takes its default course, as without the guard.

What the guard cannot do: undo the writes a kernel made before the fault (a write out of
range that lands in mapped memory is no fault, and corrupts that memory silently); catch a
stack overflow (the handler needs the faulting thread's stack); win against a handler for
these signals installed after the first kernel launch, which then runs first.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from collections.abc import Callable

from luisa_nb.errors import KernelBuildError, LuisaNbWarning
from luisa_nb.kernels.c.checks import GUARD_TYPES, LAUNCH_TYPES
from luisa_nb.kernels.c.toolchain import cached_build, find_compiler

GUARD_SOURCE = (
    """\
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

"""
    + LAUNCH_TYPES
    + "\n\n"
    + GUARD_TYPES
    + """

/* Where a thread goes back to after a fault: the frame of lnb_guard_run on its stack. */
typedef struct {
    sigjmp_buf recovery;
    volatile int signal;
    void *volatile address;
} lnb_guard_frame;

/* The frame of the guarded launch the calling thread runs, else 0. Initial-exec TLS: the
   handler reads it with one load and never allocates. */
static __thread lnb_guard_frame *lnb_frame __attribute__((tls_model("initial-exec")));
static struct sigaction lnb_before[2]; /* SIGSEGV's and SIGBUS's handlers before ours */

static void lnb_fault(int signal, siginfo_t *info, void *context) {
    lnb_guard_frame *frame = lnb_frame;
    if (frame) {
        lnb_frame = 0; /* a fault while the launch stops is not caught again */
        frame->signal = signal;
        frame->address = info->si_addr;
        siglongjmp(frame->recovery, 1);
    }
    const struct sigaction *before = &lnb_before[signal == SIGBUS];
    if (before->sa_flags & SA_SIGINFO) {
        before->sa_sigaction(signal, info, context);
    } else if (before->sa_handler != SIG_DFL && before->sa_handler != SIG_IGN) {
        before->sa_handler(signal);
    } else {
        /* As if the guard were not there: a fault happens again under the old action when
           the instruction runs again; a signal sent by a process is sent again. */
        sigaction(signal, before, 0);
        if (info->si_code <= 0) raise(signal);
    }
}

/* Installs the handler; 0 on success. SA_NODEFER: the jump back leaves the signal
   unblocked. SA_ONSTACK: a thread with an alternate signal stack (Python's faulthandler
   gives the main thread one) handles the signals there, as before. */
int lnb_guard_install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = lnb_fault;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    if (sigaction(SIGSEGV, &action, &lnb_before[0]) != 0) return -1;
    if (sigaction(SIGBUS, &action, &lnb_before[1]) != 0) {
        sigaction(SIGSEGV, &lnb_before[0], 0);
        return -1;
    }
    return 0;
}

/* The guard's entry (an lnb_guard). */
int lnb_guard_run(lnb_run_function run, void *blocks, lnb_launch *launch,
                  volatile int64_t *running) {
    lnb_guard_frame frame;
    lnb_guard_frame *const outer = lnb_frame;
    int recorded = 0;
    if (sigsetjmp(frame.recovery, 0) == 0) {
        lnb_frame = &frame;
        run(blocks, launch, running);
    } else {
        int32_t going = LNB_OK;
        recorded = __atomic_compare_exchange_n(&launch->status, &going, LNB_FAULT, 0,
                                               __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        if (recorded) {
            launch->index = (int64_t)(intptr_t)frame.address;
            launch->value = frame.signal;
        }
    }
    lnb_frame = outer;
    return recorded;
}
"""
)

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
"""The launch loop of ``c/launch_runs.py``, in this library: built once, not in each kernel's
build (~3 ms of each ``-O0`` build, 5-14 ms of each ``-O2`` one)."""

FLAGS = ("-std=gnu11", "-O2", "-fPIC", "-shared", "-pipe")
LIBRARIES = ("-nostdlib",)
"""Links nothing: the guard's libc functions (``sigaction``, ``__sigsetjmp``, ...) bind to
the libc every Python process has loaded, as a kernel's do (``toolchain.LIBRARIES``).
Linking libc's start files and linker script cost ~10 of the guard's ~40 ms build, which
a cold cache pays in its first launch."""
_lock = threading.Lock()
_library: ctypes.CDLL | None = None  # loaded for good: its handler stays installed
_address: int | None = None
_launch_loop: Callable[..., int] | None = None


def guard_address() -> int:
    """The address of the guard's entry for ``LaunchRecord.guard``: built, loaded and its
    handler installed on the first call. 0 where that failed (a warning says why), and
    launches then run unguarded."""
    global _address
    if _address is None:
        with _lock:
            if _address is None:
                _address = _install()
    return _address


def launch_loop() -> Callable[..., int] | None:
    """``lnb_run_launches`` of this library (see ``c/launch_runs.py``), typed for ctypes;
    None where the library could not be built or loaded (:func:`guard_address` warned)."""
    guard_address()
    return _launch_loop


def _install() -> int:
    global _library, _launch_loop
    compiler = find_compiler()
    if compiler is None:  # then no kernel is compiled either
        return 0
    try:
        path, _ = cached_build(
            "lnb_fault_guard",
            f"{GUARD_SOURCE}\n{RUNNER_SOURCE}",
            compiler,
            FLAGS,
            "the kernel fault guard: the C compiler",
            libraries=LIBRARIES,
        )
        library = ctypes.CDLL(str(path))
    except (KernelBuildError, OSError) as error:
        _warn(str(error))
        return 0
    _library = library
    loop = library.lnb_run_launches
    loop.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
    loop.restype = ctypes.c_int64
    _launch_loop = loop
    if library.lnb_guard_install() != 0:
        _warn("installing its signal handler failed")
        return 0
    return ctypes.cast(library.lnb_guard_run, ctypes.c_void_p).value


def _warn(reason: str) -> None:
    warnings.warn(
        f"luisa_nb could not set up its kernel fault guard ({reason}); a compiled kernel "
        f"that touches memory outside its buffers (possible with checks=False) ends the "
        f"process. Run kernels with checks=True to rule that out",
        LuisaNbWarning,
        stacklevel=3,
    )
