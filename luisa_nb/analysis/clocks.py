"""Happens-before between commands, by vector clocks over records in issue order.

Each stream has a clock (one component per stream); the host has one too. A command's
clock is its stream's clock joined with the host's at its submission, with its own
component bumped. SIGNAL stores its stream's clock in the event; WAIT joins the event's
latest stored clock into its stream's; a host SYNCHRONIZE joins the clock of the last
command it covers into the host's, and EVENT_SYNCHRONIZE the event's. A command A on
stream S happens before a later-issued command B iff ``A.clock[S] <= B.clock[S]``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from luisa_nb.recording import Status, SyncKind, SyncRecord

Clock = tuple[int, ...]


def join(left: Clock, right: Clock) -> Clock:
    if left is right:
        return left
    return tuple(map(max, left, right))


class VectorClocks:
    """Feed it every record in ``seq`` order: :meth:`command` for commands (returns the
    command's clock), :meth:`sync` for sync points.
    """

    def __init__(self, streams: Iterable[int]) -> None:
        self.index = {stream: position for position, stream in enumerate(sorted(set(streams)))}
        zero = (0,) * len(self.index)
        self.host: Clock = zero
        self._streams: list[Clock] = [zero] * len(self.index)
        self._joined_host: list[Clock | None] = [None] * len(self.index)
        self._events: dict[int, Clock] = {}
        self._seqs: list[list[int]] = [[] for _ in self.index]
        self._clocks: list[list[Clock]] = [[] for _ in self.index]

    def command(self, stream: int, seq: int) -> Clock:
        """The clock of the command with ``seq`` on ``stream``."""
        position = self.index[stream]
        current = self._streams[position]
        if self._joined_host[position] is not self.host:  # else joined already
            current = join(current, self.host)
            self._joined_host[position] = self.host
        clock = list(current)
        clock[position] += 1
        result = tuple(clock)
        self._streams[position] = result
        self._seqs[position].append(seq)
        self._clocks[position].append(result)
        return result

    def sync(self, record: SyncRecord) -> bool:
        """Apply a sync point; returns whether the host clock moved."""
        if record.status is Status.SKIPPED:
            return False
        position = self.index.get(record.stream) if record.stream is not None else None
        kind = record.kind
        if kind is SyncKind.SIGNAL and position is not None and record.event is not None:
            self._events[record.event] = self._streams[position]
        elif kind is SyncKind.WAIT and position is not None and record.event in self._events:
            self._streams[position] = join(self._streams[position], self._events[record.event])
        elif kind is SyncKind.EVENT_SYNCHRONIZE and record.event in self._events:
            return self._advance_host(self._events[record.event])
        elif kind is SyncKind.SYNCHRONIZE:
            if record.stream is None:
                moved = [self._advance_host(clock) for clock in list(self._streams)]
                return any(moved)
            if position is not None:
                return self._advance_host(self._covered(position, record.covers))
        return False

    def _covered(self, position: int, covers: int | None) -> Clock:
        """The clock of the last command on the stream with ``seq <= covers``."""
        if covers is None:
            return self._streams[position]
        found = bisect_right(self._seqs[position], covers)
        if found == 0:
            return self.host
        return self._clocks[position][found - 1]

    def _advance_host(self, clock: Clock) -> bool:
        joined = join(self.host, clock)
        moved = joined != self.host
        self.host = joined
        return moved
