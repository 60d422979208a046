"""The CPU backend: device memory is host memory; kernels are compiled C with OpenMP."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from luisa_nb.backends.base import (
    Allocation,
    Backend,
    KernelBuffer,
    Times,
    aligned_zeros,
    copy_bytes,
)
from luisa_nb.kernels.c.launch_runs import PreparedLaunch, run_launches
from luisa_nb.kernels.executable import CancelFlag


class CpuAllocation(Allocation):
    """``nbytes`` zero bytes of a numpy array aligned to a cache line, as a new buffer
    holds on luisa-python's CPU backend; ``bytes`` is a memoryview of them (a copy
    through it holds the GIL)."""

    __slots__ = ("address", "bytes", "data", "nbytes")

    def __init__(self, nbytes: int, memory: np.ndarray | None = None) -> None:
        """``nbytes`` new zero bytes, or ``memory`` (zeroed, of ``nbytes``) if given."""
        self.data = aligned_zeros(nbytes) if memory is None else memory
        self.bytes = memoryview(self.data)
        self.address = self.data.ctypes.data
        self.nbytes = nbytes


class CpuBackend(Backend):
    name = "cpu"
    default_staging = "execute"
    description = "host memory as device memory; kernels compiled to C with OpenMP"
    device_memory_is_host = True

    def __init__(self) -> None:
        self._cancel = CancelFlag()

    def cancel(self) -> None:
        self._cancel.set()

    def resume(self) -> None:
        self._cancel.clear()

    def allocate(self, nbytes: int) -> CpuAllocation:
        return CpuAllocation(nbytes)

    def allocate_in(self, memory: np.ndarray) -> CpuAllocation:
        return CpuAllocation(memory.nbytes, memory)

    def upload(self, allocation: CpuAllocation, offset: int, data: np.ndarray) -> None:
        copy_bytes(allocation.bytes[offset : offset + data.nbytes], data)

    def download(self, allocation: CpuAllocation, offset: int, out: np.ndarray) -> None:
        copy_bytes(out, allocation.bytes[offset : offset + out.nbytes])

    def copy(
        self,
        source: CpuAllocation,
        source_offset: int,
        target: CpuAllocation,
        target_offset: int,
        nbytes: int,
    ) -> None:
        ctypes.memmove(target.address + target_offset, source.address + source_offset, nbytes)

    def fill(
        self, allocation: CpuAllocation, offset: int, nbytes: int, element: np.ndarray
    ) -> None:
        allocation.data[offset : offset + nbytes].view(element.dtype)[...] = element[0]

    def dispatch(
        self,
        executable: Any,
        dims: tuple[int, int, int],
        buffers: Sequence[KernelBuffer],
        scalars: Sequence[Any],
    ) -> None:
        if executable.mode == "c":
            addresses = [b.allocation.address + b.offset for b in buffers]
            executable.launch(dims, addresses, scalars, self._cancel)
        else:
            arrays = [
                b.allocation.data[b.offset : b.offset + b.nbytes].view(b.dtype) for b in buffers
            ]
            executable.launch(dims, arrays, scalars, self._cancel)

    def prepare_dispatch(
        self,
        executable: Any,
        dims: tuple[int, int, int],
        buffers: Sequence[KernelBuffer],
        scalars: Sequence[Any],
    ) -> PreparedLaunch | None:
        """Compiled C runs in batches; python mode, and kernels that print, one dispatch
        at a time."""
        if executable.mode != "c" or executable.prints:
            return None
        addresses = [b.allocation.address + b.offset for b in buffers]
        return executable.prepare(dims, addresses, scalars)

    def run_dispatches(
        self, prepared: Sequence[PreparedLaunch], times: Times | None
    ) -> tuple[int, BaseException | None]:
        return run_launches(prepared, self._cancel, times)


backend_class = CpuBackend
