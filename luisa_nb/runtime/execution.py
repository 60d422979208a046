"""Running one :class:`~luisa_nb.runtime.staging.Run` on a stream's worker: the order,
the failures, and what the recorder hears.

Consecutive dispatches that the backend prepares (compiled C on the CPU backends) run in
one backend call; they report the same times and failures as dispatches run one by one.
So do the dispatches of several queued runs made only of such dispatches (a loop of
``kernel(..., dispatch_size=n)`` calls, one submission each): the worker takes them
together (:meth:`Executor.execute_runs`) and each run still fails, skips and is timed
on its own.

A step that raises fails itself, and the steps after it in its run are skipped; the
failure waits in the stream's list until the next ``synchronize()``. Nothing a step
raises (``SystemExit`` and ``KeyboardInterrupt`` included) escapes the worker.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
from collections.abc import Sequence
from typing import Any

from luisa_nb.backends.base import Backend, DeviceSpan, OperationFailed
from luisa_nb.errors import KernelCancelledError
from luisa_nb.recording.recorder import NULL_TIMER, RunTimer
from luisa_nb.recording.records import Status
from luisa_nb.runtime.commands import DispatchCommand
from luisa_nb.runtime.staging import Run, Staging, Step, Transfers


def exception_text(error: BaseException) -> str:
    """``"TypeName: message"``, even for an exception whose ``__str__`` raises."""
    try:
        message = str(error)
    except BaseException:
        message = "(its message could not be turned into text)"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class Failure:
    """What a worker remembers about a step that raised, until ``synchronize()``."""

    __slots__ = ("cancelled", "description", "error", "item_id", "skipped")

    def __init__(
        self,
        item_id: int,
        description: str,
        error: BaseException,
        skipped: int,
        cancelled: bool = False,
    ) -> None:
        self.item_id = item_id
        self.description = description
        self.error = error
        self.skipped = skipped
        self.cancelled = cancelled


class Executor:
    """Runs one stream's :class:`~luisa_nb.runtime.staging.Run` s on its worker, in the
    backend's order, then frees their staging memory."""

    __slots__ = ("backend", "failures", "flushes", "schedules", "staging", "transfers")

    def __init__(self, backend: Backend, staging: Staging, failures: list[Failure]) -> None:
        self.backend = backend
        self.staging = staging
        self.failures = failures
        self.transfers = Transfers(backend, staging)
        kind = type(backend)
        self.schedules = kind.schedule is not Backend.schedule
        self.flushes = kind.flush is not Backend.flush

    def execute(self, run: Run) -> None:
        """Run the steps of ``run`` in the backend's order, then free their staging memory."""
        backend, transfers, recorder = self.backend, self.transfers, run.recorder
        order = backend.schedule(run.steps) if self.schedules else run.steps
        timer = recorder.run_timer(order)
        timed = timer is not NULL_TIMER
        tick = timer.tick
        transfers.recorder = recorder
        spans: list[tuple[int, DeviceSpan]] = []
        position, count = 0, len(order)
        try:
            try:
                while position < count:
                    step = order[position]
                    if (
                        type(step) is DispatchCommand
                        and (ready := step.prepare(backend)) is not None
                    ):
                        end, done, error = _run_dispatches(backend, order, position, ready, timer)
                        if error is not None:
                            position += done
                            raise error
                        position = end
                        continue
                    if timed:
                        tick()
                    span = step.run(transfers)
                    if span is not None:
                        spans.append((position, span))
                    position += 1
                if timed:
                    tick()
                if transfers.pending:
                    transfers.land()
                if self.flushes:
                    backend.flush()
            except OperationFailed as error:
                failed = next(index for index, span in spans if span is error.span)
                _fail(order, failed, error.cause or error, self.failures, timer)
                transfers.land_before(order, failed)
            except BaseException as error:  # a worker must outlive any step
                _fail(order, position, error, self.failures, timer)
                with contextlib.suppress(Exception):
                    backend.flush()  # finish the deferred operations issued before the failure
                transfers.land_before(order, position)
            if timed:
                timer.spans(spans)
        finally:
            if run.blocks:
                self.staging.release(run.blocks)

    def execute_runs(self, runs: Sequence[Run]) -> None:
        """Run ``runs`` (queued one after another) in order: each stretch of two or more
        runs of one recorder made only of prepared dispatches in one backend call, the
        others one by one."""
        position, count = 0, len(runs)
        while position < count:
            recorder, end, prepared = runs[position].recorder, position, []
            while (
                end < count
                and runs[end].recorder is recorder
                and (launches := self._prepared(runs[end])) is not None
            ):
                prepared.append(launches)
                end += 1
            if end - position < 2:
                self.execute(runs[position])
                position += 1
                continue
            ran = self._execute_fused(runs[position:end], prepared)
            for run in runs[position + ran : end]:
                self.execute(run)
            position = end

    def _prepared(self, run: Run) -> list[Any] | None:
        """The launches of ``run`` if it is only dispatches the backend prepares and needs
        nothing at its end (no staging blocks, readbacks or flush), else ``None``."""
        if run.blocks or self.flushes or self.transfers.pending:
            return None
        backend, launches = self.backend, []
        for step in run.steps:
            if type(step) is not DispatchCommand:
                return None
            try:
                ready = step.prepare(backend)
            except Exception:
                return None  # run on its own, where the error fails the step
            if ready is None:
                return None
            launches.append(ready)
        return launches

    def _execute_fused(self, runs: Sequence[Run], prepared: Sequence[list[Any]]) -> int:
        """Run the launches of ``runs`` (of one recorder) in one backend call, timed as
        one run; returns how many runs are finished. A run with a failed step is the last
        of them: its later steps are skipped, and the runs after it are still to run."""
        steps = [step for run in runs for step in run.steps]
        timer = runs[0].recorder.run_timer(steps)
        launches = [launch for run_launches in prepared for launch in run_launches]
        try:
            done, error = self.backend.run_dispatches(launches, timer.times)
        except BaseException as error:  # a worker must outlive any step
            done, failed = 0, error
        else:
            if error is None:
                timer.tick()
                timer.spans(())
                return len(runs)
            failed = error
        ends = list(itertools.accumulate(len(run.steps) for run in runs))
        failing = bisect.bisect_right(ends, done)  # the run that holds launch `done`
        timer.end_at(ends[failing])
        _fail(steps[: ends[failing]], done, failed, self.failures, timer)
        timer.spans(())
        return failing + 1


def _run_dispatches(
    backend: Backend, order: Sequence[Step], start: int, first: Any, timer: RunTimer
) -> tuple[int, int, BaseException | None]:
    """Run ``order[start]`` (prepared as ``first``) and the prepared dispatches right after
    it in one backend call; returns where they end, how many ran, and the error of the one
    that failed. A dispatch that cannot be prepared ends the batch; it runs (and fails)
    on its own."""
    batch = [first]
    end, count = start + 1, len(order)
    while end < count:
        step = order[end]
        if type(step) is not DispatchCommand:
            break
        try:
            ready = step.prepare(backend)
        except Exception:
            break
        if ready is None:
            break
        batch.append(ready)
        end += 1
    done, error = backend.run_dispatches(batch, timer.times)
    return end, done, error


def _fail(
    order: Sequence[Step],
    position: int,
    error: BaseException,
    failures: list[Failure],
    timer: RunTimer,
) -> None:
    """Mark ``order[position]`` failed (past the end: the last step) and the rest skipped."""
    position = min(position, len(order) - 1)
    failed = order[position]
    cancelled = isinstance(error, KernelCancelledError)
    skipped = len(order) - position - 1
    failures.append(Failure(failed.id, failed.describe(), error, skipped, cancelled))
    status = Status.CANCELLED if cancelled else Status.FAILED
    timer.failed(position, status, exception_text(error))
