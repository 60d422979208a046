"""Random conformance programs, seeded and deterministic.

Each program has 2-4 buffers, 2-3 host arrays and 1-3 command lists on one stream, with
or without a synchronize between lists and with callbacks now and then. Lists mix
uploads and downloads of overlapping host slices (some reshaped), buffer copies, fills
and the fixed kernels.

"An upload went stale" is judged by its bytes, and the analysis by *when* host memory
was read and written; the two agree as long as no download writes a host element a value
it has held before (then an early read could send the right bytes by accident). The
generator keeps that true in every run, stale or not, by tracking where values come
from: each element carries the set of origins its value may derive from (a host
element, a buffer's first contents, a fill), uploads carry every origin their host
elements have ever held, and a download is only issued when the origins of what it
writes and of everything its target held so far are disjoint. The values themselves
are random ``float32`` numbers, so two values from different origins are equal only by
a coincidence of about one in 2**23 per pair.
"""

from __future__ import annotations

import random

from luisa_nb.conformance.program import (
    MAIN_STREAM,
    ArraySpec,
    Callback,
    Command,
    Copy,
    Dispatch,
    Download,
    Fill,
    HostSlice,
    Program,
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

Origin = tuple[str, str, int]


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
        self.device_origins: dict[str, list[frozenset[Origin]]] = {
            spec.name: [frozenset({("buffer", spec.name, i)}) for i in range(spec.size)]
            for spec in self.buffers
        }
        self.host_origins: dict[str, list[set[Origin]]] = {
            spec.name: [{("host", spec.name, i)} for i in range(spec.size)] for spec in self.hosts
        }
        self.fills = 0

    def program(self) -> Program:
        rng = self.rng
        steps = []
        lists = rng.randint(1, 3)
        for number in range(1, lists + 1):
            commands: list[Command] = []
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

    def _command(self, kind: str) -> Command | None:
        length = self._length()
        if kind == "upload":
            view, host = self._view(length), self._host(length)
            origins = self.host_origins[host.array][host.start : host.stop]
            self._set(view, [frozenset(origin) for origin in origins])
            return Upload(view, host)
        if kind == "download":
            return self._download(length)
        if kind == "copy":
            source, target = self._view(length), self._view(length)
            if _overlap(source, target):
                return None
            self._set(target, self._get(source))
            return Copy(source, target)
        if kind == "fill":
            self.fills += 1
            value = round(self.rng.uniform(-4096.0, -1.0), 3)
            target = self._view(length)
            self._set(target, [frozenset({("fill", "", self.fills)})] * length)
            return Fill(target, value)
        return self._dispatch(length)

    def _download(self, length: int) -> Download | None:
        for _ in range(ATTEMPTS):
            view, host = self._view(length), self._host(length)
            written = self._get(view)
            held = self.host_origins[host.array][host.start : host.stop]
            if all(new.isdisjoint(old) for new, old in zip(written, held, strict=True)):
                for new, old in zip(written, held, strict=True):
                    old |= new
                return Download(view, host)
        return None

    def _dispatch(self, length: int) -> Dispatch | None:
        if self.rng.random() < 0.5:
            view = self._view(length)
            return Dispatch("scale", (view,))
        out, a, b = self._view(length), self._view(length), self._view(length)
        if _overlap(out, a) or _overlap(out, b):
            return None
        mixed = [x | y for x, y in zip(self._get(a), self._get(b), strict=True)]
        self._set(out, mixed)
        return Dispatch("vecadd", (out, a, b))

    def _get(self, view: View) -> list[frozenset[Origin]]:
        return self.device_origins[view.buffer][view.start : view.stop]

    def _set(self, view: View, origins: list[frozenset[Origin]]) -> None:
        self.device_origins[view.buffer][view.start : view.stop] = origins


def _overlap(first: View, second: View) -> bool:
    return first.buffer == second.buffer and first.start < second.stop and second.start < first.stop
