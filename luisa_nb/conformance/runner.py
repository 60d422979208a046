"""Running a conformance program on a device, under a trace that captures every byte."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.conformance.kernels import KERNELS
from luisa_nb.conformance.oracle import Observation
from luisa_nb.conformance.program import (
    DTYPE,
    MAIN_STREAM,
    Callback,
    Command,
    Copy,
    Dispatch,
    Download,
    Fill,
    HostSlice,
    Program,
    Signal,
    Submit,
    Synchronize,
    Upload,
    View,
    Wait,
)
from luisa_nb.runtime import Buffer, Device, Event, Stream
from luisa_nb.runtime.commands import Command as RuntimeCommand
from luisa_nb.trace import recorder


class ConformanceError(Exception):
    """The run left the trace without something the checks need."""


@dataclass
class ProgramRun:
    """What a device did with a program: final contents, what callbacks saw, the ids of
    the upload commands (in issue order) and the trace (``capture="full"``; ``None`` for
    a run that was not traced)."""

    program: Program
    buffers: dict[str, np.ndarray]
    hosts: dict[str, np.ndarray]
    callbacks: dict[str, list[Observation]]
    upload_ids: list[int]
    trace: AnalyzedTrace | None

    def sent(self) -> list[np.ndarray]:
        """The bytes each upload sent, as the trace captured them (``UploadCheck.staged``)."""
        sent = []
        for command_id in self.upload_ids:
            staged = self.trace.upload(command_id).staged
            if staged is None:
                record = self.trace.command(command_id)
                raise ConformanceError(
                    f"upload #{command_id} left no captured bytes in the trace (status "
                    f"{record.status.value}, error {record.error!r}); a backend must run every "
                    f"upload it is given"
                )
            sent.append(staged)
        return sent


class _Runner:
    def __init__(self, device: Device, program: Program) -> None:
        self.device = device
        self.program = program
        self.streams: dict[str, Stream] = {MAIN_STREAM: device.default_stream}
        for name in program.streams:
            if name != MAIN_STREAM:
                self.streams[name] = device.create_stream(name)
        self.buffers: dict[str, Buffer] = {}
        for spec in program.buffers:
            buffer = device.create_buffer(spec.size, DTYPE, name=spec.name)
            buffer.copy_from(spec.initial(program.name))
            self.buffers[spec.name] = buffer
        device.synchronize()
        self.hosts = {spec.name: spec.initial(program.name) for spec in program.hosts}
        self.events: dict[str, Event] = {}
        self.observed: dict[str, list[Observation]] = {name: [] for name in self.streams}
        self.upload_ids: list[int] = []

    def run(self, traced: bool) -> ProgramRun:
        trace = AnalyzedTrace(capture="full") if traced else None
        if trace is not None:
            recorder.start(trace)
        try:
            for step in self.program.steps:
                self._step(step)
            self.device.synchronize()
        finally:
            if trace is not None:
                recorder.stop(trace, self.hosts)
        return ProgramRun(
            self.program,
            {name: buffer.numpy() for name, buffer in self.buffers.items()},
            {name: host.copy() for name, host in self.hosts.items()},
            self.observed,
            self.upload_ids,
            trace,
        )

    def _step(self, step: object) -> None:
        if isinstance(step, Submit):
            commands = [self._command(command) for command in step.commands]
            self.streams[step.stream].submit(commands)
        elif isinstance(step, Synchronize):
            if step.stream is None:
                self.device.synchronize()
            else:
                self.streams[step.stream].synchronize()
        elif isinstance(step, Signal):
            event = self.events.setdefault(step.event, self.device.create_event())
            self.streams[step.stream].signal(event)
        elif isinstance(step, Wait):
            self.streams[step.stream].wait(self.events[step.event])
        elif isinstance(step, Callback):
            observe = functools.partial(_observe, self.observed[step.stream], step.name, self.hosts)
            self.streams[step.stream].add_callback(observe)
        else:
            raise TypeError(f"cannot run step {step!r}")

    def _command(self, command: Command) -> RuntimeCommand:
        if isinstance(command, Upload):
            upload = self._view(command.target).copy_from_async(self._host(command.source))
            self.upload_ids.append(upload.id)
            return upload
        if isinstance(command, Download):
            return self._view(command.source).copy_to_async(self._host(command.target))
        if isinstance(command, Copy):
            return self._view(command.source).copy_to_buffer_async(self._view(command.target))
        if isinstance(command, Fill):
            return self._view(command.target).fill_async(command.value)
        if isinstance(command, Dispatch):
            views = [self._view(view) for view in command.views]
            return KERNELS[command.kernel].dispatch_async(views[0].size, *views)
        raise TypeError(f"cannot run command {command!r}")

    def _view(self, view: View):
        return self.buffers[view.buffer].view(view.start, view.stop)

    def _host(self, part: HostSlice) -> np.ndarray:
        array = self.hosts[part.array][part.start : part.stop]
        return array if part.shape is None else array.reshape(part.shape)


def _observe(observed: list[Observation], name: str, hosts: dict[str, np.ndarray]) -> None:
    observed.append(Observation(name, {key: host.copy() for key, host in hosts.items()}))


def run_program(device: Device, program: Program, *, traced: bool = True) -> ProgramRun:
    """Run ``program`` on ``device`` and synchronize it; the trace covers the steps."""
    return _Runner(device, program).run(traced)
