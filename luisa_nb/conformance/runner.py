"""Running a conformance program on a device, under a trace that captures every byte.

Failures raised by a synchronize (:class:`~luisa_nb.errors.CommandFailedError`, the only
exception a correct program may meet) are kept with the synchronize's key; anything else
propagates. The branches of a :class:`~luisa_nb.conformance.program.Concurrent` step run
on threads started together. With ``timeout``, a run that has not finished by then is
reported as a hang instead of blocking the caller.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.conformance.kernels import ELEMENT_DTYPES, KERNELS
from luisa_nb.conformance.oracle import Observation
from luisa_nb.conformance.program import (
    CALLBACK_ERRORS,
    DTYPE,
    FINAL_SYNC,
    LAYOUTS,
    MAIN_STREAM,
    ArraySpec,
    Callback,
    Concurrent,
    Copy,
    Dispatch,
    Download,
    Fill,
    HostSlice,
    Program,
    ProgramCommand,
    SerialStep,
    Signal,
    Submit,
    Synchronize,
    SyncKey,
    Upload,
    View,
    Wait,
)
from luisa_nb.errors import CommandFailedError
from luisa_nb.recording import Status, recorder
from luisa_nb.runtime import Buffer, BufferView, Device, Event, Stream
from luisa_nb.runtime.commands import Command

BRANCH_TIMEOUT_SECONDS = 60.0
"""How long the threads of a :class:`Concurrent` step may take to issue their steps."""


class ConformanceError(Exception):
    """The run left the trace without something the checks need, or did not finish."""


@dataclass
class ProgramRun:
    """What a device did with a program: final contents, what callbacks saw, the ids of
    the upload commands (in issue order) and the trace (``capture="full"``; ``None`` for
    a run that was not traced). ``command_ids`` are the ids of ``Program.commands()`` in
    the trace (the runtime's when not traced), ``runtime_ids`` the runtime's (which errors
    name), ``failures`` what each synchronize raised, ``stream_ids`` the
    runtime id of each program stream."""

    program: Program
    buffers: dict[str, np.ndarray]
    hosts: dict[str, np.ndarray]
    callbacks: dict[str, list[Observation]]
    upload_ids: list[int]
    trace: AnalyzedTrace | None
    command_ids: list[int] = field(default_factory=list)
    failures: dict[SyncKey, CommandFailedError] = field(default_factory=dict)
    stream_ids: dict[str, int] = field(default_factory=dict)
    runtime_ids: list[int] = field(default_factory=list)

    def sent(self) -> list[np.ndarray | None]:
        """The bytes each upload sent, as the trace captured them (``UploadCheck.staged``);
        ``None`` for an upload the trace says was skipped."""
        sent: list[np.ndarray | None] = []
        for command_id in self.upload_ids:
            record = self.trace.command(command_id)
            staged = self.trace.upload(command_id).staged
            if record.status is Status.SKIPPED:
                sent.append(None)
            elif staged is not None:
                sent.append(staged)
            elif record.host is not None and record.host.nbytes == 0:
                sent.append(np.zeros(0, DTYPE))
            else:
                raise ConformanceError(
                    f"upload #{command_id} left no captured bytes in the trace (status "
                    f"{record.status.value}, error {record.error!r}); a backend must run every "
                    f"upload it is given"
                )
        return sent


class _Runner:
    def __init__(self, device: Device, program: Program) -> None:
        self.device = device
        self.program = program
        commands = list(program.commands())
        self.command_ids = [-1] * len(commands)
        self.uploads = [i for i, command in enumerate(commands) if isinstance(command, Upload)]
        self.failures: dict[SyncKey, CommandFailedError] = {}
        self.streams: dict[str, Stream] = {}
        self.buffers: dict[str, Buffer] = {}
        self.layouts: dict[str, str] = {}
        self.hosts: dict[str, np.ndarray] = {}
        self.events: dict[str, Event] = {}
        self.observed: dict[str, list[Observation]] = {}
        self.trace: AnalyzedTrace | None = None

    def _set_up(self) -> None:
        """Streams, buffers holding their first contents, and host arrays."""
        device, program = self.device, self.program
        self.streams[MAIN_STREAM] = device.default_stream
        for name in program.streams:
            if name != MAIN_STREAM:
                self.streams[name] = device.create_stream(name)
        for spec in program.buffers:
            buffer = _create_buffer(device, spec)
            buffer.copy_from(spec.initial(program.name).view(buffer.dtype))
            self.buffers[spec.name] = buffer
            self.layouts[spec.name] = spec.layout
        device.synchronize()
        self.hosts.update((spec.name, spec.initial(program.name)) for spec in program.hosts)
        self.observed.update((name, []) for name in self.streams)

    def run(self, traced: bool) -> ProgramRun:
        self._set_up()
        self.trace = AnalyzedTrace(capture="full") if traced else None
        if self.trace is not None:
            recorder.start(self.trace)
        try:
            ordinal = 0
            for index, step in enumerate(self.program.steps):
                if isinstance(step, Concurrent):
                    ordinal = self._concurrent(index, step, ordinal)
                else:
                    ordinal = self._step((index,), step, ordinal)
            self._synchronize(FINAL_SYNC, None)
        finally:
            self.stop_trace()
        runtime_ids = list(self.command_ids)
        if self.trace is not None:  # the trace numbers its records from 1
            numbers = self.trace.numbers_of(runtime_ids)
            self.command_ids = [-1 if number is None else number for number in numbers]
        return ProgramRun(
            self.program,
            {name: buffer.numpy().view(DTYPE).reshape(-1) for name, buffer in self.buffers.items()},
            {name: host.copy() for name, host in self.hosts.items()},
            self.observed,
            [self.command_ids[i] for i in self.uploads],
            self.trace,
            list(self.command_ids),
            dict(self.failures),
            {name: stream.id for name, stream in self.streams.items()},
            runtime_ids,
        )

    def stop_trace(self) -> None:
        if self.trace is not None:
            recorder.stop(self.trace, self.hosts)

    def _step(self, key: SyncKey, step: SerialStep, ordinal: int) -> int:
        """Issue ``step``, whose first command is command ``ordinal``; the next ordinal."""
        if isinstance(step, Submit):
            commands = []
            for command in step.commands:
                runtime_command = self._command(command)
                self.command_ids[ordinal] = runtime_command.id
                commands.append(runtime_command)
                ordinal += 1
            self.streams[step.stream].submit(commands)
        elif isinstance(step, Synchronize):
            self._synchronize(key, step.stream)
        elif isinstance(step, Signal):
            self.streams[step.stream].signal(self._event(step.event))
        elif isinstance(step, Wait):
            self.streams[step.stream].wait(self._event(step.event))
        elif isinstance(step, Callback):
            callback = _callback(self.observed[step.stream], step, self.hosts)
            self.streams[step.stream].add_callback(callback)
        else:
            raise TypeError(f"cannot run step {step!r}")
        return ordinal

    def _event(self, name: str) -> Event:
        """Event ``name``, made when first signalled or waited for."""
        if name not in self.events:
            self.events[name] = self.device.create_event()
        return self.events[name]

    def _synchronize(self, key: SyncKey, stream: str | None) -> None:
        try:
            if stream is None:
                self.device.synchronize()
            else:
                self.streams[stream].synchronize()
        except CommandFailedError as error:
            self.failures[key] = error

    def _concurrent(self, index: int, step: Concurrent, ordinal: int) -> int:
        """Issue each branch from its own thread, all started at once; the next ordinal."""
        lock: contextlib.AbstractContextManager = (
            threading.Lock() if step.locked else contextlib.nullcontext()
        )
        start = threading.Barrier(len(step.branches))
        errors: list[BaseException] = []

        def issue(number: int, branch: tuple[SerialStep, ...], first: int) -> None:
            try:
                start.wait(BRANCH_TIMEOUT_SECONDS)
                position = first
                for inner, branch_step in enumerate(branch):
                    with lock:
                        position = self._step((index, number, inner), branch_step, position)
            except BaseException as error:
                errors.append(error)

        threads = []
        for number, branch in enumerate(step.branches):
            name = f"conformance step {index + 1} thread {number}"
            thread = threading.Thread(
                target=issue, args=(number, branch, ordinal), name=name, daemon=True
            )
            threads.append(thread)
            ordinal += sum(len(s.commands) for s in branch if isinstance(s, Submit))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(BRANCH_TIMEOUT_SECONDS)
            if thread.is_alive():
                raise ConformanceError(
                    f"{thread.name} did not finish its steps within {BRANCH_TIMEOUT_SECONDS} s: "
                    f"a submit or synchronize hangs"
                )
        if errors:
            raise errors[0]
        return ordinal

    def _command(self, command: ProgramCommand) -> Command:
        if isinstance(command, Upload):
            view = self._view(command.target)
            return view.copy_from_async(self._host(command.source, view.dtype))
        if isinstance(command, Download):
            view = self._view(command.source)
            return view.copy_to_async(self._host(command.target, view.dtype))
        if isinstance(command, Copy):
            return self._view(command.source).copy_to_buffer_async(self._view(command.target))
        if isinstance(command, Fill):
            return self._view(command.target).fill_async(command.value)
        if isinstance(command, Dispatch):
            views = [self._view(view) for view in command.views]
            first = views[0]
            size = (first.width, first.height) if first is self._image(first) else first.size
            return KERNELS[command.kernel].dispatch_async(size, *views)
        raise TypeError(f"cannot run command {command!r}")

    def _view(self, view: View) -> BufferView:
        """The elements of ``view`` (a range of floats); all of an image is the image,
        which kernels take as one."""
        buffer, per = self.buffers[view.buffer], LAYOUTS[self.layouts[view.buffer]]
        if view.start % per or view.stop % per:
            raise ConformanceError(f"view {view} does not cover whole {per}-float elements")
        if self._image(buffer) is buffer and (view.start, view.stop) == (0, buffer.size):
            return buffer
        return buffer.view(view.start // per, view.stop // per)

    @staticmethod
    def _image(view: BufferView) -> BufferView | None:
        return view if getattr(view, "__lnb_image__", False) else None

    def _host(self, part: HostSlice, dtype: np.dtype = DTYPE) -> np.ndarray:
        """The host floats of ``part``, seen as elements of ``dtype`` (a buffer's)."""
        array = self.hosts[part.array][part.start : part.stop]
        if dtype != DTYPE:
            return array.view(dtype)
        return array if part.shape is None else array.reshape(part.shape)


def _create_buffer(device: Device, spec: ArraySpec) -> Buffer:
    """A buffer of ``spec``'s floats, held as its layout says."""
    if spec.layout == "image":
        return device.create_image(spec.size // 8, 2, 4, "float", name=spec.name)
    dtype = DTYPE if spec.layout == "float" else ELEMENT_DTYPES[spec.layout]
    return device.create_buffer(spec.size // LAYOUTS[spec.layout], dtype, name=spec.name)


def _callback(
    observed: list[Observation], step: Callback, hosts: dict[str, np.ndarray]
) -> Callable[[], None]:
    """The function a :class:`Callback` step adds: it records what it sees, then raises
    if the step says so. Its ``__qualname__`` is ``repr(step.name)``, which is how the
    runtime names it in a failure."""
    names = tuple(hosts) if step.hosts is None else step.hosts

    def callback() -> None:
        observed.append(Observation(step.name, {name: hosts[name].copy() for name in names}))
        if step.raises is not None:
            raise CALLBACK_ERRORS[step.raises](f"callback {step.name!r} raises on purpose")

    callback.__qualname__ = repr(step.name)
    return callback


def run_program(
    device: Device, program: Program, *, traced: bool = True, timeout: float | None = None
) -> ProgramRun:
    """Run ``program`` on ``device`` and synchronize it; the trace covers the steps. With
    ``timeout`` (seconds), raise :class:`ConformanceError` if the run has not finished
    by then (the run is left behind on its thread, its trace stopped)."""
    runner = _Runner(device, program)
    if timeout is None:
        return runner.run(traced)
    outcome: list[ProgramRun | BaseException] = []

    def run() -> None:
        try:
            outcome.append(runner.run(traced))
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=run, name=f"conformance {program.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        runner.stop_trace()
        raise ConformanceError(
            f"program {program.name!r} on backend {device.name!r} "
            f"(staging={device.staging!r}) did not finish within {timeout} s: a submit or "
            f"synchronize hangs"
        )
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]
