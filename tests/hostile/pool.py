"""Worker processes that run cases with a time limit each, replaced when one hangs, dies
or ran an isolated case.

Each worker is a long-lived ``python -m tests.hostile.worker`` in a session of its own, so
that killing its process group also ends what it started (a remote device's server) and
a Ctrl-C at the terminal reaches only the sweep.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from .cases import Case
from .frames import split_frames, write_frame
from .outcomes import CaseResult, Outcome

ROOT = Path(__file__).resolve().parents[2]
WORKER_MODULE = "tests.hostile.worker"
START_SECONDS = 120.0
"""How long a new worker may take to import luisa_nb and the areas."""
STOP_SECONDS = 3.0


class WorkerStartError(RuntimeError):
    """A worker process could not start; its standard error says why."""


class Worker:
    """One worker process and the case it is running."""

    def __init__(self) -> None:
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 (open while the worker lives)
        self.process = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            start_new_session=True,
        )
        self.received = b""
        self.ready = False
        self.case: Case | None = None
        self.deadline = time.monotonic() + START_SECONDS

    @property
    def output(self) -> int:
        return self.process.stdout.fileno()

    def send(self, chosen: Case) -> None:
        self.case = chosen
        self.deadline = time.monotonic() + chosen.timeout
        write_frame(self.process.stdin, (chosen.module, chosen.action, chosen.arguments))

    def receive(self) -> list[object] | None:
        """The messages now readable; None when the process has closed its output."""
        data = os.read(self.output, 1 << 16)
        if not data:
            return None
        messages, self.received = split_frames(self.received + data)
        return messages

    def death(self) -> str:
        """How the process ended, once its output closed."""
        try:
            code = self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            return "the worker closed its output and did not exit"
        if code < 0:
            return f"the worker was killed by {signal.Signals(-code).name}"
        return f"the worker exited with code {code}"

    def error_text(self) -> str:
        self.errors.seek(0)
        return self.errors.read().decode("utf-8", "replace")

    def stop(self, *, kill: bool = False) -> None:
        """End the process and everything in its session (closing its input first, unless
        ``kill``)."""
        if not kill:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(STOP_SECONDS)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.errors):
            with contextlib.suppress(OSError):
                stream.close()


class WorkerPool:
    """``jobs`` workers that run the cases of each :meth:`run`; started on the first run,
    kept between runs, stopped by :meth:`close` (or the end of a ``with`` block)."""

    def __init__(self, jobs: int = 2) -> None:
        self.jobs = max(1, jobs)
        self.workers: list[Worker] = []
        self.groups: set[int] = set()
        """The process group of every worker started (each worker leads its own)."""

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers = []

    def _start(self) -> Worker:
        worker = Worker()
        self.groups.add(worker.process.pid)
        return worker

    def _replace(self, worker: Worker, *, kill: bool) -> None:
        worker.stop(kill=kill)
        self.workers[self.workers.index(worker)] = self._start()

    def left_behind(self) -> list[int]:
        """Processes still alive in the groups of this pool's workers (Linux; none where
        ``/proc`` does not exist)."""
        alive = []
        for entry in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = entry.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) in self.groups:
                alive.append(int(entry.parent.name))
        return alive

    def run(
        self, cases: Iterable[Case], report: Callable[[CaseResult], None] | None = None
    ) -> list[CaseResult]:
        """Run ``cases``; the results in their order. ``report`` hears of each result as
        it comes."""
        pending = deque(enumerate(cases))
        while len(self.workers) < min(self.jobs, len(pending)):
            self.workers.append(self._start())
        results: dict[int, CaseResult] = {}
        positions: dict[int, int] = {}

        def finish(worker: Worker, outcome: Outcome, detail: str, seconds: float) -> None:
            chosen = worker.case
            result = CaseResult(chosen.key, chosen.area, outcome, detail, seconds)
            results[positions.pop(id(worker))] = result
            worker.case = None
            if report is not None:
                report(result)

        while pending or positions:
            for worker in self.workers:
                if worker.ready and worker.case is None and pending:
                    position, chosen = pending.popleft()
                    positions[id(worker)] = position
                    worker.send(chosen)
            waiting = [w for w in self.workers if not w.ready or w.case is not None]
            timeout = max(0.0, min(w.deadline for w in waiting) - time.monotonic())
            readable, _, _ = select.select([w.output for w in waiting], [], [], timeout)
            for worker in [w for w in waiting if w.output in readable]:
                messages = worker.receive()
                if messages is None:
                    if not worker.ready:
                        raise WorkerStartError(worker.error_text()[-2000:])
                    if worker.case is not None:
                        finish(worker, Outcome.CRASH, worker.death(), 0.0)
                    self._replace(worker, kill=True)
                    continue
                for message in messages:
                    if message == "ready":
                        worker.ready = True
                        continue
                    outcome, detail, seconds = message
                    isolated = worker.case.isolated
                    finish(worker, Outcome(outcome), detail, seconds)
                    if isolated:
                        self._replace(worker, kill=False)
            now = time.monotonic()
            for worker in [w for w in waiting if w.deadline <= now and w in self.workers]:
                if not worker.ready:
                    raise WorkerStartError(f"no worker was ready within {START_SECONDS:g} s")
                if worker.case is None:
                    continue
                limit = worker.case.timeout
                finish(worker, Outcome.HANG, f"no result within {limit:g} s", limit)
                self._replace(worker, kill=True)
        return [results[position] for position in sorted(results)]


def run_cases(
    cases: Iterable[Case], jobs: int = 2, report: Callable[[CaseResult], None] | None = None
) -> list[CaseResult]:
    """Run ``cases`` on a pool of ``jobs`` workers, stopped at the end."""
    with WorkerPool(jobs) as pool:
        return pool.run(cases, report)
