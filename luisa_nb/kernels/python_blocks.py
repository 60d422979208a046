"""Python mode for kernels whose threads run as blocks (shared arrays, ``sync_block()``):
the blocks run one after another; the threads of a block run as Python threads that
meet at a ``threading.Barrier`` on each ``sync_block()`` and share the block's arrays.
A thread that returns early still meets the barriers it skipped, as finished threads
skip the later phases in C. The first error of a block (in thread order) is raised."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from luisa_nb.errors import KernelCancelledError
from luisa_nb.kernels.aggregates import python_callables
from luisa_nb.kernels.builtins import thread_state
from luisa_nb.kernels.executable import CancelFlag
from luisa_nb.kernels.vectors import int3


def run_blocks(
    name: str,
    function: Callable[..., Any],
    arguments: Callable[[], list[Any]],
    dims: tuple[int, int, int],
    block_size: tuple[int, int, int],
    phases: int,
    resolver: Callable[[Any], Callable[..., Any]],
    cancel: CancelFlag | None,
) -> None:
    """Run ``function(*arguments())`` for every thread of ``dims``, block by block."""
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
        _run_block(function, arguments, dims, block_size, phases, resolver, ids)


def _run_block(
    function: Callable[..., Any],
    arguments: Callable[[], list[Any]],
    dims: tuple[int, int, int],
    block_size: tuple[int, int, int],
    phases: int,
    resolver: Callable[[Any], Callable[..., Any]],
    ids: list[tuple[int, int, int]],
) -> None:
    barrier = threading.Barrier(len(ids))
    shared: dict[int, Any] = {}
    errors: dict[int, BaseException] = {}

    def thread(number: int, dispatch_id: tuple[int, int, int]) -> None:
        thread_state.dispatch_id = int3(*dispatch_id)
        thread_state.dispatch_size = int3(*dims)
        thread_state.block_size = block_size
        thread_state.barrier = _CountingBarrier(barrier)
        thread_state.shared = shared
        python_callables.resolvers.append(resolver)
        try:
            with np.errstate(all="ignore"):
                function(*arguments())
            for _ in range(phases - 1 - thread_state.barrier.passed):
                barrier.wait()
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


class _CountingBarrier:
    """A thread's view of its block's barrier that counts the barriers it passed."""

    def __init__(self, barrier: threading.Barrier) -> None:
        self.barrier = barrier
        self.passed = 0

    def wait(self) -> None:
        self.barrier.wait()
        self.passed += 1
