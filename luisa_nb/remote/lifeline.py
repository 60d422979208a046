"""A session's worker ends with the server that started it, however the server ended.

The worker's main thread may be inside a kernel that never returns, reading no message,
so the worker does not check for its server between messages. Instead a thread of the
worker waits on the *lifeline*, the reading end of a pipe whose writing end only the
server holds: once the server is gone (exited, or killed by any signal) it reads as
closed, and the thread ends the process with ``os._exit``. Compiled kernels run without
the GIL, so the thread runs while one does. The fork server and ``multiprocessing``'s
resource tracker follow: each exits when the last process holding its pipe (the server
and the workers) is gone. The thread removes the worker's files first (its socket, its
window, its cancel flag), and the server's directory once it is empty.

On Linux the worker also asks the kernel to kill it (``SIGKILL``) if its parent, the
fork server, exits first (``prctl(PR_SET_PDEATHSIG)``), say killed with the server's
process group: then no Python code needs to run for the worker to end.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection

logger = logging.getLogger("luisa_nb.remote.worker")
PR_SET_PDEATHSIG = 1


def exit_with_server(lifeline: Connection, files: Sequence[str]) -> None:
    """Make this process end when the server is gone (call it first thing in a worker),
    removing ``files`` first, and their directory if nothing else is left in it."""
    if sys.platform.startswith("linux"):
        _kill_when_parent_exits()
    watcher = threading.Thread(
        target=_exit_when_closed, args=(lifeline, files), name="luisa_nb lifeline", daemon=True
    )
    watcher.start()


def _kill_when_parent_exits() -> None:
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        logger.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d)", ctypes.get_errno())
    elif os.getppid() != parent:  # the parent exited before the call
        os._exit(0)


def _exit_when_closed(lifeline: Connection, files: Sequence[str]) -> None:
    try:
        lifeline.poll(None)  # the server never writes: readable means closed
        for path in files:  # the server, gone, cannot remove them
            with contextlib.suppress(OSError):
                os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(files[0]))
    finally:
        os._exit(0)
