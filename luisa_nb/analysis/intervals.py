"""An interval map: disjoint integer ranges (host addresses, or byte offsets in a device
buffer), each owned by a value."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Generic, TypeVar

Owner = TypeVar("Owner")


class IntervalMap(Generic[Owner]):
    """Half-open ranges ``[start, end)`` with an owner each; assigning a range takes it
    over from whatever owned those integers before. Owners are compared with ``==``.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._owners: list[Owner] = []

    def __len__(self) -> int:
        return len(self._starts)

    def copy(self) -> IntervalMap[Owner]:
        """A map of the same pieces that changes apart from this one (owners are shared)."""
        copied: IntervalMap[Owner] = IntervalMap()
        copied._starts, copied._ends = self._starts.copy(), self._ends.copy()
        copied._owners = self._owners.copy()
        return copied

    def query(self, start: int, end: int) -> list[tuple[int, int, Owner]]:
        """The owned pieces of ``[start, end)``, clipped to it, in address order."""
        first, last = self._span(start, end)
        return [
            (max(self._starts[i], start), min(self._ends[i], end), self._owners[i])
            for i in range(first, last)
        ]

    def gaps(self, start: int, end: int) -> list[tuple[int, int]]:
        """The pieces of ``[start, end)`` that nothing owns, in address order."""
        gaps = []
        at = start
        for low, high, _ in self.query(start, end):
            if low > at:
                gaps.append((at, low))
            at = high
        if at < end:
            gaps.append((at, end))
        return gaps

    def clear(self, start: int, end: int) -> None:
        """Forget every owner of ``[start, end)``."""
        if start >= end:
            return
        first, last = self._span(start, end)
        if first == last:
            return
        first, last = self._cut(start, end)
        del self._starts[first:last], self._ends[first:last], self._owners[first:last]

    def assign(self, start: int, end: int, owner: Owner) -> None:
        if start >= end:
            return
        index = self._exact(start, end)
        if index is not None:  # the common case: the same host array again
            self._owners[index] = owner
            return
        first, last = self._span(start, end)
        if first == last:  # nothing owned there yet
            self._starts.insert(first, start)
            self._ends.insert(first, end)
            self._owners.insert(first, owner)
            return
        first, last = self._cut(start, end)
        self._starts[first:last] = [start]
        self._ends[first:last] = [end]
        self._owners[first:last] = [owner]

    def remove(self, start: int, end: int, owner: Owner) -> None:
        """Forget the pieces of ``[start, end)`` that ``owner`` still owns."""
        index = self._exact(start, end)
        if index is not None:
            if self._owners[index] == owner:
                del self._starts[index], self._ends[index], self._owners[index]
            return
        first, last = self._span(start, end)
        if not any(self._owners[i] == owner for i in range(first, last)):
            return
        first, last = self._cut(start, end)
        keep = [i for i in range(first, last) if self._owners[i] != owner]
        self._starts[first:last] = [self._starts[i] for i in keep]
        self._ends[first:last] = [self._ends[i] for i in keep]
        self._owners[first:last] = [self._owners[i] for i in keep]

    def _exact(self, start: int, end: int) -> int | None:
        """The index of the piece that is exactly ``[start, end)``, if there is one."""
        index = bisect_left(self._starts, start)
        if index < len(self._starts) and self._starts[index] == start and self._ends[index] == end:
            return index
        return None

    def _span(self, start: int, end: int) -> tuple[int, int]:
        """Indices ``[first, last)`` of the pieces that overlap ``[start, end)``."""
        first = bisect_right(self._starts, start) - 1
        if first < 0 or self._ends[first] <= start:
            first += 1
        return first, bisect_left(self._starts, end)

    def _cut(self, start: int, end: int) -> tuple[int, int]:
        """Split pieces at ``start`` and ``end``; the indices of the pieces inside."""
        self._split(start)
        self._split(end)
        return bisect_left(self._starts, start), bisect_left(self._starts, end)

    def _split(self, at: int) -> None:
        index = bisect_right(self._starts, at) - 1
        if index < 0 or not self._starts[index] < at < self._ends[index]:
            return
        self._starts.insert(index + 1, at)
        self._ends.insert(index + 1, self._ends[index])
        self._owners.insert(index + 1, self._owners[index])
        self._ends[index] = at
