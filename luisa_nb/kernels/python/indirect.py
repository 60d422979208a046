"""Python mode's indirect dispatch buffer: ``set_dispatch_count`` and ``set_kernel`` over
the buffer's uint32 words, stored as compiled C stores them (``kernels/indirect.py``).
An offset outside the buffer raises the error compiled C reports."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from luisa_nb.kernels.indirect import (
    BLOCK_SIZE_WORD,
    COUNT_WORD,
    DISPATCH_SIZE_WORD,
    ENTRY_WORDS,
    HEADER_WORDS,
    KERNEL_ID_WORD,
    PADDING_WORD,
    capacity_of,
    entry_offset_error,
)
from luisa_nb.kernels.lang.builtins import thread_state


def as_uint(value: Any) -> np.ndarray:
    """An integer (or integer vector) as uint32 values, wrapped as ``uint(...)`` wraps."""
    values = getattr(value, "_values", value)
    return np.asarray(values).astype(np.int64).astype(np.uint32)


class IndirectShim:
    """The kernel-side methods of an indirect dispatch buffer ``name`` of a Python-mode
    ``executable``; :meth:`bind` gives it the words of a launch."""

    __slots__ = ("array", "executable", "name")

    def __init__(self, name: str, executable: Any) -> None:
        self.name = name
        self.executable = executable
        self.array: np.ndarray | None = None

    def bind(self, array: np.ndarray) -> IndirectShim:
        self.array = array
        return self

    def set_dispatch_count(self, count: Any) -> None:
        self.array[COUNT_WORD] = as_uint(count)

    def set_kernel(self, offset: Any, block_size: Any, size: Any, kernel_id: Any) -> None:
        entry, block, extent, identity = (as_uint(v) for v in (offset, block_size, size, kernel_id))
        capacity = capacity_of(len(self.array))
        if int(entry) >= capacity:
            line = sys._getframe(1).f_lineno  # the kernel's frame: it called set_kernel
            executable = self.executable
            where = executable.kernel_source.where(line)
            thread = tuple(thread_state.dispatch_id._values.tolist())
            raise entry_offset_error(
                executable.name, where, line, thread, int(entry), capacity, self.name
            )
        start = HEADER_WORDS + ENTRY_WORDS * int(entry)
        words = self.array[start : start + ENTRY_WORDS]
        words[BLOCK_SIZE_WORD : BLOCK_SIZE_WORD + 3] = block
        words[PADDING_WORD] = 0
        words[DISPATCH_SIZE_WORD : DISPATCH_SIZE_WORD + 3] = extent
        words[KERNEL_ID_WORD] = identity
