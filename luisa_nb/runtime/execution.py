"""Running one submission on a stream's worker: the order, the readbacks, the failures.

This is where "when is host memory touched" is defined for every backend:

- uploads read host memory at submit (``staging="submit"``, done by ``Stream.submit``)
  or here, when they run (``"execute"``);
- downloads write host memory when they run (``Backend.readback == "execute"``) or, on
  backends that read back after a fence, once the submission has finished. Under
  ``staging="execute"`` pending readbacks land before any later upload of the submission
  runs, so host memory follows stream order on every backend.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from luisa_nb.backends.base import Backend, DeviceSpan, OperationFailed
from luisa_nb.runtime.commands import Command, DownloadCommand, UploadCommand
from luisa_nb.trace.records import Status
from luisa_nb.trace.trace import now


class Failure:
    """What a worker remembers about a command that raised, until ``synchronize()``."""

    def __init__(self, item_id: int, description: str, error: BaseException, skipped: int) -> None:
        self.item_id = item_id
        self.description = description
        self.error = error
        self.skipped = skipped


def run_submission(
    backend: Backend,
    commands: Sequence[Command],
    staging: str,
    failures: list[Failure],
    release_staging: Callable[[], None] | None = None,
) -> None:
    """Run ``commands`` in the backend's order; record times, readbacks and failures.
    ``release_staging`` returns the submission's staging memory once it has finished."""
    try:
        _run(backend, commands, staging, failures)
    finally:
        if release_staging is not None:
            release_staging()


def _run(
    backend: Backend, commands: Sequence[Command], staging: str, failures: list[Failure]
) -> None:
    order = backend.schedule(commands)
    fence = backend.readback == "fence"
    readbacks: list[DownloadCommand] = []
    spans: list[tuple[DeviceSpan, Command]] = []
    position = 0
    try:
        for position in range(len(order)):
            command = order[position]
            if readbacks and staging == "execute" and type(command) is UploadCommand:
                _land(backend, readbacks)
            record = command.record
            if record is not None:
                record.started = now()
            span = command.run(backend)
            if span is not None:
                spans.append((span, command))
            if fence and type(command) is DownloadCommand:
                readbacks.append(command)
            if record is not None:
                record.finished = now()
                record.status = Status.OK
        position = len(order)
        _land(backend, readbacks)
    except OperationFailed as error:
        owner = next(command for span, command in spans if span is error.span)
        _fail(order, order.index(owner), error, failures)
        return
    except Exception as error:
        _fail(order, position, error, failures)
        _finish_deferred(backend)
        return
    for span, command in spans:
        if command.record is not None:
            command.record.device_started = span.started
            command.record.device_finished = span.finished


def _finish_deferred(backend: Backend) -> None:
    """After a command raised, finish the deferred operations that ran before it (as
    they would have run on a backend that does not defer), so none is left queued."""
    with contextlib.suppress(Exception):
        backend.flush()


def _land(backend: Backend, readbacks: list[DownloadCommand]) -> None:
    """Finish deferred operations, then write pending readbacks into host memory."""
    backend.flush()
    for download in readbacks:
        download.land()
    readbacks.clear()


def _fail(
    order: Sequence[Command], position: int, error: BaseException, failures: list[Failure]
) -> None:
    """Mark ``order[position]`` failed (or, past the end, the last command) and the
    commands after it skipped."""
    position = min(position, len(order) - 1)
    failed, skipped = order[position], order[position + 1 :]
    failures.append(Failure(failed.id, failed.describe(), error, len(skipped)))
    if failed.record is not None:
        failed.record.finished = now()
        failed.record.status = Status.FAILED
        failed.record.error = f"{type(error).__name__}: {error}"
    for rest in skipped:
        if rest.record is not None:
            rest.record.status = Status.SKIPPED
