"""Finite upload staging memory, shared by a device's streams.

Models such as ``dx`` (an upload heap) and ``metal`` (a staging pool) stage uploads at
submit into memory of fixed size that is recycled once the command list that used it
has finished. :meth:`Stream.submit` takes blocks of a :class:`StagingHeap` and copies
host bytes into them; the worker releases the blocks when the commands have run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np


class StagingBlock(NamedTuple):
    start: int
    end: int
    memory: np.ndarray


class StagingHeap:
    """``capacity`` bytes of staging memory handed out first-fit, allocated on first use
    and reused after, as an upload heap is."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._memory: np.ndarray | None = None
        self._taken: list[tuple[int, int]] = []
        self._condition = threading.Condition()

    @property
    def free(self) -> int:
        return self.capacity - sum(end - start for start, end in self._taken)

    def _take(self, nbytes: int) -> StagingBlock | None:
        taken = self._taken
        start = taken[-1][1] if taken else 0
        position = len(taken)
        if self.capacity - start < nbytes:
            start = 0
            for position, (taken_start, taken_end) in enumerate(taken):  # noqa: B007
                if taken_start - start >= nbytes:
                    break
                start = taken_end
            else:
                return None
        taken.insert(position, (start, start + nbytes))
        if self._memory is None:
            self._memory = np.empty(self.capacity, np.uint8)
        return StagingBlock(start, start + nbytes, self._memory[start : start + nbytes])

    def try_reserve(self, nbytes: int) -> StagingBlock | None:
        """A block of ``nbytes`` (at most ``capacity``) if one is free now."""
        with self._condition:
            return self._take(nbytes)

    def reserve(self, nbytes: int) -> StagingBlock:
        """A block of ``nbytes`` (at most ``capacity``), waiting for earlier work to free one."""
        with self._condition:
            while (block := self._take(nbytes)) is None:
                self._condition.wait()
            return block

    def release(self, blocks: Iterable[StagingBlock]) -> None:
        with self._condition:
            released = {block.start for block in blocks}
            self._taken = [taken for taken in self._taken if taken[0] not in released]
            self._condition.notify_all()
