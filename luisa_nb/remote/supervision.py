"""The server's side of session workers: the fork server they start from, a handle on
one worker process, and what to tell a client whose worker ended on its own."""

from __future__ import annotations

import logging
import multiprocessing
import secrets
import signal
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext

import zmq

from luisa_nb.remote.cancellation import session_cancel_flag
from luisa_nb.remote.window import create_window, remove
from luisa_nb.remote.worker import WorkerPlaces, serve_session

CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT}
RECONNECT_MILLISECONDS = 5
WINDOW_BYTES = 32 << 20
"""The shared memory of a session whose client is on this host (pages are taken as they
are first written): four parts of 8 MiB in flight."""


class WorkerProcess:
    """A session's worker: the process, the socket to it, the requests it has not
    answered yet (``waiting[ticket] = (peer, request id)``), the session's ``cancel``
    flag, which the server sets while the worker runs a kernel, and what a client on
    this host needs to reach the worker itself (``local``: the path of its Unix stream
    socket and the session's window).

    The process serves ``session`` with ``backend`` on an ``ipc://`` socket, with its
    files named after ``stem`` (a path in the server's private directory), and exits
    when the server stops it or ``lifeline`` reads as closed (the server is gone)."""

    __slots__ = (
        "cancel", "local", "pid", "places", "process", "session", "socket", "stopping",
        "waiting",
    )  # fmt: skip

    def __init__(
        self,
        processes: BaseContext,
        context: zmq.Context,
        stem: str,
        session: str,
        backend: str,
        max_message_bytes: int,
        lifeline: Connection,
    ) -> None:
        level = logging.getLogger("luisa_nb").getEffectiveLevel()
        self.places = places = WorkerPlaces(
            f"ipc://{stem}.socket", secrets.token_bytes(16), f"{stem}.stream",
            f"{stem}.cancel", f"{stem}.window", WINDOW_BYTES,
        )  # fmt: skip
        self.cancel = session_cancel_flag(places.cancel, create=True)
        nonce = create_window(places.window, places.window_bytes)
        self.local = {
            "worker": places.stream,
            "window": places.window,
            "window_bytes": places.window_bytes,
            "nonce": nonce,
        }
        self.process = processes.Process(
            target=serve_session,
            args=(places, session, backend, max_message_bytes, level, lifeline),
            name=f"luisa_nb session {session}",
            daemon=True,
        )
        self.process.start()
        self.pid: int = self.process.pid
        self.socket = context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.ROUTING_ID, places.supervisor)
        self.socket.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MILLISECONDS)  # it binds soon
        self.socket.connect(places.endpoint)
        self.session = session
        self.stopping = False
        self.waiting: dict[int, tuple[bytes, int]] = {}

    def stop(self) -> None:
        """Ask the process to end; its sentinel reports when it has, then :meth:`reap`."""
        self.stopping = True
        self.waiting.clear()
        self.socket.close(linger=0)
        self.process.terminate()

    def reap(self) -> int | None:
        """Collect the ended process and remove its files; its exit code."""
        self.process.join(0)
        code = self.process.exitcode
        self.process.close()
        for path in self.places.files:  # a crashed worker leaves its socket
            remove(path)
        return code

    def finish(self, seconds: float) -> None:
        """Wait up to ``seconds`` for a stopped process to end, then kill it."""
        self.process.join(seconds)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.reap()


def process_context() -> BaseContext:
    """Fork server where there is one (POSIX): a worker forks from a process that has
    imported numpy and luisa_nb already, and that holds no ZeroMQ state. It is ready on
    return, so a client's first ``hello`` waits for a fork only, not for those imports."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["luisa_nb.remote.worker"])
    warm_up = context.Process(target=_nothing, name="luisa_nb fork server warm-up")
    warm_up.start()
    warm_up.join()
    warm_up.close()
    return context


def _nothing() -> None:
    """What the warm-up process runs: the fork server's imports are the point."""


def exit_description(pid: int, code: int | None) -> str:
    """What a client hears when the worker ``pid`` ended with ``code`` unasked."""
    if code is not None and code < 0:
        try:
            number = signal.Signals(-code)
            name = number.name
        except ValueError:
            number, name = None, f"number {-code}"
        how = f"was killed by signal {name}"
        if number in CRASH_SIGNALS:
            how += " (a crash: a fault in the backend, or one the kernels' fault guard missed)"
        elif number is signal.SIGKILL:
            how += " (e.g. by the out-of-memory killer, or by a person)"
    else:
        how = f"exited with code {code}"
    return (
        f"the worker process (pid {pid}) that held this session's buffers {how}; the "
        f"session and its buffers are gone (other sessions on the server are not "
        f"affected): create a new device"
    )
