"""Random conformance programs, seeded and deterministic.

Each program has 2-4 buffers, 2-3 host arrays and 1-3 command lists on one stream, with
or without a synchronize between lists and with callbacks now and then. Lists mix
uploads and downloads of overlapping host slices (some reshaped), buffer copies, fills
and the fixed kernels.

Downloads are issued only where :class:`~luisa_nb.conformance.origins.Origins` allows,
so that "went stale" is decidable by bytes. :mod:`luisa_nb.conformance.strategies` builds
programs with more features (several streams, threads, empty ranges, failures) for
Hypothesis.
"""

from __future__ import annotations

import random

from luisa_nb.conformance.origins import Origins
from luisa_nb.conformance.program import (
    MAIN_STREAM,
    ArraySpec,
    Callback,
    Copy,
    Dispatch,
    Download,
    Fill,
    HostSlice,
    Program,
    ProgramCommand,
    Submit,
    Synchronize,
    Upload,
    View,
)

RANDOM_PROGRAMS = 200
KINDS = ("upload", "download", "copy", "fill", "dispatch")
WEIGHTS = (4, 4, 1.5, 1, 1.5)
LENGTHS = (8, 16, 24, 32)
ALIGNMENT = 8
ATTEMPTS = 8


def random_program(index: int) -> Program:
    """Random program number ``index``; the same index gives the same program."""
    return _Generator(index).program()


class _Generator:
    def __init__(self, index: int) -> None:
        self.rng = random.Random(f"luisa_nb.conformance/{index}")
        self.name = f"random_{index:03d}"
        rng = self.rng
        self.buffers = [
            ArraySpec(f"b{i}", rng.choice((32, 48, 64))) for i in range(rng.randint(2, 4))
        ]
        self.hosts = [
            ArraySpec(f"h{i}", rng.choice((48, 64, 96))) for i in range(rng.randint(2, 3))
        ]
        self.origins = Origins(tuple(self.buffers), tuple(self.hosts))

    def program(self) -> Program:
        rng = self.rng
        steps = []
        lists = rng.randint(1, 3)
        for number in range(1, lists + 1):
            commands: list[ProgramCommand] = []
            wanted = rng.randint(2, 7)
            while len(commands) < wanted:
                command = self._command(rng.choices(KINDS, WEIGHTS)[0])
                if command is not None:
                    commands.append(command)
            steps.append(Submit(tuple(commands)))
            if rng.random() < 0.25:
                steps.append(Callback(MAIN_STREAM, f"after list {number}"))
            if number < lists and rng.random() < 0.5:
                steps.append(Synchronize(rng.choice((None, MAIN_STREAM))))
        return Program(self.name, tuple(self.buffers), tuple(self.hosts), tuple(steps))

    # -- choosing ranges ---------------------------------------------------------------

    def _length(self) -> int:
        smallest = min(spec.size for spec in (*self.buffers, *self.hosts))
        return self.rng.choice([length for length in LENGTHS if length <= smallest])

    def _start(self, size: int, length: int) -> int:
        return self.rng.randrange(0, size - length + 1, ALIGNMENT)

    def _view(self, length: int) -> View:
        spec = self.rng.choice(self.buffers)
        start = self._start(spec.size, length)
        return View(spec.name, start, start + length)

    def _host(self, length: int) -> HostSlice:
        spec = self.rng.choice(self.hosts)
        start = self._start(spec.size, length)
        shape = (length // ALIGNMENT, ALIGNMENT) if self.rng.random() < 0.2 else None
        return HostSlice(spec.name, start, start + length, shape)

    # -- commands and the origins they move ---------------------------------------------

    def _command(self, kind: str) -> ProgramCommand | None:
        length = self._length()
        if kind == "upload":
            view, host = self._view(length), self._host(length)
            self.origins.upload(view, host)
            return Upload(view, host)
        if kind == "download":
            return self._download(length)
        if kind == "copy":
            source, target = self._view(length), self._view(length)
            if source.overlaps(target):
                return None
            self.origins.copy(source, target)
            return Copy(source, target)
        if kind == "fill":
            value = round(self.rng.uniform(-4096.0, -1.0), 3)
            target = self._view(length)
            self.origins.fill(target)
            return Fill(target, value)
        return self._dispatch(length)

    def _download(self, length: int) -> Download | None:
        for _ in range(ATTEMPTS):
            view, host = self._view(length), self._host(length)
            if self.origins.may_download(view, host):
                self.origins.download(view, host)
                return Download(view, host)
        return None

    def _dispatch(self, length: int) -> Dispatch | None:
        if self.rng.random() < 0.5:
            view = self._view(length)
            return Dispatch("scale", (view,))
        out, a, b = self._view(length), self._view(length), self._view(length)
        if out.overlaps(a) or out.overlaps(b):
            return None
        self.origins.vecadd(out, a, b)
        return Dispatch("vecadd", (out, a, b))
