"""Block-shared arrays: luisa-python's ``SharedArrayType(size, dtype)``. Calling one in
a kernel (``tile = Tile()``) gives the array that every thread of the block shares; it
starts zeroed for each block. Threads exchange values through it across ``sync_block()``.
"""

from __future__ import annotations

from typing import Any

from luisa_nb.errors import KernelError
from luisa_nb.kernels.lang.aggregates import Array, ArrayType
from luisa_nb.kernels.lang.builtins import thread_state


class SharedArrayType:
    """``size`` elements of ``dtype`` shared by the threads of a block."""

    __lnb_shared_array__ = True

    def __init__(self, size: int, dtype: Any) -> None:
        self.array_type = ArrayType(size, dtype)
        self.size = size
        self.dtype = dtype

    def __call__(self) -> Array:
        """In Python mode, the running block's array of this type."""
        shared = thread_state.shared
        if shared is None:
            raise KernelError(f"{self!r}() only works inside a kernel; dispatch the kernel")
        if id(self) not in shared:
            shared[id(self)] = self.array_type()
        return shared[id(self)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SharedArrayType) and other.array_type == self.array_type

    def __hash__(self) -> int:
        return hash((SharedArrayType, self.array_type))

    def __repr__(self) -> str:
        return f"SharedArrayType({self.size}, {self.array_type.element})"


def is_shared_array_type(value: Any) -> bool:
    """Duck typing: ``__lnb_shared_array__`` is true."""
    return bool(getattr(value, "__lnb_shared_array__", False))
