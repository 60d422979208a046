"""The oracle: a pure-numpy, in-order interpreter of conformance programs.

:func:`predict` runs a :class:`~luisa_nb.conformance.program.Program` one step at a time
in issue order, which for a program free of undefined races is also a valid stream order
(a wait only ever waits for a signal issued before it). It predicts every buffer, every
host array, what each callback sees and, for each upload, the bytes stream order says
it sends. Three modes say which bytes an upload actually sends:

- ``"execute"``: the host bytes at that point of stream order (``staging="execute"``);
- ``"submit"``: the host bytes when its list was submitted, assuming that no work the
  host has not synchronized with has run yet (what LuisaCompute's CPU, DX and Metal
  backends do to one command list; across lists it is the worst case of a race);
- ``"as-sent"``: the bytes given in ``sent``, one array per upload in issue order (what a
  trace says each upload really sent), so every later buffer and host array follows
  from what really happened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from luisa_nb.conformance.program import (
    DTYPE,
    Callback,
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

MODES = ("execute", "submit", "as-sent")
TWO = DTYPE.type(2.0)
ONE = DTYPE.type(1.0)


def _vecadd(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    out[...] = a + b


def _scale(values: np.ndarray) -> None:
    values[...] = values * TWO + ONE


KERNELS: dict[str, tuple[int, Callable[..., None]]] = {
    "vecadd": (3, _vecadd),
    "scale": (1, _scale),
}
"""Kernel name -> (number of buffer views, numpy implementation)."""


@dataclass
class Observation:
    """What a callback saw: its name and a copy of every host array."""

    name: str
    hosts: dict[str, np.ndarray]


@dataclass
class Prediction:
    """The oracle's answer. ``expected_uploads[k]`` is what stream order says upload ``k``
    sends, given what the uploads before it sent; ``sent_uploads[k]`` is what it sends
    under the mode. ``callbacks`` maps each stream to its callbacks' observations."""

    buffers: dict[str, np.ndarray]
    hosts: dict[str, np.ndarray]
    expected_uploads: list[np.ndarray] = field(default_factory=list)
    sent_uploads: list[np.ndarray] = field(default_factory=list)
    callbacks: dict[str, list[Observation]] = field(default_factory=dict)


def predict(
    program: Program, mode: str = "execute", sent: Sequence[np.ndarray] | None = None
) -> Prediction:
    """Run ``program`` in issue order under ``mode`` (see the module docstring)."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not an oracle mode; use one of {MODES}")
    if (mode == "as-sent") != (sent is not None):
        raise ValueError("pass sent= (one array per upload) exactly when mode='as-sent'")
    return _Interpreter(program, mode, sent).run()


class _Interpreter:
    def __init__(self, program: Program, mode: str, sent: Sequence[np.ndarray] | None) -> None:
        self.program = program
        self.mode = mode
        self.sent = sent
        self.buffers = {spec.name: spec.initial(program.name) for spec in program.buffers}
        self.hosts = {spec.name: spec.initial(program.name) for spec in program.hosts}
        self.prediction = Prediction(self.buffers, self.hosts)
        self.prediction.callbacks = {stream: [] for stream in program.streams}
        # submit mode: host bytes the host has synchronized with, and downloads since
        self.visible = {name: values.copy() for name, values in self.hosts.items()}
        self.unsynchronized: list[tuple[str, HostSlice, np.ndarray]] = []

    def run(self) -> Prediction:
        for step in self.program.steps:
            if isinstance(step, Submit):
                self._submit(step)
            elif isinstance(step, Synchronize):
                self._synchronize(step.stream)
            elif isinstance(step, Callback):
                copies = {name: values.copy() for name, values in self.hosts.items()}
                self.prediction.callbacks[step.stream].append(Observation(step.name, copies))
            elif not isinstance(step, (Signal, Wait)):
                raise TypeError(f"the oracle cannot run step {step!r}")
        return self.prediction

    def _submit(self, step: Submit) -> None:
        at_submit = {}
        if self.mode == "submit":
            for command in step.commands:
                if isinstance(command, Upload):
                    at_submit[id(command)] = self._host(self.visible, command.source).copy()
        for command in step.commands:
            if isinstance(command, Upload):
                self._upload(command, at_submit.get(id(command)))
            elif isinstance(command, Download):
                target = self._host(self.hosts, command.target)
                target[...] = self._view(command.source)
                if self.mode == "submit":
                    self.unsynchronized.append((step.stream, command.target, target.copy()))
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
            sent = np.asarray(self.sent[index], DTYPE).reshape(-1)
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

    def _synchronize(self, stream: str | None) -> None:
        kept = []
        for entry in self.unsynchronized:
            if stream is None or entry[0] == stream:
                self._host(self.visible, entry[1])[...] = entry[2]
            else:
                kept.append(entry)
        self.unsynchronized = kept

    def _view(self, view: View) -> np.ndarray:
        return self.buffers[view.buffer][view.start : view.stop]

    @staticmethod
    def _host(hosts: dict[str, np.ndarray], part: HostSlice) -> np.ndarray:
        return hosts[part.array][part.start : part.stop]
