"""Executables: one specialisation of a kernel, ready to launch, whatever runs it (compiled
C in ``c/executable.py``, Python mode in ``python/executable.py``), and its parameters."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.frontend.source import KernelSource
from luisa_nb.kernels.lang.aggregates import to_bytes
from luisa_nb.kernels.type_system import MatrixType, is_aggregate_type

if TYPE_CHECKING:
    from luisa_nb.kernels import ir


class CancelFlag:
    """A 32-bit flag that a running launch polls: at the start of each block of threads,
    and in every loop iteration of a thread. ``address`` is what compiled C reads.
    ``value``: the int32 the flag lives in, when it is memory another process shares;
    by default one of its own, clear."""

    __slots__ = ("_value", "address")

    def __init__(self, value: ctypes.c_int32 | None = None) -> None:
        self._value = ctypes.c_int32(0) if value is None else value
        self.address: int = ctypes.addressof(self._value)

    @property
    def is_set(self) -> bool:
        return self._value.value != 0

    def set(self) -> None:
        self._value.value = 1

    def clear(self) -> None:
        self._value.value = 0

    def __repr__(self) -> str:
        return f"<CancelFlag {'set' if self.is_set else 'clear'}>"


NEVER_CANCELLED = CancelFlag()
"""The flag of launches nobody can cancel (it is never set)."""


@dataclass(frozen=True)
class Parameter:
    """One launch parameter: an argument, a captured buffer (``capture`` is the object),
    or, for checked C kernels, a hidden int64 scalar carrying the element count of buffer
    parameter ``count_of`` (an index into ``buffer_parameters``)."""

    name: str
    kind: str  # "buffer" | "scalar"
    dtype: np.dtype
    access: str
    """"read", "write", "read_write" or "none"; "read" for scalars, "may_read" for the
    resources of a bindless array (the slots a kernel reads are known only as it runs)."""
    capture: object | None = None
    count_of: int | None = None


KERNEL_ID_PARAMETER = "kernel_id()"


def parameters_of(kernel: ir.KernelIR) -> list[Parameter]:
    """Arguments in call order, then captured buffers, then the hidden uint32 scalar
    ``kernel_id()`` reads (if the kernel calls it)."""
    access = kernel.buffer_access()
    parameters = []
    for name, kind, index in kernel.arguments:
        if kind == "bindless":
            for _, slot in kernel.heaps[index][1]:
                buffer = kernel.buffers[slot]
                element = buffer.element.dtype
                parameters.append(Parameter(buffer.name, "buffer", element, "may_read"))
            continue
        if kind == "buffer":
            dtype, mode = kernel.buffers[index].element.dtype, access[index]
        else:
            dtype, mode = kernel.scalars[index].type.dtype, "read"
        parameters.append(Parameter(name, kind, dtype, mode))
    for index, slot in enumerate(kernel.buffers):
        if slot.capture is not None:
            dtype = slot.element.dtype
            parameters.append(Parameter(slot.name, "buffer", dtype, access[index], slot.capture))
    if kernel.kernel_id_scalar is not None:
        parameters.append(Parameter(KERNEL_ID_PARAMETER, "scalar", np.dtype(np.uint32), "read"))
    return parameters


def count_parameters(kernel: ir.KernelIR) -> list[Parameter]:
    """The element-count scalars a checked C kernel takes after its own scalars."""
    int64 = np.dtype(np.int64)
    return [
        Parameter(f"len({slot.name})", "scalar", int64, "read", count_of=index)
        for index, slot in enumerate(kernel.buffers)
    ]


class Executable:
    """A kernel specialised on argument types; ``launch`` runs it over a 3-D grid.

    ``parameters`` lists what ``launch`` takes: buffers (arguments, then captures) and
    scalars; a scalar with ``count_of`` set is the element count of that buffer, which the
    caller appends (checked C kernels only). ``prints`` lists the kernel's device prints;
    a launch hands their lines to ``lang.device_print``'s collector of its thread.
    ``kernel_id_position``, when not None, is the position among the scalars of the kernel
    id that ``kernel_id()`` reads (after the arguments' scalars, before the counts).
    ``kernel`` is the typed IR it was built from, for a device that compiles it again with
    its own code generator.
    """

    mode: str
    source: str

    def __init__(self, kernel: ir.KernelIR, source: KernelSource, checks: KernelChecks) -> None:
        self.name = kernel.name
        self.kernel = kernel
        self.checks = checks
        self.kernel_source = source
        self.parameters = parameters_of(kernel)
        self.buffer_parameters = [p for p in self.parameters if p.kind == "buffer"]
        self.buffer_names = [slot.name for slot in kernel.buffers]
        self.buffer_elements = [slot.element for slot in kernel.buffers]
        self.kernel_id_position = kernel.kernel_id_scalar
        self.prints = kernel.prints  # device prints: launched one at a time, never batched

    @property
    def scalar_parameters(self) -> list[Parameter]:
        return [p for p in self.parameters if p.kind == "scalar"]

    def launch(
        self,
        dims: tuple[int, int, int],
        buffers: Sequence[Any],
        scalars: Sequence[Any],
        cancel: CancelFlag | None = None,
    ) -> None:
        """Run ``dims[0] * dims[1] * dims[2]`` threads (each axis below 2**31).

        Raises :class:`KernelIndexError`, :class:`KernelNonFiniteError` when a check fails,
        and :class:`KernelCancelledError` when ``cancel`` was set before all threads ran.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} mode={self.mode} checks={self.checks!r}>"


def flatten_scalars(scalars: Sequence[Any], composites: dict[int, Any]) -> list[Any]:
    """``scalars`` with each vector or matrix at a position in ``composites`` replaced by
    its components in column-major order, and each struct or array by its bytes, as the
    argument struct holds them."""
    flat: list[Any] = []
    for position, value in enumerate(scalars):
        kind = composites.get(position)
        if kind is None:
            flat.append(value)
        elif is_aggregate_type(kind) or isinstance(kind, MatrixType):
            flat.append(to_bytes(kind, value))
        else:
            flat.extend(np.asarray(value).tolist())
    return flat
