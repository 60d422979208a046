"""Streams, events, and the worker thread that runs a stream's commands in order.

``Stream.submit`` checks the whole command list, applies the device's staging policy,
hands the list to the worker and returns before any command runs. A command that raises
on the worker fails only itself and the rest of its submission; the error is raised by
the next ``synchronize()``, and the stream keeps working.
"""

from __future__ import annotations

import functools
import itertools
import queue
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from luisa_nb.errors import (
    CommandFailedError,
    CommandReuseError,
    DeviceMismatchError,
    InvalidArgumentError,
    StreamError,
)
from luisa_nb.runtime.commands import Command, UploadCommand, next_id
from luisa_nb.runtime.execution import Failure, run_submission
from luisa_nb.runtime.staging import StagingBlock
from luisa_nb.trace.recorder import active_trace, next_seq
from luisa_nb.trace.records import BufferInfo, Status, StreamInfo, SyncKind, SyncRecord
from luisa_nb.trace.trace import Trace, now

if TYPE_CHECKING:
    from luisa_nb.runtime.device import Device

_stream_ids = itertools.count(0)
_event_ids = itertools.count(1)
_submission_ids = itertools.count(1)
_STOP = None


def _work(items: queue.SimpleQueue) -> None:
    while True:
        item = items.get()
        if item is _STOP:
            return
        item()
        item = None  # drop the finished work before blocking, so its stream can be freed


class Event:
    """A point in a stream that other streams (``wait``) or the host (``synchronize``)
    can wait for. Each ``signal`` moves the point; a wait covers the latest signal."""

    def __init__(self, device: Device) -> None:
        self.id = next(_event_ids)
        self.device = device
        self._signalled = 0
        self._reached = 0
        self._condition = threading.Condition()

    def _complete(self, value: int) -> None:
        with self._condition:
            self._reached = max(self._reached, value)
            self._condition.notify_all()

    def _wait_for(self, value: int) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self._reached >= value)

    def synchronize(self) -> None:
        """Block the host until the latest signal of this event has been reached."""
        trace = active_trace()
        record = None
        if trace is not None:
            record = SyncRecord(
                id=next_id(),
                seq=next_seq(),
                kind=SyncKind.EVENT_SYNCHRONIZE,
                stream=None,
                event=self.id,
                issued=now(),
            )
            trace.add(record)
        self._wait_for(self._signalled)
        if record is not None:
            record.completed = now()
            record.status = Status.OK

    def __repr__(self) -> str:
        return f"<Event #{self.id} signalled {self._signalled}, reached {self._reached}>"


class Stream:
    """An in-order queue of commands with its own worker thread."""

    def __init__(self, device: Device, name: str | None = None) -> None:
        self.id = next(_stream_ids)
        self.device = device
        self.name = name or f"stream{self.id}"
        self._items: queue.SimpleQueue = queue.SimpleQueue()
        self._failures: list[Failure] = []
        self._last_seq = 0
        self._worker: threading.Thread | None = None

    def _enqueue(self, item: Callable[[], None]) -> None:
        if self._worker is None:
            self._worker = threading.Thread(
                target=_work, args=(self._items,), name=f"luisa_nb {self.name}", daemon=True
            )
            self._worker.start()
            weakref.finalize(self, self._items.put, _STOP)
        self._items.put(item)

    def _check(self, commands: list[Command]) -> None:
        seen: set[int] = set()
        for command in commands:
            if not isinstance(command, Command):
                raise InvalidArgumentError(
                    f"stream {self.name!r} can only submit commands (from the *_async methods), "
                    f"got {type(command).__name__}"
                )
            if command.stream_id is not None or command.id in seen:
                raise CommandReuseError(
                    f"command #{command.id} ({command.describe()}) was already submitted; call "
                    f"its *_async method again to make a new command"
                )
            seen.add(command.id)
            if command.device is not self.device:
                raise DeviceMismatchError(
                    f"command #{command.id} ({command.describe()}) belongs to device "
                    f"{command.device.name!r}, not to stream {self.name!r}'s device "
                    f"{self.device.name!r}"
                )
            for view in command.views:
                view.buffer.check_alive()

    def _record(self, trace: Trace, commands: list[Command]) -> None:
        submission = next(_submission_ids)
        submitted = now()
        staging = self.device.staging
        if self.id not in trace.streams:
            trace.streams[self.id] = StreamInfo(self.id, self.device.name, self.name)
        for index, command in enumerate(commands):
            for view in command.views:
                buffer = view.buffer
                if buffer.id not in trace.buffers:
                    trace.buffers[buffer.id] = BufferInfo(
                        buffer.id,
                        buffer.nbytes,
                        buffer.dtype.str,
                        buffer.size,
                        self.device.name,
                        buffer.name,
                    )
            seq = next_seq()
            trace.add(
                command.make_record(trace, seq, self.id, submission, index, staging, submitted)
            )
            self._last_seq = seq

    def submit(self, commands: Iterable[Command]) -> None:
        """Run ``commands`` in order after everything submitted before; returns at once."""
        commands = list(commands)
        self._check(commands)
        for command in commands:
            command.stream_id = self.id
        trace = active_trace()
        if trace is not None:
            self._record(trace, commands)
        if self.device.staging == "submit":
            self._stage_and_enqueue(commands)
        else:
            self._enqueue_run(commands, [])

    def _stage_and_enqueue(self, commands: list[Command]) -> None:
        """Copy every upload into staging now. With a finite heap, an upload that does not
        fit waits for earlier work to free space; the commands staged before it are
        enqueued first, as their own command list, so that waiting cannot deadlock."""
        heap = self.device.staging_heap
        start = 0
        held: list[StagingBlock] = []
        for index, command in enumerate(commands):
            if type(command) is not UploadCommand:
                continue
            if heap is None:
                command.stage()
                continue
            wanted = min(command.source.nbytes, heap.capacity)
            block = heap.try_reserve(wanted)
            if block is None:
                if held:
                    self._enqueue_run(commands[start:index], held)
                    start, held = index, []
                block = heap.reserve(wanted)
            command.stage(block.memory)
            held.append(block)
        self._enqueue_run(commands[start:], held)

    def _enqueue_run(self, commands: list[Command], staged: list[StagingBlock]) -> None:
        device = self.device
        release = functools.partial(device.staging_heap.release, staged) if staged else None
        self._enqueue(
            functools.partial(
                run_submission, device.backend, commands, device.staging, self._failures, release
            )
        )

    def _sync_record(self, kind: SyncKind, event: Event | None = None) -> SyncRecord | None:
        trace = active_trace()
        if trace is None:
            return None
        record = SyncRecord(
            id=next_id(),
            seq=next_seq(),
            kind=kind,
            stream=self.id,
            event=None if event is None else event.id,
            issued=now(),
        )
        if kind is SyncKind.SYNCHRONIZE:
            record.covers = self._last_seq
        else:
            self._last_seq = record.seq
        trace.add(record)
        return record

    def synchronize(self) -> None:
        """Block until every command submitted so far has run; raise the first failure."""
        record = self._sync_record(SyncKind.SYNCHRONIZE)
        done = threading.Event()
        self._enqueue(done.set)
        done.wait()
        if record is not None:
            record.completed = now()
            record.status = Status.OK
        if self._failures:
            failures = []
            while self._failures:  # pop one by one: the worker may append meanwhile
                failures.append(self._failures.pop(0))
            raise _exception(failures, self.name)

    def signal(self, event: Event) -> None:
        """Mark this point of the stream on ``event``."""
        self._check_event(event)
        event._signalled += 1
        value = event._signalled
        record = self._sync_record(SyncKind.SIGNAL, event)

        def reach() -> None:
            _complete(record)
            event._complete(value)

        self._enqueue(reach)

    def wait(self, event: Event) -> None:
        """Make this stream's later commands wait for ``event``'s latest signal."""
        self._check_event(event)
        value = event._signalled
        record = self._sync_record(SyncKind.WAIT, event)

        def wait() -> None:
            event._wait_for(value)
            _complete(record)

        self._enqueue(wait)

    def add_callback(self, function: Callable[[], object]) -> None:
        """Call ``function()`` on the worker once the commands before it have run."""
        if not callable(function):
            raise InvalidArgumentError(f"add_callback needs a callable, got {function!r}")
        record = self._sync_record(SyncKind.CALLBACK)
        callback_id = next_id() if record is None else record.id
        failures = self._failures

        def call() -> None:
            try:
                function()
            except Exception as error:
                name = getattr(function, "__qualname__", repr(function))
                failures.append(Failure(callback_id, f"callback {name}", error, 0))
                if record is not None:
                    record.status = Status.FAILED
                    record.error = f"{type(error).__name__}: {error}"
            _complete(record)

        self._enqueue(call)

    def _check_event(self, event: Event) -> None:
        if not isinstance(event, Event):
            raise InvalidArgumentError(f"expected an Event, got {type(event).__name__}")
        if event.device is not self.device:
            raise StreamError(
                f"event #{event.id} belongs to device {event.device.name!r}; stream "
                f"{self.name!r} is on {self.device.name!r}"
            )

    @contextmanager
    def scope(self) -> Iterator[Stream]:
        """``with stream.scope() as s: s.submit([...])`` synchronizes when the block ends."""
        yield self
        self.synchronize()

    def __repr__(self) -> str:
        return f"<Stream {self.name!r} on {self.device.name}>"


def _exception(failures: list[Failure], stream_name: str) -> CommandFailedError:
    """The error for the first failure since the last synchronize; later ones are counted."""
    failure = failures[0]
    message = (
        f"command #{failure.item_id} ({failure.description}) failed on stream "
        f"{stream_name!r}: {type(failure.error).__name__}: {failure.error}"
    )
    if failure.skipped:
        message += f"; the {failure.skipped} later command(s) of its submission were skipped"
    if len(failures) > 1:
        later = ", ".join(f"#{f.item_id}" for f in failures[1:])
        message += f"; later failures: {later} (see the trace for each)"
    exception = CommandFailedError(message, failure.item_id)
    exception.__cause__ = failure.error
    return exception


def _complete(record: SyncRecord | None) -> None:
    if record is not None:
        record.completed = now()
        if record.status is Status.PENDING:
            record.status = Status.OK
