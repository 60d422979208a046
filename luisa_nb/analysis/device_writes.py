"""Which bytes of each device buffer which command wrote last, as the commands ran.

One model serves two questions: which bytes a read finds that no command wrote
(``UNINITIALIZED_READ``, :mod:`luisa_nb.analysis.uninitialized`) and whose bytes a buffer
holds at a command (replay, :mod:`luisa_nb.analysis.replay`). Commands are visited in the
order they ran (:func:`run_order`): uploads, fills and kernels write their target ranges
(a kernel every range it may write, as its compiled access says, all of it: what a kernel
writes under a condition is not known); a copy writes the target bytes whose source bytes
some command wrote and leaves the others unwritten, as compute-sanitizer's initcheck
carries uninitialized bytes through a copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from luisa_nb.analysis.intervals import IntervalMap
from luisa_nb.recording import Access, CommandKind, DeviceRange, Status, Trace
from luisa_nb.recording.table import KIND_CODES, MISSING, STATUS_CODES

RAN = (STATUS_CODES[Status.OK], STATUS_CODES[Status.FAILED])
"""Statuses of commands that ran (a failed one may have written part of its bytes)."""
_COPY = KIND_CODES[CommandKind.COPY]


def run_order(trace: Trace) -> np.ndarray:
    """Table rows of the commands that ran, in the order they started (the order of their
    ids where no start was recorded): on several streams, the one interleaving the trace
    saw."""
    numbers = trace.table.numbers
    rows = np.flatnonzero(np.isin(numbers["status"], RAN))
    started = numbers["started"][rows]
    started = np.where(started == MISSING, numbers["submitted"][rows], started)
    return rows[np.lexsort((numbers["seq"][rows], started))]


_READS = (Access.READ, Access.READ_WRITE)


def reads_of(ranges: tuple[DeviceRange, ...]) -> Iterator[DeviceRange]:
    """The ranges a command surely reads (a kernel's read-write ranges among them; not
    those it may read through a bindless array)."""
    return (r for r in ranges if r.access in _READS and r.nbytes)


BEFORE_TRACE = 0
"""The writer of the bytes of a buffer made before the trace that no traced command wrote
(command ids start at 1)."""


class DeviceWrites:
    """Per buffer, an interval map of byte offsets to the id of the command that wrote them
    last; bytes no command wrote are in no piece. ``before``: ``(buffer id, nbytes)`` of
    the buffers made before the trace, whose bytes count as written (by
    :data:`BEFORE_TRACE`)."""

    def __init__(self, before: Iterable[tuple[int, int]] = ()) -> None:
        self._buffers: dict[int, IntervalMap[int]] = {}
        for buffer, nbytes in before:
            self._map(buffer).assign(0, nbytes, BEFORE_TRACE)

    def copy(self) -> DeviceWrites:
        """The same writes, kept apart from these from now on."""
        copied = DeviceWrites()
        copied._buffers = {buffer: pieces.copy() for buffer, pieces in self._buffers.items()}
        return copied

    def _map(self, buffer: int) -> IntervalMap[int]:
        found = self._buffers.get(buffer)
        if found is None:
            found = self._buffers[buffer] = IntervalMap()
        return found

    def writers(self, device: DeviceRange) -> list[tuple[int, int, int]]:
        """``(start, end, command id)`` of the written pieces of ``device`` (the id
        :data:`BEFORE_TRACE` for bytes written before the trace)."""
        end = device.offset + device.nbytes
        return self._map(device.buffer).query(device.offset, end)

    def unwritten(self, device: DeviceRange) -> list[tuple[int, int]]:
        """The byte ranges of ``device`` that no command wrote, in offset order."""
        end = device.offset + device.nbytes
        return self._map(device.buffer).gaps(device.offset, end)

    def apply(self, command_id: int, kind: int, ranges: tuple[DeviceRange, ...]) -> None:
        """Note what command ``command_id`` (of kind code ``kind``) wrote."""
        if kind == _COPY and len(ranges) == 2:
            self._copy(command_id, *ranges)
            return
        for device in ranges:
            if device.access.writes and device.nbytes:
                end = device.offset + device.nbytes
                self._map(device.buffer).assign(device.offset, end, command_id)

    def _copy(self, command_id: int, source: DeviceRange, target: DeviceRange) -> None:
        shift = target.offset - source.offset
        pieces = self._map(target.buffer)
        pieces.assign(target.offset, target.offset + target.nbytes, command_id)
        for start, end in self.unwritten(source):
            pieces.clear(start + shift, end + shift)


def walk(trace: Trace) -> Iterator[tuple[int, int, int, tuple[DeviceRange, ...]]]:
    """``(row, id, kind code, device ranges)`` of each command that ran, in run order."""
    table = trace.table
    numbers = table.numbers
    ranges = table.objects["device_ranges"]
    ids, kinds = numbers["id"], numbers["kind"]
    for row in run_order(trace).tolist():
        yield row, int(ids[row]), int(kinds[row]), ranges[row]
