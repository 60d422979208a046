"""Executables: one specialisation of a kernel, ready to launch."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from luisa_nb.errors import (
    KernelArgumentError,
    KernelCancelledError,
    KernelError,
    KernelIndexError,
)
from luisa_nb.kernels import ir
from luisa_nb.kernels.aggregates import to_bytes
from luisa_nb.kernels.c_emitter import CEmitter, argument_struct
from luisa_nb.kernels.checks import (
    STATUS_CANCELLED,
    STATUS_DIVERGED_BARRIERS,
    STATUS_FAULT,
    STATUS_INDEX_ERROR,
    STATUS_INVALID_SIZE,
    STATUS_NON_FINITE,
    LaunchRecord,
    diverged_barriers_error,
    fault_error,
    index_error,
    non_finite_error,
    slot_error,
    texel_error,
)
from luisa_nb.kernels.fault_guard import guard_address
from luisa_nb.kernels.indirect import capacity_of, entry_of, entry_offset_error
from luisa_nb.kernels.launch_runs import RUNNER_SOURCE, PreparedLaunch, runner_of
from luisa_nb.kernels.source import KernelSource
from luisa_nb.kernels.toolchain import build_library, launch_function, load_library
from luisa_nb.kernels.type_system import ImageType, MatrixType, ScalarType, is_aggregate_type


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


def run_launch(
    function: Callable[[bytes, Any], None], packed: bytes, cancel: CancelFlag | None
) -> LaunchRecord | None:
    """Call a compiled ``lnb_<name>_launch`` entry with the packed arguments, under the
    fault guard; the launch record if a check, a fault or ``cancel`` stopped it early, else
    ``None``."""
    record = LaunchRecord(cancel=(cancel or NEVER_CANCELLED).address, guard=guard_address())
    function(packed, ctypes.byref(record))
    return record if record.status else None


@dataclass(frozen=True)
class Parameter:
    """One launch parameter: an argument, a captured buffer (``capture`` is the object),
    or, for checked C kernels, a hidden int64 scalar carrying the element count of buffer
    parameter ``count_of`` (an index into ``buffer_parameters``)."""

    name: str
    kind: str  # "buffer" | "scalar"
    dtype: np.dtype
    access: str  # "read" | "write" | "read_write" | "none"; "read" for scalars
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
                parameters.append(Parameter(buffer.name, "buffer", buffer.element.dtype, "read"))
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
    caller appends (checked C kernels only). ``kernel_id_position``, when not None, is the
    position among the scalars of the kernel id that ``kernel_id()`` reads (after the
    arguments' scalars, before the counts). ``kernel`` is the typed IR it was built from,
    for a device that compiles it again with its own code generator.
    """

    mode: str
    source: str

    def __init__(self, kernel: ir.KernelIR, source: KernelSource, checks: bool | str) -> None:
        self.name = kernel.name
        self.kernel = kernel
        self.checks = checks
        self.kernel_source = source
        self.parameters = parameters_of(kernel)
        self.buffer_parameters = [p for p in self.parameters if p.kind == "buffer"]
        self.buffer_names = [slot.name for slot in kernel.buffers]
        self.buffer_elements = [slot.element for slot in kernel.buffers]
        self.kernel_id_position = kernel.kernel_id_scalar

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


class CExecutable(Executable):
    """Compiled C; ``launch`` takes the address of element 0 of each buffer."""

    mode = "c"

    def __init__(
        self,
        kernel: ir.KernelIR,
        source: KernelSource,
        checks: bool | str,
        emitter_class: type[CEmitter] = CEmitter,
    ) -> None:
        super().__init__(kernel, source, checks)
        if checks:
            self.parameters += count_parameters(kernel)
        emitter = emitter_class(kernel, checks)
        self.source = emitter.emit()
        self._heap_names = [name for name, _ in kernel.heaps]
        self._bindless_sites = emitter.bindless_sites
        library = build_library(
            emitter.entry_name,
            f"{self.source}\n{RUNNER_SOURCE}",
            optimization=emitter.optimization,
        )
        loaded = load_library(library)
        self._function = launch_function(loaded, emitter.launch_name)
        self.entry_address: int = ctypes.cast(self._function, ctypes.c_void_p).value
        self.runner = runner_of(loaded)
        self._pack = argument_struct(kernel, checks).pack
        self._composites = {
            position: slot.type
            for position, slot in enumerate(kernel.scalars)
            if not isinstance(slot.type, ScalarType)
        }

    def pack(
        self, dims: tuple[int, int, int], buffers: Sequence[int], scalars: Sequence[Any]
    ) -> bytes:
        """The argument struct of a launch: ``dims``, buffer addresses, then scalars."""
        packed_scalars = flatten_scalars(scalars, self._composites) if self._composites else scalars
        return self._pack(*dims, *buffers, *packed_scalars)

    def launch(
        self,
        dims: tuple[int, int, int],
        buffers: Sequence[int],
        scalars: Sequence[Any],
        cancel: CancelFlag | None = None,
    ) -> None:
        stopped = run_launch(self._function, self.pack(dims, buffers, scalars), cancel)
        if stopped is not None:
            raise self.failure(stopped, dims, scalars)

    def prepare(
        self, dims: tuple[int, int, int], buffers: Sequence[int], scalars: Sequence[Any]
    ) -> PreparedLaunch:
        """A launch for :func:`~luisa_nb.kernels.launch_runs.run_launches` (argument
        errors are raised here, as ``launch`` raises them)."""
        return PreparedLaunch(self, dims, self.pack(dims, buffers, scalars), scalars)

    def failure(
        self, record: LaunchRecord, dims: tuple[int, int, int], scalars: Sequence[Any]
    ) -> KernelError:
        """The error of a launch with ``dims`` and ``scalars`` that stopped as ``record``
        says (its status is not OK)."""
        if record.status == STATUS_CANCELLED:
            return KernelCancelledError(f"kernel {self.name!r}: the launch was cancelled")
        if record.status == STATUS_INVALID_SIZE:
            return KernelArgumentError(
                f"kernel {self.name!r}: dispatch size {tuple(dims)} is not valid; each axis "
                f"must be in 0 <= n < 2**31 and the product below 2**63"
            )
        thread = tuple(record.thread)
        if record.status == STATUS_FAULT:
            address = record.index % 2**64
            return fault_error(self.name, thread, record.value, address, bool(self.checks))
        if record.status == STATUS_DIVERGED_BARRIERS:
            lines = (record.line, record.index)
            where = self.kernel_source.where
            return diverged_barriers_error(self.name, lines, where, thread, self.kernel.block_size)
        if record.buffer <= -2:
            call = self._bindless_sites[-2 - record.buffer]
            where = self.kernel_source.where(record.line)
            suitable = [slot for slot, _ in call.slots]
            heap = self._heap_names[call.heap]
            return slot_error(
                self.name,
                where,
                record.line,
                thread,
                record.index,
                heap,
                call.method,
                suitable,
                call.type,
            )
        if record.buffer < 0:
            return self._unexplained_failure(thread)
        index = record.index % 2**64 if record.unsigned_index else record.index
        line, where = record.line, self.kernel_source.where(record.line)
        buffer = self.buffer_names[record.buffer]
        image = self.buffer_elements[record.buffer]
        if isinstance(image, ImageType) and record.status == STATUS_INDEX_ERROR:
            access = ("reads", "writes")[record.access]
            coord: tuple[int, ...] = (index, int(record.value))
            if image.depth:  # z * 2**32 plus the 32 bits of y (see c_images)
                z = math.floor(record.value / 2**32)
                y = int(record.value - z * 2**32)
                signed_negative = not record.unsigned_index and y >= 2**31
                coord = (index, y - 2**32 if signed_negative else y, z)
            size = image.size
            return texel_error(self.name, where, line, thread, access, coord, size, buffer)
        if record.status == STATUS_NON_FINITE:
            return non_finite_error(self.name, where, line, thread, index, buffer, record.value)
        if record.status != STATUS_INDEX_ERROR:
            return KernelError(f"kernel {self.name!r}: launch failed with status {record.status}")
        size = int(scalars[len(scalars) - len(self.buffer_names) + record.buffer])
        if self.kernel.buffers[record.buffer].indirect:
            offset, capacity = entry_of(index), capacity_of(size)
            return entry_offset_error(self.name, where, line, thread, offset, capacity, buffer)
        access = ("reads", "writes")[record.access]
        return index_error(self.name, where, line, thread, access, index, size, buffer)

    def _unexplained_failure(self, first_thread: tuple[int, int, int]) -> KernelIndexError:
        """A block failed a check, but none of its threads failed again when re-run to find
        where: the failing index came from a value the block itself overwrote."""
        message = (
            f"kernel {self.name!r}: a check failed in the block of threads starting at "
            f"{first_thread}, but no thread failed again when the block re-ran to find "
            f"where, because the kernel computes indices from values it overwrites; the "
            f"dispatch stopped. Run it with mode='python' to see the failing access"
        )
        return KernelIndexError(
            message, kernel=self.name, line=0, thread=first_thread, index=-1, size=-1, buffer=""
        )
