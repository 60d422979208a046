"""Streams, events, and the worker thread that runs a stream's work in order.

``Stream.submit`` checks the whole command list, tells the recorder, lets the device's
staging policy plan it (:mod:`luisa_nb.runtime.staging`) and hands the runs to the worker;
it returns before any command runs.

A stream also holds an implicit command list, as luisa-python's streams do: ``add``
appends a checked command to it and ``execute`` submits it as one list. Everything that
orders work on the stream (``submit``, ``synchronize``, ``signal``, ``wait`` and
``add_callback``) first executes that list, so stream order is always program order.

A step that raises on the worker fails only itself and the rest of its run; the error is
raised by the next ``synchronize()``, and the stream keeps working. Nothing user code
raises, on the worker or in a callback, stops a worker.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from luisa_nb.errors import (
    BufferDestroyedError,
    CommandFailedError,
    CommandReuseError,
    DeviceMismatchError,
    InvalidArgumentError,
    StreamError,
)
from luisa_nb.recording.clock import now
from luisa_nb.recording.naming import variable_name
from luisa_nb.recording.recorder import Recorder, active_recorder, register_pending_finder
from luisa_nb.recording.records import PendingCommand, Status, SyncKind
from luisa_nb.runtime.callbacks import callback_thread, in_callback, wait_in_callback
from luisa_nb.runtime.commands import Command, next_id, report_submitted
from luisa_nb.runtime.execution import Executor, Failure, exception_text, runs_quickly

if TYPE_CHECKING:
    from luisa_nb.backends.base import Backend
    from luisa_nb.runtime.device import Device

CANCEL_GRACE_SECONDS = 2.0
"""How long an interrupted ``synchronize()`` waits for cancelled kernels to stop. The
kernels stay cancelled until the stream's worker has passed the interrupted work, even
when that takes longer."""

_stream_ids = itertools.count(0)
_streams_with_pending: weakref.WeakSet[Stream] = weakref.WeakSet()
"""Streams whose implicit command list was not empty when a command was last added."""
_event_ids = itertools.count(1)
_SYNCHRONIZE, _OK = SyncKind.SYNCHRONIZE, Status.OK
"""Read off the enums once: reading a member off an enum class is a Python call."""
_STOP = None


def next_stream_id() -> int:
    """A process-unique id for a stream, or for another runtime's stream in a trace."""
    return next(_stream_ids)


QUICK_RUN_DELAY_NANOSECONDS = 1_000_000
"""How long the worker leaves a quick run (:func:`~luisa_nb.runtime.execution.runs_quickly`)
queued for a caller that waits for it to run itself (:meth:`Stream.synchronize`)."""


LINGERING_DELAYS = 16
"""For how many quick-run delays after the last quick run was queued the worker keeps
looking at the queue, rather than waiting for a wake: a loop of small steps queues the
next one long before that."""


LONGEST_LOOK_NANOSECONDS = 64_000_000
"""The longest the worker waits between looks at its queue while callers keep running the
quick runs themselves: each look that finds nothing to run doubles the wait, from
:data:`QUICK_RUN_DELAY_NANOSECONDS`. A look needs the GIL, which the user's thread holds
through a loop; waiting for it, the worker was woken for nothing at each of that thread's
brief releases (a kernel's launch), about once per step of a notebook loop, at a cost to
that thread of a futex call each time (docs/backends.md: a traced step of the notebook
loop took 33.7-34.2 µs that way, 23.8-24.0 µs with these waits)."""


class WorkQueue:
    """A stream's work waiting to run, in order: runs (tuples) and other items
    (callables). Whoever runs queued work (the stream's worker, or a caller that waits
    for it: :meth:`Stream.synchronize`) holds ``running`` while it takes items and while
    they run, so items run one at a time and in order. Nothing here refers to the
    stream, so the stream can be freed while its worker waits.

    Waking the worker costs more than a quick run itself (two thread switches, and the
    GIL handed over twice), so the worker takes a quick run only once it has waited
    :data:`QUICK_RUN_DELAY_NANOSECONDS`: a loop of small synchronous steps runs on the
    user's thread and never wakes it. Any other item (a run that is not quick or holds
    staging memory, a sync point, a callback) wakes the worker at once, and it then runs
    everything queued before it too."""

    __slots__ = ("asleep", "due", "items", "look", "running", "urgent", "wakes")

    def __init__(self) -> None:
        self.items: deque = deque()
        self.running = threading.Lock()
        self.wakes: queue.SimpleQueue = queue.SimpleQueue()
        self.asleep = False
        """Whether the worker waits with no time limit: a push must wake it."""
        self.urgent = False
        """Whether an item that should run at once was pushed since the worker last took
        the queue."""
        self.due = 0
        """When the oldest queued quick run is due to be run by the worker (host clock)."""
        self.look = QUICK_RUN_DELAY_NANOSECONDS
        """How long the worker waits before its next look at an empty queue while quick
        runs are still being queued (see :data:`LONGEST_LOOK_NANOSECONDS`)."""

    def push(self, item: object) -> None:
        """Queue ``item``; wake the worker if ``item`` should run at once or the worker
        waits with no time limit."""
        items = self.items
        if type(item) is not tuple or item[1] or not runs_quickly(item[0]):
            items.append(item)
            self.urgent = True
            self.wakes.put(None)
            return
        if not items:
            self.due = now() + QUICK_RUN_DELAY_NANOSECONDS
        items.append(item)
        if self.asleep:
            self.wakes.put(None)

    def wait(self) -> None:
        """On the worker: wait until the queued items are due, or until a push may have
        made them so. A push that comes between a check and the wait sends a wake."""
        if self.items:
            if self.urgent:
                return
            left = self.due - now()
        elif now() < self.due + QUICK_RUN_DELAY_NANOSECONDS * LINGERING_DELAYS:
            left = self.look  # a loop may be pushing quick runs, and running them itself
            self.look = min(2 * left, LONGEST_LOOK_NANOSECONDS)
        else:
            self.asleep = True
            self.look = QUICK_RUN_DELAY_NANOSECONDS
            if not self.items:
                self.wakes.get()
            self.asleep = False
            return
        if left > 0:
            with contextlib.suppress(queue.Empty):
                self.wakes.get(timeout=left / 1e9)

    def due_now(self) -> bool:
        """Whether the worker should take the queue now."""
        return bool(self.items) and (self.urgent or now() >= self.due)


def _work(work: WorkQueue, failures: list[Failure], executor: Executor) -> None:
    """A stream's worker: runs the queued items in order, runs (tuples) with ``executor``
    and calls the others. Runs queued one after another are taken together, so that
    their dispatches can share one backend call."""
    items, running = work.items, work.running
    while True:
        work.wait()
        if not work.due_now():
            continue
        with running:
            work.urgent = False
            if items:  # work nobody else ran: look often again
                work.look = QUICK_RUN_DELAY_NANOSECONDS
            while items:
                item = items.popleft()
                if item is _STOP:
                    return
                try:
                    if type(item) is tuple:
                        runs = [item]
                        while items and type(items[0]) is tuple:
                            runs.append(items.popleft())
                        executor.execute_runs(runs)
                    else:
                        item()
                except BaseException as error:
                    failures.append(Failure(0, "stream work item", error, 0))
                item = runs = None  # drop the finished work, so its stream can be freed


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
        if in_callback():
            wait_in_callback(self.device, f"synchronize() of event #{self.id}", self.synchronize)
            return
        recorder = active_recorder()
        token = recorder.sync_issued(SyncKind.EVENT_SYNCHRONIZE, None, self.id, next_id())
        self._wait_for(self._signalled)
        recorder.sync_completed(token, Status.OK)

    def __repr__(self) -> str:
        return f"<Event #{self.id} signalled {self._signalled}, reached {self._reached}>"


class Stream:
    """An in-order queue of commands with its own worker thread."""

    # Slots: the recorder's C hook reads ``id`` at its offset, once per submission.
    __slots__ = (
        "__weakref__",
        "_executor",
        "_failures",
        "_pending",
        "_pending_lock",
        "_transfers_submit",
        "_work_queue",
        "_worker",
        "_worker_lock",
        "device",
        "id",
        "name",
    )

    def __init__(self, device: Device, name: str | None = None) -> None:
        if name is not None and not isinstance(name, str):
            raise InvalidArgumentError(
                f"a stream's name is a str, got {type(name).__name__} {name!r:.40}; pass "
                f"str({name!r:.40}) or leave it out"
            )
        self.id = next_stream_id()
        self.device = device
        self.name = name or f"stream{self.id}"
        self._work_queue = WorkQueue()
        self._failures: list[Failure] = []
        self._executor = Executor(device.backend, device.transfers, self._failures)
        self._worker: threading.Thread | None = None
        self._worker_lock = threading.Lock()
        self._pending: list[Command] = []
        self._pending_lock = threading.Lock()
        self._transfers_submit = device.transfers.submit

    def _enqueue(self, item: Callable[[], None]) -> None:
        if self._worker is None:
            self._start_worker()
        self._work_queue.push(item)

    def _start_worker(self) -> None:
        """Start the worker on first use; the lock keeps two first submits to one worker."""
        with self._worker_lock:
            if self._worker is not None:
                return
            worker = threading.Thread(
                target=_work,
                args=(self._work_queue, self._failures, self._executor),
                name=f"luisa_nb {self.name}",
                daemon=True,
            )
            worker.start()
            # Not at exit: work submitted by atexit handlers (luisa's final synchronize)
            # still needs the worker; a daemon thread ends with the process anyway.
            weakref.finalize(self, self._work_queue.push, _STOP).atexit = False
            self._worker = worker

    def _claimed(self, commands: Iterable[Command]) -> list[Command]:
        """``commands`` as a list, each checked and marked as submitted to this stream
        (its ``stream_id``); a bad one raises, and then none of them is marked."""
        try:
            commands = list(commands)
        except TypeError:
            raise InvalidArgumentError(
                f"stream {self.name!r}: submit takes a list of commands (from the *_async "
                f"methods), got {type(commands).__name__}"
            ) from None
        stream_id, device = self.id, self.device
        checked_views = None
        position = 0
        try:
            for position, command in enumerate(commands):  # noqa: B007 (kept for the undo)
                if not isinstance(command, Command):
                    raise InvalidArgumentError(
                        f"stream {self.name!r} can only submit commands (from the *_async "
                        f"methods), got {type(command).__name__}"
                    )
                if command.stream_id is not None:  # submitted before, or earlier in this list
                    raise CommandReuseError(
                        f"command #{command.id} ({command.describe()}) was already submitted; "
                        f"call its *_async method again to make a new command"
                    )
                if command.device is not device:
                    raise DeviceMismatchError(
                        f"command #{command.id} ({command.describe()}) belongs to device "
                        f"{command.device.name!r}, not to stream {self.name!r}'s device "
                        f"{device.name!r}"
                    )
                views = command.views
                if views is not checked_views:  # commands of one kernel share their views
                    checked_views = views
                    for view in views:
                        view.buffer.check_alive()
                command.stream_id = stream_id
        except BaseException:
            for command in commands[:position]:
                command.stream_id = None
            raise
        return commands

    def submit(self, commands: Iterable[Command]) -> None:
        """Run ``commands`` in order after everything submitted or added before; returns at
        once (under ``staging="submit"`` after reading every upload's host bytes)."""
        self.device.check_open()
        commands = self._claimed(commands)
        if self._pending:
            try:
                self.execute()
            except BaseException:
                for command in commands:  # not submitted after all
                    command.stream_id = None
                raise
        self._submit(commands)

    def _submit_made(self, command: Command) -> None:
        """``submit([command])`` for a command just made by a ``*_async`` call on this
        stream's device (the synchronous forms): the list checks, and the check that its
        buffers are alive, are already true of it."""
        if self.device.closed:
            self.device.check_open()
        if self._pending:
            self.execute()
        command.stream_id = self.id
        self._submit((command,))

    def add(self, command: Command) -> None:
        """Append ``command`` to this stream's implicit command list, which ``execute()``
        (or anything else that orders the stream) submits. Under ``staging="submit"`` its
        host memory is read then, not now."""
        self.device.check_open()
        (command,) = self._claimed((command,))
        with self._pending_lock:
            if not self._pending:
                _streams_with_pending.add(self)
            self._pending.append(command)

    @property
    def pending(self) -> tuple[Command, ...]:
        """The commands added since the last ``execute()``."""
        return tuple(self._pending)

    def execute(self) -> None:
        """Submit the implicit command list as one list; nothing happens if it is empty."""
        with self._pending_lock:
            commands, self._pending = self._pending, []
        if not commands:
            return
        try:
            for command in commands:
                for view in command.views:
                    view.buffer.check_alive()
        except BufferDestroyedError as error:
            raise BufferDestroyedError(
                f"{error}. The {len(commands)} command(s) added to stream {self.name!r} since "
                f"the last execute() were dropped, none of them ran"
            ) from None
        self.device.check_open()
        self._submit(commands)

    def _submit(self, commands: Sequence[Command]) -> None:
        recorder = active_recorder()
        if recorder.recording:
            report_submitted(recorder, self, commands)
        if self._worker is None:
            self._start_worker()
        self._transfers_submit(commands, recorder, self._work_queue.push)

    def synchronize(self) -> None:
        """Block until everything submitted so far has run; raise the failures since the
        last synchronize. Interrupting the wait (Ctrl-C) cancels the running kernels.
        Called in a callback of this device, it raises :class:`StreamError`."""
        if in_callback():
            wait_in_callback(
                self.device, f"synchronize() of stream {self.name!r}", self.synchronize
            )
            return
        self.execute()
        recorder = active_recorder()
        token = recorder.sync_issued(_SYNCHRONIZE, self, None, next_id())
        try:
            ran = self._run_queued()
        except KeyboardInterrupt:
            recorder.sync_completed(token, Status.CANCELLED)
            raise
        if not ran:
            self._drain(recorder, token)
        recorder.sync_completed(token, _OK)
        if self._failures:
            raise failure_error(self._take_failures(), self.name)

    def _run_queued(self) -> bool:
        """Run the stream's queued work on this thread, which would only wait for it, when
        the worker is not running any and every queued item is a quick run
        (:func:`~luisa_nb.runtime.execution.runs_quickly`); returns whether it did (an
        empty queue included). Work queued by other threads meanwhile is left to the
        worker. Ctrl-C during a step fails it, skips the rest of its run and raises
        ``KeyboardInterrupt`` here."""
        work = self._work_queue
        running = work.running
        if not running.acquire(False):
            return False
        try:
            items = work.items
            if not items:
                return True
            runs = list(items)  # pushes only append, and only a holder of `running` pops
            for run in runs:
                if type(run) is not tuple or not runs_quickly(run[0]):
                    return False
            for _ in runs:
                items.popleft()
            failures = self._failures
            known = len(failures)
            self._executor.execute_runs(runs)
        finally:
            running.release()
        if len(failures) > known and any(
            isinstance(failure.error, KeyboardInterrupt) for failure in failures[known:]
        ):
            failures[known:] = [
                failure
                for failure in failures[known:]
                if not isinstance(failure.error, KeyboardInterrupt)
            ]
            raise KeyboardInterrupt
        return True

    def _drain(self, recorder: Recorder, token: object) -> None:
        done = threading.Event()
        self._enqueue(done.set)
        try:
            done.wait()
        except KeyboardInterrupt:
            backend, failures = self.device.backend, self._failures
            resumed = threading.Event()
            _interrupted_waits.cancel(backend)

            def resume() -> None:  # on the worker, once the cancelled work has stopped
                failures[:] = [f for f in failures if not f.cancelled]
                _interrupted_waits.resume(backend)
                resumed.set()

            self._enqueue(resume)
            try:
                resumed.wait(CANCEL_GRACE_SECONDS)
            finally:
                recorder.sync_completed(token, Status.CANCELLED)
            raise

    def _take_failures(self) -> list[Failure]:
        failures = []
        while self._failures:  # pop one by one: the worker may append meanwhile
            failures.append(self._failures.pop(0))
        return failures

    def signal(self, event: Event) -> None:
        """Mark this point of the stream on ``event``."""
        self._check_event(event)
        self.execute()
        event._signalled += 1
        value = event._signalled
        recorder = active_recorder()
        token = recorder.sync_issued(SyncKind.SIGNAL, self, event.id, next_id())

        def reach() -> None:
            recorder.sync_completed(token, Status.OK)
            event._complete(value)

        self._enqueue(reach)

    def wait(self, event: Event) -> None:
        """Make this stream's later commands wait for ``event``'s latest signal."""
        self._check_event(event)
        self.execute()
        value = event._signalled
        recorder = active_recorder()
        token = recorder.sync_issued(SyncKind.WAIT, self, event.id, next_id())

        def wait() -> None:
            event._wait_for(value)
            recorder.sync_completed(token, Status.OK)

        self._enqueue(wait)

    def add_callback(self, function: Callable[[], object]) -> None:
        """Call ``function()`` on the worker once the work before it has run; what it
        raises is raised by the next ``synchronize()``. It cannot wait for this device
        (see :mod:`luisa_nb.runtime.callbacks`)."""
        if not callable(function):
            raise InvalidArgumentError(f"add_callback needs a callable, got {function!r}")
        self.execute()
        recorder = active_recorder()
        callback_id = next_id()
        token = recorder.sync_issued(SyncKind.CALLBACK, self, None, callback_id)
        failures = self._failures

        def call() -> None:
            callback_thread.stream = self
            try:
                function()
            except BaseException as error:
                name = getattr(function, "__qualname__", None) or type(function).__name__
                failures.append(Failure(callback_id, f"callback {name}", error, 0))
                recorder.sync_completed(token, Status.FAILED, exception_text(error))
            else:
                recorder.sync_completed(token, Status.OK)
            finally:
                callback_thread.stream = None

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


class _InterruptedWaits:
    """Per backend, the interrupted ``synchronize()`` calls whose cancelled work has not
    stopped yet: the backend's kernels stay cancelled until the last of them has."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: weakref.WeakKeyDictionary[Backend, int] = weakref.WeakKeyDictionary()

    def cancel(self, backend: Backend) -> None:
        with self._lock:
            self._counts[backend] = self._counts.get(backend, 0) + 1
            backend.cancel()

    def resume(self, backend: Backend) -> None:
        with self._lock:
            self._counts[backend] -= 1
            if not self._counts[backend]:
                del self._counts[backend]
                backend.resume()


_interrupted_waits = _InterruptedWaits()


def submit_one(command: Command, stream: Stream | None, sync: bool) -> None:
    """Submit ``command`` (just made by a ``*_async`` call) on ``stream``, default its
    device's stream; with ``sync``, wait for it: the synchronous forms of commands."""
    if stream is None:
        stream = command.device.default_stream
        stream._submit_made(command)
    else:
        stream.submit([command])
    if sync:
        stream.synchronize()


def check_stream(stream: object, call: str) -> None:
    """Raise :class:`InvalidArgumentError` unless ``stream``, the ``stream=`` argument of
    ``call`` (None stands for the default stream, and is not checked), is a
    :class:`Stream`."""
    if not isinstance(stream, Stream):
        raise InvalidArgumentError(
            f"{call}: stream= takes a Stream (from device.create_stream() or luisa.Stream()) "
            f"or None for the default stream, got {type(stream).__name__} {stream!r:.60}"
        )


def failure_error(failures: list[Failure], stream_name: str) -> CommandFailedError:
    """One error for the failures since the last synchronize, naming each of them."""
    first = failures[0]
    message = f"{_failure_line(first, stream_name)}"
    if first.skipped:
        message += f"; the {first.skipped} later command(s) of its submission were skipped"
    if len(failures) > 1:
        later = "; ".join(_failure_line(failure) for failure in failures[1:])
        message += f"; later failures: {later}"
    exception = CommandFailedError(
        message, first.item_id, [(f.item_id, f.description, f.error) for f in failures]
    )
    exception.__cause__ = first.error
    return exception


def _failure_line(failure: Failure, stream_name: str | None = None) -> str:
    where = "" if stream_name is None else f" on stream {stream_name!r}"
    text = exception_text(failure.error)
    return f"command #{failure.item_id} ({failure.description}) failed{where}: {text}"


def pending_commands(namespace: Mapping[str, object]) -> list[PendingCommand]:
    """The commands added to streams' implicit command lists and not yet executed, their
    unnamed buffers named after the variables of ``namespace``."""
    return [
        PendingCommand(
            command.id, command.kind.value, _what_it_does(command, namespace), stream.name
        )
        for stream in list(_streams_with_pending)
        for command in stream.pending
    ]


def _what_it_does(command: Command, namespace: Mapping[str, object]) -> str:
    """``upload previous``, ``dispatch shade(frame, previous)``: the kind, the kernel and
    the buffers, by name."""
    names = (
        view.buffer.name or variable_name(view.buffer, (namespace,)) or f"buffer{view.buffer.id}"
        for view in command.views
    )
    buffers = ", ".join(dict.fromkeys(names))
    kernel = getattr(command, "name", None)
    if isinstance(kernel, str):
        return f"{command.kind.value} {kernel}({buffers})"
    return f"{command.kind.value} {buffers}"


register_pending_finder(pending_commands)
