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

FLAGS = ("-std=gnu11", "-O2", "-fPIC", "-shared", "-pipe")
LIBRARIES = ("-nostdlib",)
"""Links nothing: the guard's libc functions (``sigaction``, ``__sigsetjmp``, ...) bind to
the libc every Python process has loaded, as a kernel's do (``toolchain.LIBRARIES``).
Linking libc's start files and linker script cost ~10 of the guard's ~40 ms build, which
a cold cache pays in its first launch."""
_lock = threading.Lock()
_library: ctypes.CDLL | None = None  # loaded for good: its handler stays installed
_address: int | None = None


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


def _install() -> int:
    global _library
    compiler = find_compiler()
    if compiler is None:  # then no kernel is compiled either
        return 0
    try:
        path, _ = cached_build(
            "lnb_fault_guard",
            GUARD_SOURCE,
            compiler,
            FLAGS,
            "the kernel fault guard: the C compiler",
            libraries=LIBRARIES,
        )
        library = ctypes.CDLL(str(path))
    except (KernelBuildError, OSError) as error:
        _warn(str(error))
        return 0
    if library.lnb_guard_install() != 0:
        _warn("installing its signal handler failed")
        return 0
    _library = library
    return ctypes.cast(library.lnb_guard_run, ctypes.c_void_p).value


def _warn(reason: str) -> None:
    warnings.warn(
        f"luisa_nb could not set up its kernel fault guard ({reason}); a compiled kernel "
        f"that touches memory outside its buffers (possible with checks=False) ends the "
        f"process. Run kernels with checks=True to rule that out",
        LuisaNbWarning,
        stacklevel=3,
    )
