"""Conformance programs as data: buffers, host arrays and the steps a host issues.

A :class:`Program` says *what* a host does, in issue order: submit command lists to
streams, synchronize, signal and wait on events, add callbacks. The runner
(:mod:`luisa_nb.conformance.runner`) does it on a device; the oracle
(:mod:`luisa_nb.conformance.oracle`) predicts, with numpy alone, what every buffer and
host array holds afterwards. Every buffer and host array holds ``float32``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

DTYPE = np.dtype(np.float32)
MAIN_STREAM = "main"


@dataclass(frozen=True)
class ArraySpec:
    """A buffer or host array of ``size`` elements. Its first contents are
    ``start + step * i`` when ``start`` is given, else distinct random values."""

    name: str
    size: int
    start: float | None = None
    step: float = 0.0

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
    ``out = a + b``; ``scale(x)`` sets ``x = x * 2 + 1``."""

    kernel: str
    views: tuple[View, ...]

    def __str__(self) -> str:
        return f"dispatch {self.kernel}({', '.join(map(str, self.views))})"


Command = Upload | Download | Copy | Fill | Dispatch


@dataclass(frozen=True)
class Submit:
    commands: tuple[Command, ...]
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
    """A callback on ``stream`` that records the host arrays as it sees them."""

    stream: str
    name: str

    def __str__(self) -> str:
        return f"callback {self.name!r} on {self.stream}"


Step = Submit | Synchronize | Signal | Wait | Callback


@dataclass(frozen=True)
class Program:
    """Buffers, host arrays, streams and the steps issued on them, in issue order.

    Programs must be free of races the runtime does not define: two streams touch
    overlapping device or host memory only when an event orders them.
    """

    name: str
    buffers: tuple[ArraySpec, ...]
    hosts: tuple[ArraySpec, ...]
    steps: tuple[Step, ...]
    streams: tuple[str, ...] = (MAIN_STREAM,)

    def commands(self) -> Iterator[Command]:
        for step in self.steps:
            if isinstance(step, Submit):
                yield from step.commands

    def uploads(self) -> list[Upload]:
        """The uploads in issue order; the runner and the oracle number them alike."""
        return [command for command in self.commands() if isinstance(command, Upload)]

    def listing(self) -> str:
        """The steps, one a line, as failure messages show them."""
        return "\n".join(f"  {number}. {step}" for number, step in enumerate(self.steps, 1))


def whole(spec: ArraySpec) -> View:
    """All of buffer ``spec``."""
    return View(spec.name, 0, spec.size)


def all_of(spec: ArraySpec, shape: tuple[int, ...] | None = None) -> HostSlice:
    """All of host array ``spec``."""
    return HostSlice(spec.name, 0, spec.size, shape)
