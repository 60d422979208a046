"""Running one run (:data:`~luisa_nb.runtime.staging.Run`) on a stream's worker: the order,
the failures, and what the recorder hears.

Consecutive dispatches that the backend prepares (compiled C on the CPU backends) run in
one backend call; they report the same times and failures as dispatches run one by one.
The worker takes the runs waiting in its queue together (:meth:`Executor.execute_runs`):
a loop of ``kernel(..., dispatch_size=n)`` or ``buffer.copy_from(array)`` calls makes one
run per call, and the runs are timed as one and their dispatches launched in one backend
call, while a failure still skips only the rest of its own run.

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
from luisa_nb.recording.clock import now
from luisa_nb.recording.recorder import NULL_RECORDER, NULL_TIMER, RunTimer
from luisa_nb.recording.records import Status
from luisa_nb.runtime.commands import (
    CopyCommand,
    DispatchCommand,
    DispatchMemo,
    DownloadCommand,
    FillCommand,
    UploadCommand,
    start_run,
)
from luisa_nb.runtime.staging import Run, Staging, Step, Transfers, UploadChunk

QUICK_DISPATCH_NANOSECONDS = 50_000
"""A prepared launch that ran within this is quick: a waiting caller may run it itself."""
_TRANSFERS = frozenset({UploadCommand, DownloadCommand, CopyCommand, FillCommand, UploadChunk})


def runs_quickly(steps: Sequence[Step]) -> bool:
    """Whether every step of a run is quick to run on the thread that waits for it: a
    transfer (host memory or device memory moved, at the speed of a copy), or a dispatch
    whose arguments' launch of this size ran within :data:`QUICK_DISPATCH_NANOSECONDS` the
    last time. A caller that runs such work itself answers Ctrl-C within about that."""
    for step in steps:
        kind = type(step)
        if kind is DispatchCommand:
            if step.arguments.memo.quick_dims != step.dims:
                return False
        elif kind not in _TRANSFERS:
            return False
    return True


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
    """Runs one stream's runs (:data:`~luisa_nb.runtime.staging.Run`) on its worker, in the
    backend's order, then frees their staging memory."""

    __slots__ = (
        "backend",
        "failures",
        "flushes",
        "schedules",
        "staging",
        "times_on_device",
        "transfers",
    )

    def __init__(self, backend: Backend, staging: Staging, failures: list[Failure]) -> None:
        self.backend = backend
        self.staging = staging
        self.failures = failures
        self.transfers = Transfers(backend, staging)
        kind = type(backend)
        self.schedules = kind.schedule is not Backend.schedule
        self.flushes = kind.flush is not Backend.flush
        self.times_on_device = kind.runs_elsewhere

    def execute(self, run: Run) -> None:
        """Run the steps of ``run`` in the backend's order, then free their staging memory."""
        steps, blocks, recorder = run
        try:
            order = self.backend.schedule(steps) if self.schedules else steps
            self._run_steps(order, recorder, (len(order),))
        finally:
            if blocks:
                self.staging.release(blocks)

    def execute_runs(self, runs: Sequence[Run]) -> None:
        """Run ``runs`` (queued one after another) in order. Where the backend does not
        reorder work, consecutive runs of one recorder that hold no staging blocks run as
        one: one timer, their prepared dispatches in one backend call, and one flush
        where the backend defers work and a failure stops what follows it in a flush
        (``stops_flush_at_failure``); a failure still skips only the rest of its own run,
        and the runs after it run again. So that running again records nothing twice, a
        run with uploads (which read host memory as they are issued) joins no run before it."""
        position, count = 0, len(runs)
        joins = not self.schedules and (not self.flushes or self.backend.stops_flush_at_failure)
        while position < count:
            first, end = runs[position], position + 1
            _, blocks, recorder = first
            if joins and not blocks:
                while end < count:
                    later_steps, later_blocks, later_recorder = runs[end]
                    if later_recorder is not recorder or later_blocks:
                        break
                    if self.flushes and any(type(s) is UploadCommand for s in later_steps):
                        break
                    end += 1
            if end - position == 1:
                self.execute(first)
                position += 1
                continue
            lists = [steps for steps, _, _ in runs[position:end]]
            steps = [step for listed in lists for step in listed]
            ends = tuple(itertools.accumulate(map(len, lists)))
            position += self._run_steps(steps, recorder, ends)

    def _run_steps(self, order: Sequence[Step], recorder: Any, ends: Sequence[int]) -> int:
        """Run ``order``, the steps of runs ending at positions ``ends``, timed as one run;
        returns how many of those runs are finished. A failure ends the run it is in (its
        later steps are skipped) and this call: the runs after it are still to run."""
        backend, transfers = self.backend, self.transfers
        if recorder.recording:
            timer = start_run(recorder, order)
        else:  # also the recorder of a trace freed before its commands ran: nothing to record
            timer, recorder = NULL_TIMER, NULL_RECORDER
        if recorder.initial_pending:  # buffers made before the trace, first touched now
            recorder.capture_initial(order)
        times = timer.times
        timed = times is not None
        tick = times.tick if timed else None
        transfers.recorder = recorder
        spans: list[tuple[int, DeviceSpan]] = []
        position, count = 0, len(order)
        try:
            while position < count:
                step = order[position]
                if type(step) is DispatchCommand and (ready := step.prepare(backend)) is not None:
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
            if self.times_on_device and spans:
                _note_device_speeds(order, spans)
            finished = len(ends)
        except OperationFailed as error:
            failed = next(index for index, span in spans if span is error.span)
            finished = self._fail(order, ends, failed, error.cause or error, timer)
            transfers.land_before(order, failed)
        except BaseException as error:  # a worker must outlive any step
            finished = self._fail(order, ends, position, error, timer)
            with contextlib.suppress(Exception):
                backend.flush()  # finish the deferred operations issued before the failure
            transfers.land_before(order, position)
        transfers.recorder = NULL_RECORDER  # a stopped trace is not kept alive by a stream
        if finished < len(ends):  # the later runs' steps were issued, and run again later
            spans = [(at, span) for at, span in spans if at < ends[finished - 1]]
        if spans:
            timer.spans(spans)
        return finished

    def _fail(
        self,
        order: Sequence[Step],
        ends: Sequence[int],
        position: int,
        error: BaseException,
        timer: RunTimer,
    ) -> int:
        """Mark ``order[position]`` failed (past the end: the last step) and the rest of
        its run skipped; returns how many runs are finished, its own included."""
        position = min(position, len(order) - 1)
        run = bisect.bisect_right(ends, position)
        end = ends[run]
        if end < len(order):
            timer.end_at(end)
        failed = order[position]
        cancelled = isinstance(error, KernelCancelledError)
        skipped = end - position - 1
        self.failures.append(Failure(failed.id, failed.describe(), error, skipped, cancelled))
        status = Status.CANCELLED if cancelled else Status.FAILED
        timer.failed(position, status, exception_text(error))
        return run + 1


def _run_dispatches(
    backend: Backend, order: Sequence[Step], start: int, first: Any, timer: RunTimer
) -> tuple[int, int, BaseException | None]:
    """Run ``order[start]`` (prepared as ``first``) and the prepared dispatches right after
    it in one backend call; returns where they end, how many ran, and the error of the one
    that failed. A dispatch that cannot be prepared ends the batch; it runs (and fails)
    on its own."""
    batch = [first]
    end, count = start + 1, len(order)
    step = order[start]
    arguments, dims, ready = step.arguments, step.dims, first
    memos = [arguments.memo]
    while end < count:
        step = order[end]
        if type(step) is not DispatchCommand:
            break
        if step.arguments is not arguments or step.dims != dims:  # else: prepared alike
            try:
                ready = step.prepare(backend)
            except Exception:
                break
            if ready is None:
                break
            arguments, dims = step.arguments, step.dims
            if arguments.memo is not memos[-1]:
                memos.append(arguments.memo)
        batch.append(ready)
        end += 1
    began = now()
    done, error = backend.run_dispatches(batch, timer.times)
    # a batch of one kernel's launches is timed per launch, one of several kernels whole
    limit = QUICK_DISPATCH_NANOSECONDS * (len(batch) if len(memos) == 1 else 1)
    quick = error is None and now() - began <= limit
    for memo in memos:
        _note_speed(memo, memo.prepared[0], quick)
    return end, done, error


def _note_device_speeds(order: Sequence[Step], spans: Sequence[tuple[int, DeviceSpan]]) -> None:
    """Note whether each dispatch among ``order``'s ``spans`` was quick, by the device
    time its span reports: how a backend that runs elsewhere (``runs_elsewhere``) tells
    :func:`runs_quickly` which launches a waiting caller may run itself."""
    for position, span in spans:
        step = order[position]
        if type(step) is DispatchCommand and span.started is not None:
            quick = span.finished - span.started <= QUICK_DISPATCH_NANOSECONDS
            _note_speed(step.arguments.memo, step.dims, quick)


def _note_speed(memo: DispatchMemo, dims: tuple[int, int, int], quick: bool) -> None:
    """Remember whether launches of ``dims`` with ``memo``'s arguments run quickly: one
    slow launch is taken for the machine's load, two in a row for the kernel's."""
    if quick:
        memo.quick_dims, memo.slow_once = dims, False
    elif memo.slow_once or memo.quick_dims != dims:
        memo.quick_dims = None
    else:
        memo.slow_once = True
