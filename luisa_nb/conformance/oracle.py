"""The oracle: a pure-numpy, in-order interpreter of conformance programs.

:func:`predict` runs a :class:`~luisa_nb.conformance.program.Program` one step at a time
in issue order, which for a program free of undefined races is also a valid stream order
(a wait only ever waits for a signal issued before it); the branches of a
:class:`~luisa_nb.conformance.program.Concurrent` step run one after another, which
gives the same results as any interleaving because they share no memory. It predicts
every buffer, every host array, what each callback sees, the status of every command,
the failures each synchronize raises and, for each upload, the bytes stream order says
it sends. Three modes say which bytes an upload actually sends:

- ``"execute"``: the host bytes at that point of stream order (``staging="execute"``);
- ``"submit"``: the host bytes when its list was submitted, assuming that no work the
  host has not synchronized with has run yet (what LuisaCompute's CPU, DX and Metal
  backends do to one command list; across lists it is the worst case of a race);
- ``"as-sent"``: the bytes given in ``sent``, one array per upload in issue order (what a
  trace says each upload really sent; ``None`` for an upload that was skipped), so every
  later buffer and host array follows from what really happened.

A ``trap`` dispatch with threads fails, and the commands after it in its list are
skipped; its failure and those of raising callbacks come back at the next synchronize of
their stream (or of the device).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from luisa_nb.conformance.program import (
    CALLBACK_ERRORS,
    DTYPE,
    FINAL_SYNC,
    Callback,
    Copy,
    Dispatch,
    Download,
    Fill,
    HostSlice,
    Program,
    ProgramCommand,
    Signal,
    Submit,
    Synchronize,
    SyncKey,
    Upload,
    View,
    Wait,
)

MODES = ("execute", "submit", "as-sent")
TWO = DTYPE.type(2.0)
ONE = DTYPE.type(1.0)
HALF = DTYPE.type(0.5)
TRAP_ERROR = "KernelIndexError"
"""The exception a ``trap`` dispatch with threads fails with."""


def _vecadd(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    out[...] = a + b


def _scale(values: np.ndarray) -> None:
    values[...] = values * TWO + ONE


def _trap(values: np.ndarray) -> None:
    return None


def _swizzle(values: np.ndarray) -> None:
    x, y, z, w = values.reshape(-1, 4).T.copy()
    values.reshape(-1, 4)[...] = np.stack([y, x, w * TWO, z + ONE], axis=1)


def _weigh(values: np.ndarray) -> None:
    particles = values.reshape(-1, 4)  # position x, y, weight, scale
    particles[:, :2] *= particles[:, 3:]
    particles[:, 2] += ONE


def _brighten(values: np.ndarray) -> None:
    values[...] = values * TWO + HALF


KERNELS: dict[str, tuple[int, Callable[..., None]]] = {
    "vecadd": (3, _vecadd),
    "scale": (1, _scale),
    "trap": (1, _trap),
    "swizzle": (1, _swizzle),
    "weigh": (1, _weigh),
    "brighten": (1, _brighten),
}
"""Kernel name -> (number of buffer views, numpy implementation)."""


def command_description(ordinal: int) -> str:
    """How failures name command ``ordinal`` (its position in ``Program.commands()``)."""
    return f"command {ordinal}"


def callback_description(name: str) -> str:
    """What the runtime calls a failed callback whose function is named ``repr(name)``."""
    return f"callback {name!r}"


def failure_label(description: str, error: str) -> str:
    """One failure as the oracle predicts it: what failed and the exception's type name."""
    return f"{description}: {error}"


@dataclass
class Observation:
    """What a callback saw: its name and a copy of every host array it looks at."""

    name: str
    hosts: dict[str, np.ndarray]


@dataclass
class Prediction:
    """The oracle's answer. ``expected_uploads[k]`` is what stream order says upload ``k``
    sends, given what the uploads before it sent; ``sent_uploads[k]`` is what it sends
    under the mode (both ``None`` for an upload that is skipped). ``callbacks`` maps each
    stream to its callbacks' observations. ``statuses`` holds ``"ok"``, ``"failed"`` or
    ``"skipped"`` for each command of ``Program.commands()``; ``failures`` the sorted
    :func:`failure_label` s each synchronize that raises must raise."""

    buffers: dict[str, np.ndarray]
    hosts: dict[str, np.ndarray]
    expected_uploads: list[np.ndarray | None] = field(default_factory=list)
    sent_uploads: list[np.ndarray | None] = field(default_factory=list)
    callbacks: dict[str, list[Observation]] = field(default_factory=dict)
    statuses: list[str] = field(default_factory=list)
    failures: dict[SyncKey, list[str]] = field(default_factory=dict)


def predict(
    program: Program, mode: str = "execute", sent: Sequence[np.ndarray | None] | None = None
) -> Prediction:
    """Run ``program`` in issue order under ``mode`` (see the module docstring)."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not an oracle mode; use one of {MODES}")
    if (mode == "as-sent") != (sent is not None):
        raise ValueError("pass sent= (one array per upload) exactly when mode='as-sent'")
    return _Interpreter(program, mode, sent).run()


class _Interpreter:
    def __init__(
        self, program: Program, mode: str, sent: Sequence[np.ndarray | None] | None
    ) -> None:
        self.program = program
        self.mode = mode
        self.sent = sent
        self.buffers = {spec.name: spec.initial(program.name) for spec in program.buffers}
        self.hosts = {spec.name: spec.initial(program.name) for spec in program.hosts}
        self.prediction = Prediction(self.buffers, self.hosts)
        self.prediction.callbacks = {stream: [] for stream in program.streams}
        self.pending: dict[str, list[str]] = {stream: [] for stream in program.streams}
        # submit mode: host bytes the host has synchronized with, and downloads since
        self.visible = {name: values.copy() for name, values in self.hosts.items()}
        self.unsynchronized: list[tuple[str, HostSlice, np.ndarray]] = []

    def run(self) -> Prediction:
        for key, step in self.program.serial_steps():
            if isinstance(step, Submit):
                self._submit(step)
            elif isinstance(step, Synchronize):
                self._synchronize(key, step.stream)
            elif isinstance(step, Callback):
                self._callback(step)
            elif not isinstance(step, (Signal, Wait)):
                raise TypeError(f"the oracle cannot run step {step!r}")
        self._synchronize(FINAL_SYNC, None)
        return self.prediction

    def _callback(self, step: Callback) -> None:
        names = self.hosts if step.hosts is None else step.hosts
        copies = {name: self.hosts[name].copy() for name in names}
        self.prediction.callbacks[step.stream].append(Observation(step.name, copies))
        if step.raises is not None:
            error = CALLBACK_ERRORS[step.raises].__name__
            self.pending[step.stream].append(failure_label(callback_description(step.name), error))

    def _submit(self, step: Submit) -> None:
        at_submit: dict[int, np.ndarray] = {}
        if self.mode == "submit":
            for position, command in enumerate(step.commands):
                if isinstance(command, Upload):
                    at_submit[position] = self._host(self.visible, command.source).copy()
        statuses = self.prediction.statuses
        failed = False
        for position, command in enumerate(step.commands):
            if failed:
                statuses.append("skipped")
                if isinstance(command, Upload):
                    self.prediction.expected_uploads.append(None)
                    self.prediction.sent_uploads.append(None)
                continue
            if fails_on_worker(command):
                failed = True
                label = failure_label(command_description(len(statuses)), TRAP_ERROR)
                self.pending[step.stream].append(label)
                statuses.append("failed")
                continue
            statuses.append("ok")
            self._command(step.stream, command, at_submit.get(position))

    def _command(self, stream: str, command: ProgramCommand, at_submit: np.ndarray | None) -> None:
        if isinstance(command, Upload):
            self._upload(command, at_submit)
        elif isinstance(command, Download):
            target = self._host(self.hosts, command.target)
            target[...] = self._view(command.source)
            if self.mode == "submit":
                self.unsynchronized.append((stream, command.target, target.copy()))
        elif isinstance(command, Copy):
            self._view(command.target)[...] = self._view(command.source).copy()
        elif isinstance(command, Fill):
            self._view(command.target)[...] = DTYPE.type(command.value)
        elif isinstance(command, Dispatch):
            self._dispatch(command)
        else:
            raise TypeError(f"the oracle cannot run command {command!r}")

    def _upload(self, command: Upload, at_submit: np.ndarray | None) -> None:
        expected = self._host(self.hosts, command.source).copy()
        index = len(self.prediction.expected_uploads)
        if self.mode == "execute":
            sent = expected
        elif self.mode == "submit":
            sent = at_submit
        else:
            given = self.sent[index]
            if given is None:
                raise ValueError(f"sent[{index}] is None, but upload {index} ({command}) runs")
            sent = np.asarray(given, DTYPE).reshape(-1)
            if sent.size != expected.size:
                raise ValueError(
                    f"sent[{index}] has {sent.size} elements; upload {index} ({command}) "
                    f"moves {expected.size}"
                )
        self.prediction.expected_uploads.append(expected)
        self.prediction.sent_uploads.append(sent)
        self._view(command.target)[...] = sent

    def _dispatch(self, command: Dispatch) -> None:
        arity, kernel = KERNELS[command.kernel]
        if len(command.views) != arity or len({view.size for view in command.views}) != 1:
            raise ValueError(f"{command}: {command.kernel} takes {arity} views of one size")
        kernel(*(self._view(view) for view in command.views))

    def _synchronize(self, key: SyncKey, stream: str | None) -> None:
        kept = []
        for entry in self.unsynchronized:
            if stream is None or entry[0] == stream:
                self._host(self.visible, entry[1])[...] = entry[2]
            else:
                kept.append(entry)
        self.unsynchronized = kept
        raised: list[str] = []
        for name, labels in self.pending.items():
            if stream is None or name == stream:
                raised += labels
                labels.clear()
        if raised:
            self.prediction.failures[key] = sorted(raised)

    def _view(self, view: View) -> np.ndarray:
        return self.buffers[view.buffer][view.start : view.stop]

    @staticmethod
    def _host(hosts: dict[str, np.ndarray], part: HostSlice) -> np.ndarray:
        return hosts[part.array][part.start : part.stop]


def fails_on_worker(command: ProgramCommand) -> bool:
    """Whether ``command`` fails on the worker: a ``trap`` dispatch with threads."""
    return isinstance(command, Dispatch) and command.kernel == "trap" and command.views[0].size > 0
