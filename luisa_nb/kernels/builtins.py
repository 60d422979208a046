"""``dispatch_id()``, ``dispatch_size()`` and ``set_block_size()``. The compiler
recognises them by identity; in Python mode the first two read the running thread's
state. The math functions kernels call live in ``math_builtins``.
"""

from __future__ import annotations

import threading

from luisa_nb.errors import KernelError
from luisa_nb.kernels.vectors import Vector


class _ThreadState(threading.local):
    dispatch_id: Vector | None = None
    dispatch_size: Vector | None = None


thread_state = _ThreadState()


def dispatch_id() -> Vector:
    """The id of the current thread, an ``int3``. Only valid inside a kernel."""
    value = thread_state.dispatch_id
    if value is None:
        raise KernelError("dispatch_id() only works inside a kernel; dispatch the kernel")
    return value.copy()


def dispatch_size() -> Vector:
    """The dispatch size, an ``int3``. Only valid inside a kernel."""
    value = thread_state.dispatch_size
    if value is None:
        raise KernelError("dispatch_size() only works inside a kernel; dispatch the kernel")
    return value.copy()


def set_block_size(x: int, y: int, z: int) -> None:
    """luisa-python's block size for a kernel's threads: checked by the compiler (constant
    positive integers, at most 1024 threads in all), then ignored, as the CPU runs threads
    in blocks of its own size. Does nothing when called."""
