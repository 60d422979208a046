"""Python mode for kernels whose threads run as blocks (shared arrays, ``sync_block()``):
the blocks run one after another; the threads of a block run as Python threads that
meet at the block's :class:`BlockBarrier` on each ``sync_block()`` and share the block's
arrays. A thread that returns leaves the barrier, as a finished thread no longer takes
part in C; threads waiting at different ``sync_block()`` lines stop the dispatch with a
``KernelBarrierError``, as in C. The first error of a block (in thread order) is raised."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from luisa_nb.errors import KernelCancelledError
from luisa_nb.kernels.checks import diverged_barriers_error
from luisa_nb.kernels.executable import CancelFlag
from luisa_nb.kernels.lang.aggregates import python_callables
from luisa_nb.kernels.lang.builtins import thread_state
from luisa_nb.kernels.lang.vectors import int3


def run_blocks(
    name: str,
    function: Callable[..., Any],
    arguments: Callable[[], list[Any]],
    dims: tuple[int, int, int],
    block_size: tuple[int, int, int],
    where: Callable[[int], str],
    resolver: Callable[[Any], Callable[..., Any]],
    cancel: CancelFlag | None,
) -> None:
    """Run ``function(*arguments())`` for every thread of ``dims``, block by block;
    ``where(line)`` names a source line in errors."""
    counts = [-(-extent // block) for extent, block in zip(dims, block_size, strict=True)]
    for bz, by, bx in itertools.product(*(range(count) for count in reversed(counts))):
        if cancel is not None and cancel.is_set:
            raise KernelCancelledError(f"kernel {name!r}: the launch was cancelled")
        ids = [
            (bx * block_size[0] + x, by * block_size[1] + y, bz * block_size[2] + z)
            for z in range(block_size[2])
            for y in range(block_size[1])
            for x in range(block_size[0])
        ]
        ids = [i for i in ids if all(c < extent for c, extent in zip(i, dims, strict=True))]
        barrier = BlockBarrier(len(ids), name, block_size, where)
        _run_block(function, arguments, dims, block_size, barrier, resolver, ids)


def _run_block(
    function: Callable[..., Any],
    arguments: Callable[[], list[Any]],
    dims: tuple[int, int, int],
    block_size: tuple[int, int, int],
    barrier: BlockBarrier,
    resolver: Callable[[Any], Callable[..., Any]],
    ids: list[tuple[int, int, int]],
) -> None:
    shared: dict[int, Any] = {}
    errors: dict[int, BaseException] = {}
    kernel_id = thread_state.kernel_id  # the launching thread's, for the block's threads

    def thread(number: int, dispatch_id: tuple[int, int, int]) -> None:
        thread_state.dispatch_id = int3(*dispatch_id)
        thread_state.dispatch_size = int3(*dims)
        thread_state.kernel_id = kernel_id
        thread_state.block_size = block_size
        thread_state.barrier = barrier
        thread_state.shared = shared
        python_callables.resolvers.append(resolver)
        try:
            with np.errstate(all="ignore"):
                function(*arguments())
            barrier.leave()
        except threading.BrokenBarrierError:
            pass
        except BaseException as error:  # re-raised by the launching thread
            errors[number] = error
            barrier.abort()

    threads = [
        threading.Thread(target=thread, args=(number, dispatch_id), daemon=True)
        for number, dispatch_id in enumerate(ids)
    ]
    for started in threads:
        started.start()
    for started in threads:
        started.join()
    if errors:
        raise errors[min(errors)]


class BlockBarrier:
    """The barrier of one block's threads: it opens when every thread that has not left
    (returned) waits at it, and all of them must wait at the same source line."""

    def __init__(
        self,
        parties: int,
        kernel: str,
        block_size: tuple[int, int, int],
        where: Callable[[int], str],
    ) -> None:
        self._condition = threading.Condition()
        self._parties = parties
        self._waiting = 0
        self._line = 0  # where the threads waiting now wait
        self._round = 0
        self._broken = False
        self._kernel, self._block_size, self._where = kernel, block_size, where

    def wait(self, line: int) -> None:
        """Wait at the ``sync_block()`` on ``line`` until the block's other threads that
        have not returned wait there too."""
        with self._condition:
            if self._waiting and line != self._line:
                self.abort()
                thread = tuple(thread_state.dispatch_id._values.tolist())
                lines = (line, self._line)
                raise diverged_barriers_error(
                    self._kernel, lines, self._where, thread, self._block_size
                )
            self._line = line
            round_number = self._round
            self._waiting += 1
            self._open_if_complete()
            while round_number == self._round and not self._broken:
                self._condition.wait()
            if round_number == self._round:
                raise threading.BrokenBarrierError

    def leave(self) -> None:
        """The calling thread returned: the others no longer wait for it."""
        with self._condition:
            self._parties -= 1
            self._open_if_complete()

    def abort(self) -> None:
        """Wake every waiting thread with ``BrokenBarrierError`` (a thread failed)."""
        with self._condition:
            self._broken = True
            self._condition.notify_all()

    def _open_if_complete(self) -> None:
        if self._waiting and self._waiting == self._parties:
            self._waiting = 0
            self._round += 1
            self._condition.notify_all()
