"""Conformance programs as data: buffers, host arrays and the steps a host issues.

A :class:`Program` says *what* a host does, in issue order: submit command lists to
streams, synchronize, signal and wait on events, add callbacks. The runner
(:mod:`luisa_nb.conformance.runner`) does it on a device; the oracle
(:mod:`luisa_nb.conformance.oracle`) predicts, with numpy alone, what every buffer and
host array holds afterwards. Every buffer and host array holds ``float32`` values; a
buffer may hold them as ``float4`` vectors, structs of four floats, or the channels of
a four-channel float image (:data:`LAYOUTS`), and is then a view of the same bytes
everywhere but in kernels.

Views and host slices may be empty (zero-byte commands must be valid and harmless), and
overlap one another. A callback may raise on purpose (:data:`CALLBACK_ERRORS`), and the
``trap`` kernel fails on the worker whenever it has threads: both must come back at the
next synchronize as :class:`~luisa_nb.errors.CommandFailedError`. :class:`Concurrent`
steps are issued by several host threads at once.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

DTYPE = np.dtype(np.float32)
MAIN_STREAM = "main"
LAYOUTS = {"float": 1, "float4": 4, "struct": 4, "image": 1}
"""How a buffer holds its floats, with the floats in one of its elements: one each,
``float4`` vectors, structs ``{float2 position; float weight; float scale}``, or the
channels of a float image of four channels and two rows (a buffer of channels)."""

SyncKey = tuple[int, ...]
"""Where a synchronize was issued: ``(i,)`` for step ``i`` of a program, ``(i, b, j)`` for
step ``j`` of branch ``b`` of the :class:`Concurrent` step ``i``, and :data:`FINAL_SYNC`
for the device synchronize that ends every run."""

FINAL_SYNC: SyncKey = ()


class UnprintableError(Exception):
    """An exception whose message cannot be turned into text."""

    def __str__(self) -> str:
        raise RuntimeError("UnprintableError has no message, on purpose")


CALLBACK_ERRORS: dict[str, type[BaseException]] = {
    "exception": ValueError,
    "unprintable": UnprintableError,
    "system_exit": SystemExit,
    "keyboard_interrupt": KeyboardInterrupt,
}
"""What a raising :class:`Callback` raises, by the name its ``raises`` field holds."""


@dataclass(frozen=True)
class ArraySpec:
    """A buffer or host array of ``size`` floats, held as ``layout`` says (a buffer;
    :data:`LAYOUTS`, a multiple of 8 floats for an image). Its first contents are
    ``start + step * i`` when ``start`` is given, else distinct random values."""

    name: str
    size: int
    start: float | None = None
    step: float = 0.0
    layout: str = "float"

    def initial(self, salt: str) -> np.ndarray:
        """The first contents; random values are seeded by ``salt`` and the name."""
        if self.start is not None and not self.step:
            return np.full(self.size, self.start, DTYPE)
        if self.start is not None:
            index = np.arange(self.size, dtype=DTYPE)
            index *= DTYPE.type(self.step)
            index += DTYPE.type(self.start)
            return index
        rng = np.random.default_rng(zlib.crc32(f"{salt}/{self.name}".encode()))
        return rng.uniform(1.0, 4096.0, self.size).astype(DTYPE)


@dataclass(frozen=True)
class View:
    """Elements ``[start, stop)`` of buffer ``buffer``."""

    buffer: str
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start

    def overlaps(self, other: View) -> bool:
        """Whether the two share an element (an empty view shares none)."""
        return (
            self.buffer == other.buffer
            and self.size > 0
            and other.size > 0
            and self.start < other.stop
            and other.start < self.stop
        )

    def __str__(self) -> str:
        return f"{self.buffer}[{self.start}:{self.stop}]"


@dataclass(frozen=True)
class HostSlice:
    """Elements ``[start, stop)`` of host array ``array``, reshaped to ``shape`` when
    given (the same memory either way)."""

    array: str
    start: int
    stop: int
    shape: tuple[int, ...] | None = None

    @property
    def size(self) -> int:
        return self.stop - self.start

    def __str__(self) -> str:
        text = f"{self.array}[{self.start}:{self.stop}]"
        return text if self.shape is None else f"{text}.reshape{self.shape}"


@dataclass(frozen=True)
class Upload:
    target: View
    source: HostSlice

    def __str__(self) -> str:
        return f"upload {self.target} <- {self.source}"


@dataclass(frozen=True)
class Download:
    source: View
    target: HostSlice

    def __str__(self) -> str:
        return f"download {self.source} -> {self.target}"


@dataclass(frozen=True)
class Copy:
    source: View
    target: View

    def __str__(self) -> str:
        return f"copy {self.source} -> {self.target}"


@dataclass(frozen=True)
class Fill:
    target: View
    value: float

    def __str__(self) -> str:
        return f"fill {self.target} = {self.value!r}"


@dataclass(frozen=True)
class Dispatch:
    """A fixed kernel over views of equal size: ``vecadd(out, a, b)`` sets
    ``out = a + b``; ``scale(x)`` sets ``x = x * 2 + 1``; ``trap(x)`` reads ``x`` out of
    range and writes nothing, so it fails on the worker unless ``x`` is empty."""

    kernel: str
    views: tuple[View, ...]

    def __str__(self) -> str:
        return f"dispatch {self.kernel}({', '.join(map(str, self.views))})"


ProgramCommand = Upload | Download | Copy | Fill | Dispatch
"""One command of a submitted list, as data (the runtime's own is
:class:`luisa_nb.runtime.commands.Command`)."""


@dataclass(frozen=True)
class Submit:
    commands: tuple[ProgramCommand, ...]
    stream: str = MAIN_STREAM

    def __str__(self) -> str:
        return f"submit to {self.stream}: [{', '.join(map(str, self.commands))}]"


@dataclass(frozen=True)
class Synchronize:
    """Synchronize one stream, or the whole device when ``stream`` is ``None``."""

    stream: str | None = None

    def __str__(self) -> str:
        return "synchronize device" if self.stream is None else f"synchronize {self.stream}"


@dataclass(frozen=True)
class Signal:
    stream: str
    event: str

    def __str__(self) -> str:
        return f"signal {self.event} on {self.stream}"


@dataclass(frozen=True)
class Wait:
    stream: str
    event: str

    def __str__(self) -> str:
        return f"wait {self.event} on {self.stream}"


@dataclass(frozen=True)
class Callback:
    """A callback on ``stream`` that records the host arrays named in ``hosts`` (all of
    them when ``None``) as it sees them, then raises ``CALLBACK_ERRORS[raises]`` if
    ``raises`` is set."""

    stream: str
    name: str
    raises: str | None = None
    hosts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.raises is not None and self.raises not in CALLBACK_ERRORS:
            raise ValueError(
                f"callback {self.name!r}: raises={self.raises!r} is not one of "
                f"{sorted(CALLBACK_ERRORS)}"
            )

    def __str__(self) -> str:
        text = f"callback {self.name!r} on {self.stream}"
        if self.hosts is not None:
            text += f" seeing {', '.join(self.hosts) or 'nothing'}"
        if self.raises is not None:
            text += f", raising {CALLBACK_ERRORS[self.raises].__name__}"
        return text


SerialStep = Submit | Synchronize | Signal | Wait | Callback


@dataclass(frozen=True)
class Concurrent:
    """Branches of steps issued at once, each by its own host thread. Branches touch
    disjoint buffers and host arrays. With ``locked``, every branch holds one shared lock
    around each of its steps: how threads sharing a stream must submit to it."""

    branches: tuple[tuple[SerialStep, ...], ...]
    locked: bool = False

    def __str__(self) -> str:
        how = "one lock around each step" if self.locked else "no lock"
        lines = [f"concurrently, {len(self.branches)} threads ({how}):"]
        for number, branch in enumerate(self.branches):
            lines += [f"     thread {number}: {step}" for step in branch]
        return "\n".join(lines)


Step = SerialStep | Concurrent


@dataclass(frozen=True)
class Program:
    """Buffers, host arrays, streams and the steps issued on them, in issue order.

    Programs must be free of races the runtime does not define: two streams touch
    overlapping device or host memory only when an event or a host synchronize orders
    them, and a callback's host arrays count as memory it reads.
    """

    name: str
    buffers: tuple[ArraySpec, ...]
    hosts: tuple[ArraySpec, ...]
    steps: tuple[Step, ...]
    streams: tuple[str, ...] = (MAIN_STREAM,)

    def serial_steps(self) -> Iterator[tuple[SyncKey, SerialStep]]:
        """Every step but :class:`Concurrent` ones, which give their branches' steps, in the
        order the oracle runs them (branch after branch), each with its key."""
        for index, step in enumerate(self.steps):
            if isinstance(step, Concurrent):
                for number, branch in enumerate(step.branches):
                    for inner, branch_step in enumerate(branch):
                        yield (index, number, inner), branch_step
            else:
                yield (index,), step

    def commands(self) -> Iterator[ProgramCommand]:
        """The commands in the order the oracle runs them."""
        for _, step in self.serial_steps():
            if isinstance(step, Submit):
                yield from step.commands

    def interleaved_streams(self) -> set[str]:
        """Streams that several threads submit to (branches of a locked
        :class:`Concurrent` step): how their branches' work interleaves is up to the threads."""
        streams: set[str] = set()
        for step in self.steps:
            if isinstance(step, Concurrent) and step.locked:
                streams |= {s.stream for branch in step.branches for s in branch if _on(s)}
        return streams

    def uploads(self) -> list[Upload]:
        """The uploads in issue order; the runner and the oracle number them alike."""
        return [command for command in self.commands() if isinstance(command, Upload)]

    def listing(self) -> str:
        """The steps, one a line, as failure messages show them."""
        return "\n".join(f"  {number}. {step}" for number, step in enumerate(self.steps, 1))


def _on(step: SerialStep) -> bool:
    """Whether ``step`` runs on one stream (it has a ``stream`` that is not ``None``)."""
    return getattr(step, "stream", None) is not None


def whole(spec: ArraySpec) -> View:
    """All of buffer ``spec``."""
    return View(spec.name, 0, spec.size)


def all_of(spec: ArraySpec, shape: tuple[int, ...] | None = None) -> HostSlice:
    """All of host array ``spec``."""
    return HostSlice(spec.name, 0, spec.size, shape)
