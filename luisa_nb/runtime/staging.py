"""Finite upload staging memory, shared by a device's streams.

Models such as ``dx`` (an upload heap) and ``metal`` (a staging pool) stage uploads at
submit into memory of fixed size that is recycled once the command list that used it
has finished. :meth:`Stream.submit` reserves from a :class:`StagingHeap`; the worker
releases when the commands have run.
"""

from __future__ import annotations

import threading


class StagingHeap:
    """``capacity`` bytes of staging memory; :meth:`reserve` waits for free space."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._free = capacity
        self._condition = threading.Condition()

    @property
    def free(self) -> int:
        return self._free

    def try_reserve(self, nbytes: int) -> bool:
        """Take ``nbytes`` (at most ``capacity``) if they are free now."""
        with self._condition:
            if self._free < nbytes:
                return False
            self._free -= nbytes
            return True

    def reserve(self, nbytes: int) -> None:
        """Take ``nbytes`` (at most ``capacity``), waiting until earlier work frees them."""
        with self._condition:
            self._condition.wait_for(lambda: self._free >= nbytes)
            self._free -= nbytes

    def release(self, nbytes: int) -> None:
        with self._condition:
            self._free += nbytes
            self._condition.notify_all()
