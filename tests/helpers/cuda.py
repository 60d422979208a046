"""What the CUDA tests share (a test helper, not part of the package): whether NVRTC can
compile here, which needs no GPU, and whether Ctrl-C still stops a wait in the main
thread, which an NVRTC compile breaks unless luisa_nb undoes what it does to the
process's signal handling (see ``luisa_nb.kernels.nvrtc``)."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from luisa_nb.errors import BackendUnavailableError
from luisa_nb.kernels.nvrtc import nvrtc_version


def nvrtc_missing() -> str | None:
    """Why NVRTC cannot compile here, or None when it can."""
    try:
        nvrtc_version()
    except BackendUnavailableError as error:
        return str(error)
    return None


NVRTC_MISSING = nvrtc_missing()
needs_nvrtc = pytest.mark.skipif(NVRTC_MISSING is not None, reason=NVRTC_MISSING or "")
needs_main_thread = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="needs the main thread"
)


def ctrl_c_stops_a_wait(wait_seconds: float = 2.0) -> bool:
    """Whether SIGINT sent to the main thread, as Ctrl-C sends it, ends a wait on an event
    well before a timer sets that event after ``wait_seconds`` (call from the main
    thread). The wait has no timeout, as ``synchronize()``'s has not: a timed wait
    returns to Python on SIGINT either way, an untimed one only while system calls are
    not restarted after it."""
    event = threading.Event()
    main = threading.main_thread().ident
    interrupt = threading.Timer(0.1, signal.pthread_kill, (main, signal.SIGINT))
    release = threading.Timer(wait_seconds, event.set)
    started = time.perf_counter()
    interrupt.start()
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
