"""``dispatch_id()``, ``dispatch_size()``, ``kernel_id()``, ``set_block_size()``,
``thread_id()``, ``block_id()`` and ``sync_block()``. The compiler recognises them by
identity; in Python mode they read the running thread's state. The math functions
kernels call live in ``math_builtins``.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.errors import KernelError
from luisa_nb.kernels.lang.vectors import Vector, int3, uint3
from luisa_nb.kernels.type_system import luisa_types_active

if TYPE_CHECKING:
    from luisa_nb.kernels.python.blocks import BlockBarrier

DEFAULT_BLOCK_SIZE = (256, 1, 1)  # luisa-python's, when a kernel sets none


class _ThreadState(threading.local):
    dispatch_id: Vector | None = None
    dispatch_size: Vector | None = None
    kernel_id: int = 0  # the entry's of an indirect dispatch; 0 for a direct one
    block_size: tuple[int, int, int] = DEFAULT_BLOCK_SIZE
    barrier: BlockBarrier | None = None  # the block's, in Python mode
    shared: dict[int, Any] | None = None  # the block's shared arrays, by type id


thread_state = _ThreadState()


def _index_vector(values: Vector) -> Vector:
    """A copy of thread-index vector ``values``: an ``int3``, or luisa-python's ``uint3``
    under its types (``type_system.luisa_types``)."""
    return uint3(*values._values.tolist()) if luisa_types_active() else values.copy()


def dispatch_id() -> Vector:
    """The id of the current thread, an ``int3`` (``uint3`` in a luisa-python kernel).
    Only valid inside a kernel."""
    value = thread_state.dispatch_id
    if value is None:
        raise KernelError("dispatch_id() only works inside a kernel; dispatch the kernel")
    return _index_vector(value)


def dispatch_size() -> Vector:
    """The dispatch size, an ``int3`` (``uint3`` in a luisa-python kernel). Only valid
    inside a kernel."""
    value = thread_state.dispatch_size
    if value is None:
        raise KernelError("dispatch_size() only works inside a kernel; dispatch the kernel")
    return _index_vector(value)


def kernel_id() -> np.uint32:
    """The kernel id of the current dispatch, a ``uint``: the id that ``set_kernel``
    gave the entry of an indirect dispatch, 0 for a direct dispatch."""
    if thread_state.dispatch_id is None:
        raise KernelError("kernel_id() only works inside a kernel; dispatch the kernel")
    return np.uint32(thread_state.kernel_id)


def set_block_size(x: int, y: int, z: int) -> None:
    """luisa-python's block size for a kernel's threads: checked by the compiler (constant
    positive integers, at most 1024 threads in all). It decides what ``thread_id()`` and
    ``block_id()`` give and which threads share arrays and barriers. Does nothing when
    called."""


def thread_id() -> Vector:
    """The thread's position in its block, an ``int3``: ``dispatch_id() % block size``
    (``set_block_size``, default 256 x 1 x 1)."""
    value = dispatch_id()._values.tolist()
    return _index_vector(
        int3(*(v % b for v, b in zip(value, thread_state.block_size, strict=True)))
    )


def block_id() -> Vector:
    """The thread's block, an ``int3``: ``dispatch_id() // block size``."""
    value = dispatch_id()._values.tolist()
    return _index_vector(
        int3(*(v // b for v, b in zip(value, thread_state.block_size, strict=True)))
    )


def sync_block() -> None:
    """Wait until every thread of the block has reached this barrier, so that what each
    wrote to shared arrays before it is seen by all after it."""
    if thread_state.barrier is None:
        raise KernelError("sync_block() only works inside a kernel; dispatch the kernel")
    thread_state.barrier.wait(sys._getframe(1).f_lineno)
