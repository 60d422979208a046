"""Ctrl-C in tests (a test helper, not part of the package): SIGINT sent to the main
thread as a terminal or a notebook sends it, and whether it still ends a wait there."""

from __future__ import annotations

import signal
import threading
import time

import pytest

needs_main_thread = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="needs the main thread"
)


def interrupt_main_thread_after(seconds: float) -> threading.Timer:
    """Send SIGINT to the main thread after ``seconds``, as Ctrl-C does."""
    main = threading.main_thread().ident
    timer = threading.Timer(seconds, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    return timer


def ctrl_c_stops_a_wait(wait_seconds: float = 2.0) -> bool:
    """Whether Ctrl-C ends a wait on an event well before a timer sets that event after
    ``wait_seconds`` (call from the main thread). The wait has no timeout, as
    ``synchronize()``'s has not: a timed wait returns to Python on SIGINT either way, an
    untimed one only while system calls are not restarted after it (an NVRTC compile
    makes them restart unless luisa_nb undoes it; see ``luisa_nb.kernels.cuda.nvrtc``)."""
    event = threading.Event()
    release = threading.Timer(wait_seconds, event.set)
    started = time.perf_counter()
    interrupt = interrupt_main_thread_after(0.1)
    release.start()
    try:
        event.wait()
        time.sleep(0)  # a KeyboardInterrupt held back by the wait is raised here
    except KeyboardInterrupt:
        pass
    finally:
        release.cancel()
        interrupt.join()
    return time.perf_counter() - started < wait_seconds / 2
