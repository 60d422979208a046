"""Hypothesis strategies that build conformance programs (needs ``hypothesis``).

:func:`programs` draws programs with 1-4 buffers and 1-4 host arrays (host arrays may be
empty), on up to three streams ordered by events and host synchronizes, and with steps
issued by several threads at once. Command lists mix uploads, downloads, buffer copies
(source and target may overlap), fills and the kernels ``scale``, ``vecadd`` (its output
equal to or apart from its inputs) and ``trap`` (which fails unless empty); views and
host slices may be empty, overlap each other, and host slices may be reshaped. Callbacks
look at some or all host arrays and may raise.

Every program drawn is one the oracle can predict:

- it is free of races (:class:`_HappensBefore`): two streams touch overlapping device or
  host memory (a callback reads the host arrays it looks at) only when an event or a host
  synchronize orders them;
- downloads keep "went stale" decidable by bytes (:class:`~.origins.Origins`);
- :class:`~.program.Concurrent` steps come between two device synchronizes; each branch
  has buffers and host arrays of its own and either its own stream (``t0``, ``t1``, ...,
  which it may synchronize) or, ``locked``, one stream shared by every branch (and then
  no synchronize: which branch's failures one would raise is up to the threads).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hypothesis import strategies as st

from luisa_nb.conformance.oracle import fails_on_worker
from luisa_nb.conformance.origins import Origins
from luisa_nb.conformance.program import (
    CALLBACK_ERRORS,
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
    Step,
    Submit,
    Synchronize,
    Upload,
    View,
    Wait,
)

PROGRAM_NAME = "hypothesis"
SIDE_STREAMS = ("side", "other")
EVENTS = ("e0", "e1")
MAX_ARRAYS = 4
MAX_ELEMENTS = 40
MAX_COMMANDS = 5
MAX_BRANCH_STEPS = 4
MAX_THREADS = 4
CONTINUE_ODDS = 4
"""A loop goes on with odds ``CONTINUE_ODDS`` to 1 at each iteration past its fewest."""
STEP_KINDS = ("submit", "submit", "submit", "synchronize", "signal", "wait", "callback")
COMMAND_KINDS = ("upload", "download", "upload", "download", "copy", "fill", "scale", "vecadd")
RAISES = (None, None, None, *CALLBACK_ERRORS)

Key = tuple[str, str, int]
"""An element of memory: ``("buffer" | "host", array name, index)``."""


def fill_value(number: int) -> float:
    """The value of fill ``number``: negative, unlike first contents, and distinct from
    other fills' values but for a coincidence of about one in four million."""
    return -1.0 - (zlib.crc32(f"fill {number}".encode()) % 4_000_000) / 1000.0


class _HappensBefore:
    """Vector clocks over the steps of a program being built, and the last accesses to
    every element, so that only race-free accesses are issued.

    A stream's position counts the accesses issued on it; ``known[s][t]`` is the latest
    position of ``t`` that the next step of ``s`` is ordered after (by events), and
    ``host[t]`` the one the host has synchronized with, which orders every later step.
    """

    def __init__(self, streams: Iterable[str]) -> None:
        self.position: dict[str, int] = {}
        self.known: dict[str, dict[str, int]] = {}
        self.host: dict[str, int] = {}
        self.events: dict[str, dict[str, int]] = {}
        self.writes: dict[Key, tuple[str, int]] = {}
        self.reads: dict[Key, dict[str, int]] = {}
        for stream in streams:
            self.add_stream(stream)

    def add_stream(self, stream: str) -> None:
        self.position.setdefault(stream, 0)
        self.known.setdefault(stream, {})

    def _ordered(self, stream: str, other: str, position: int) -> bool:
        return other == stream or position <= max(
            self.known[stream].get(other, 0), self.host.get(other, 0)
        )

    def allows(self, stream: str, reads: list[Key], writes: list[Key]) -> bool:
        """Whether ``stream`` may read ``reads`` and write ``writes`` now without a race."""
        for key in (*reads, *writes):
            last = self.writes.get(key)
            if last is not None and not self._ordered(stream, *last):
                return False
        return all(
            self._ordered(stream, other, position)
            for key in writes
            for other, position in self.reads.get(key, {}).items()
        )

    def access(self, stream: str, reads: list[Key], writes: list[Key]) -> None:
        self.position[stream] += 1
        position = self.position[stream]
        for key in reads:
            self.reads.setdefault(key, {})[stream] = position
        for key in writes:
            self.writes[key] = (stream, position)
            self.reads[key] = {}

    def signal(self, stream: str, event: str) -> None:
        self.events[event] = {**self.known[stream], stream: self.position[stream]}

    def wait(self, stream: str, event: str) -> None:
        self.known[stream] = _join(self.known[stream], self.events.get(event, {}))

    def synchronize(self, stream: str | None) -> None:
        for name in self.position if stream is None else (stream,):
            self.host = _join(self.host, self.known[name])
            self.host[name] = max(self.host.get(name, 0), self.position[name])


def _join(first: dict[str, int], second: dict[str, int]) -> dict[str, int]:
    return {key: max(first.get(key, 0), second.get(key, 0)) for key in {*first, *second}}


def _elements(kind: str, name: str, start: int, stop: int) -> list[Key]:
    return [(kind, name, index) for index in range(start, stop)]


def _view_keys(view: View) -> list[Key]:
    """The elements of ``view`` (none for an empty view)."""
    return _elements("buffer", view.buffer, view.start, view.stop)


def _host_keys(part: HostSlice) -> list[Key]:
    return _elements("host", part.array, part.start, part.stop)


def _shapes(length: int) -> list[tuple[int, ...] | None]:
    """Shapes a host slice of ``length`` elements may be reshaped to."""
    if length == 0:
        return [None, (0,), (0, 3), (2, 0), (1, 0, 4)]
    pairs = [(d, length // d) for d in range(1, length + 1) if length % d == 0]
    return [None, (length,), *pairs, (1, length, 1)]


class _Builder:
    """Draws one program step by step, keeping it race-free and predictable."""

    def __init__(
        self,
        draw: Callable[[st.SearchStrategy[Any]], Any],
        *,
        max_steps: int,
        max_streams: int,
        concurrency: bool,
        only_concurrent: bool,
        traps: bool,
    ) -> None:
        self.draw = draw
        self.max_steps = max_steps
        self.concurrency = concurrency
        self.only_concurrent = only_concurrent
        self.traps = traps
        fewest = 2 if only_concurrent else 1
        buffer_count = draw(st.integers(fewest, MAX_ARRAYS))
        host_count = draw(st.integers(fewest, MAX_ARRAYS))
        self.buffers = tuple(
            ArraySpec(f"b{i}", draw(st.integers(1, MAX_ELEMENTS))) for i in range(buffer_count)
        )
        self.hosts = tuple(
            ArraySpec(f"h{i}", draw(st.integers(0, MAX_ELEMENTS))) for i in range(host_count)
        )
        side = draw(st.integers(0, min(max_streams - 1, len(SIDE_STREAMS))))
        self.streams: list[str] = [MAIN_STREAM, *SIDE_STREAMS[:side]]
        self.order = _HappensBefore(self.streams)
        self.origins = Origins(self.buffers, self.hosts)
        self.callbacks = 0

    def program(self) -> Program:
        steps: list[Step] = []
        kinds = STEP_KINDS + (("concurrent",) if self.concurrency else ())
        if self.only_concurrent:
            kinds = ("concurrent",)
        for _ in self._repeat(1, self.max_steps):
            kind = self.draw(st.sampled_from(kinds))
            if kind == "concurrent":
                steps += self._concurrent()
                continue
            step = self._serial(kind, self.draw(st.sampled_from(self.streams)), None)
            if step is not None:
                steps.append(step)
        return Program(PROGRAM_NAME, self.buffers, self.hosts, tuple(steps), tuple(self.streams))

    def _repeat(self, fewest: int, most: int) -> Iterator[int]:
        """Between ``fewest`` and ``most`` iterations, each after the draw of "one more":
        a loop Hypothesis shrinks by deleting iterations anywhere, not only at the end."""
        count = 0
        while count < most and (count < fewest or self.draw(st.integers(0, CONTINUE_ODDS))):
            yield count
            count += 1

    # -- steps ---------------------------------------------------------------------------

    def _serial(
        self, kind: str, stream: str, scope: tuple[list[ArraySpec], list[ArraySpec]] | None
    ) -> SerialStep | None:
        """A step of ``kind`` on ``stream``; ``scope`` limits the buffers and host arrays
        (inside a branch of a :class:`Concurrent` step, which has no events)."""
        buffers, hosts = scope or (list(self.buffers), list(self.hosts))
        draw = self.draw
        if kind == "submit":
            return self._submit(stream, buffers, hosts)
        if kind == "callback":
            return self._callback(stream, hosts, scope is not None)
        if kind == "synchronize":
            target = stream if scope is not None else draw(st.sampled_from([None, *self.streams]))
            self.order.synchronize(target)
            return Synchronize(target)
        event = draw(st.sampled_from(EVENTS))
        if kind == "signal":
            self.order.signal(stream, event)
            return Signal(stream, event)
        self.order.wait(stream, event)
        return Wait(stream, event)

    def _callback(self, stream: str, hosts: list[ArraySpec], in_branch: bool) -> Callback | None:
        choices: list[tuple[str, ...] | None] = [tuple(spec.name for spec in hosts)]
        if not in_branch:
            choices = [None, (), *((spec.name,) for spec in hosts)]
        seen = self.draw(st.sampled_from(choices))
        names = [spec.name for spec in self.hosts] if seen is None else list(seen)
        sizes = {spec.name: spec.size for spec in self.hosts}
        reads = [key for name in names for key in _elements("host", name, 0, sizes[name])]
        if not self.order.allows(stream, reads, []):
            return None
        self.order.access(stream, reads, [])
        self.callbacks += 1
        raises = self.draw(st.sampled_from(RAISES))
        return Callback(stream, f"c{self.callbacks}", raises, seen)

    def _submit(self, stream: str, buffers: list[ArraySpec], hosts: list[ArraySpec]) -> Submit:
        """A command list on ``stream``. The commands after a ``trap`` with threads are
        skipped: they count as accesses, but move no values."""
        commands: list[ProgramCommand] = []
        failed = False
        kinds = COMMAND_KINDS + (("trap",) if self.traps else ())
        for _ in self._repeat(1, MAX_COMMANDS):
            command, reads, writes = self._command(
                self.draw(st.sampled_from(kinds)), buffers, hosts
            )
            if command is None or not self._may_issue(stream, command, reads, writes):
                continue
            self.order.access(stream, reads, writes)
            if fails_on_worker(command):
                failed = True
            elif not failed:
                self._apply(command)
            commands.append(command)
        return Submit(tuple(commands), stream)

    def _may_issue(
        self, stream: str, command: ProgramCommand, reads: list[Key], writes: list[Key]
    ) -> bool:
        """Whether ``command`` keeps the program race-free and decidable."""
        if not self.order.allows(stream, reads, writes):
            return False
        if isinstance(command, Download):
            return self.origins.may_download(command.source, command.target)
        return True

    def _concurrent(self) -> list[Step]:
        """A :class:`Concurrent` step between two device synchronizes, or nothing when
        there are too few buffers or host arrays to give each branch its own."""
        draw = self.draw
        count = min(draw(st.integers(2, MAX_THREADS)), len(self.buffers), len(self.hosts))
        if count < 2:
            return []
        locked = draw(st.booleans())
        shared = draw(st.sampled_from(self.streams)) if locked else None
        self.order.synchronize(None)
        branches = []
        for number in range(count):
            scope = (list(self.buffers[number::count]), list(self.hosts[number::count]))
            stream = shared or f"t{number}"
            if stream not in self.streams:
                self.streams.append(stream)
                self.order.add_stream(stream)
            kinds = ["submit", "submit", "callback"] + ([] if locked else ["synchronize"])
            branch = []
            for _ in self._repeat(1, MAX_BRANCH_STEPS):
                step = self._serial(draw(st.sampled_from(kinds)), stream, scope)
                if step is not None:
                    branch.append(step)
            branches.append(tuple(branch))
        self.order.synchronize(None)
        return [Synchronize(), Concurrent(tuple(branches), locked), Synchronize()]

    # -- commands ------------------------------------------------------------------------

    def _command(
        self, kind: str, buffers: list[ArraySpec], hosts: list[ArraySpec]
    ) -> tuple[ProgramCommand | None, list[Key], list[Key]]:
        """A command of ``kind`` and the elements it reads and writes."""
        draw = self.draw
        if kind in ("upload", "download"):
            buffer, host = draw(st.sampled_from(buffers)), draw(st.sampled_from(hosts))
            length = self._length(min(buffer.size, host.size))
            view, part = self._view(buffer, length), self._host(host, length)
            if kind == "upload":
                return Upload(view, part), _host_keys(part), _view_keys(view)
            return Download(view, part), _view_keys(view), _host_keys(part)
        if kind == "copy":
            source, target = draw(st.sampled_from(buffers)), draw(st.sampled_from(buffers))
            length = self._length(min(source.size, target.size))
            views = self._view(source, length), self._view(target, length)
            return Copy(*views), _view_keys(views[0]), _view_keys(views[1])
        if kind == "vecadd":
            specs = [draw(st.sampled_from(buffers)) for _ in range(3)]
            length = self._length(min(spec.size for spec in specs))
            out, a, b = (self._view(spec, length) for spec in specs)
            if draw(st.booleans()):
                a = out
            if any(out.overlaps(view) and out != view for view in (a, b)):
                return None, [], []
            return Dispatch("vecadd", (out, a, b)), _view_keys(a) + _view_keys(b), _view_keys(out)
        spec = draw(st.sampled_from(buffers))
        view = self._view(spec, self._length(spec.size))
        if kind == "fill":
            return Fill(view, fill_value(self.origins.fills + 1)), [], _view_keys(view)
        if kind == "scale":
            return Dispatch("scale", (view,)), _view_keys(view), _view_keys(view)
        return Dispatch("trap", (view,)), _view_keys(view), []

    def _apply(self, command: ProgramCommand) -> None:
        """Move origins as ``command`` moves values."""
        origins = self.origins
        if isinstance(command, Upload):
            origins.upload(command.target, command.source)
        elif isinstance(command, Download):
            origins.download(command.source, command.target)
        elif isinstance(command, Copy):
            origins.copy(command.source, command.target)
        elif isinstance(command, Fill):
            origins.fill(command.target)
        elif command.kernel == "vecadd":
            origins.vecadd(*command.views)

    def _length(self, largest: int) -> int:
        """An element count up to ``largest``, zero one time in eight."""
        if largest == 0 or self.draw(st.integers(0, 7)) == 0:
            return 0
        return self.draw(st.integers(1, largest))

    def _view(self, spec: ArraySpec, length: int) -> View:
        start = self.draw(st.integers(0, spec.size - length))
        return View(spec.name, start, start + length)

    def _host(self, spec: ArraySpec, length: int) -> HostSlice:
        start = self.draw(st.integers(0, spec.size - length))
        shape = self.draw(st.sampled_from(_shapes(length)))
        return HostSlice(spec.name, start, start + length, shape)


@st.composite
def programs(
    draw: Callable[[st.SearchStrategy[Any]], Any],
    *,
    max_steps: int = 8,
    max_streams: int = 3,
    concurrency: bool = True,
    only_concurrent: bool = False,
    traps: bool = True,
) -> Program:
    """Race-free programs the oracle predicts (see the module docstring): up to
    ``max_steps`` top-level steps on up to ``max_streams`` streams, with
    :class:`~.program.Concurrent` steps if ``concurrency`` (nothing else if
    ``only_concurrent``) and ``trap`` dispatches if ``traps`` (leave them out where one
    submission may become several command lists, as on a small staging heap)."""
    return _Builder(
        draw,
        max_steps=max_steps,
        max_streams=max_streams,
        concurrency=concurrency or only_concurrent,
        only_concurrent=only_concurrent,
        traps=traps,
    ).program()
