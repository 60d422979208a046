"""Indirect dispatch, as LuisaCompute's ``IndirectDispatchBuffer``: kernels record
dispatches in device memory (``buf.set_dispatch_count(n)``, ``buf.set_kernel(offset,
block_size, size, kernel_id)``), and a later dispatch of another kernel with the buffer
as its size runs once per recorded entry.

The buffer is device memory of uint32 words (``kernels/indirect.py`` has the layout),
held as an ordinary :class:`Buffer`, so its writes, copies, trace records and hazards are
a buffer's. An :class:`IndirectDispatchCommand` reads the count and the entries when it
runs, in stream order on the worker, as a GPU reads its indirect arguments, and records
that read in the trace. As on LuisaCompute's CUDA and DX backends, it runs the entries
``offset <= i < offset + n`` with ``n = min(count, capacity - offset, max_count)``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.backends.base import Backend, DeviceSpan, OperationFailed
from luisa_nb.errors import IndirectDispatchError, InvalidArgumentError, KernelError
from luisa_nb.kernels.executable import KERNEL_ID_PARAMETER
from luisa_nb.kernels.indirect import (
    BLOCK_SIZE_WORD,
    COUNT_WORD,
    DISPATCH_SIZE_WORD,
    ENTRY_WORDS,
    HEADER_WORDS,
    KERNEL_ID_WORD,
    word_count,
)
from luisa_nb.kernels.type_system import INT32_RANGE
from luisa_nb.recording.naming import dispatch_label
from luisa_nb.recording.recorder import TraceFields
from luisa_nb.recording.records import Access, CommandKind, DeviceRange
from luisa_nb.runtime.buffer import Buffer
from luisa_nb.runtime.commands import Command, DispatchArguments, FillCommand

if TYPE_CHECKING:
    from luisa_nb.runtime.device import Device
    from luisa_nb.runtime.staging import Transfers
    from luisa_nb.runtime.stream import Stream

ENTRY_DTYPE = np.dtype(
    [
        ("block_size", np.uint32, 3),
        ("padding", np.uint32),
        ("dispatch_size", np.uint32, 3),
        ("kernel_id", np.uint32),
    ]
)
"""One entry as the host sees it (:meth:`IndirectDispatchBuffer.entries`)."""


class IndirectDispatchBuffer:
    """Room for ``capacity`` dispatches and their count, in the memory of ``device``.
    Kernels fill it (as an argument or captured); ``kernel(..., dispatch_size=buffer)``
    runs the entries. ``memory`` is the buffer of uint32 words that holds it."""

    __lnb_indirect__ = True

    def __init__(self, device: Device, capacity: int, name: str | None = None) -> None:
        if not isinstance(capacity, (int, np.integer)) or isinstance(capacity, bool):
            raise InvalidArgumentError(
                f"an indirect dispatch buffer's capacity is a number of entries, got {capacity!r}"
            )
        if not 1 <= capacity <= INT32_RANGE[1] // ENTRY_WORDS:
            raise InvalidArgumentError(
                f"an indirect dispatch buffer holds 1 to {INT32_RANGE[1] // ENTRY_WORDS} "
                f"entries, got {capacity}"
            )
        self.device = device
        self.capacity = int(capacity)
        self.memory = Buffer(device, word_count(self.capacity), np.uint32, name)

    def _name(self) -> str:
        name = self.memory.name
        return f"indirect#{self.memory.id}" + (f" {name!r}" if name else "")

    def clear_async(self) -> FillCommand:
        """A command that sets the count and every entry to zero."""
        return self.memory.fill_async(0)

    def clear(self, *, sync: bool = False, stream: Stream | None = None) -> None:
        """Set the count and every entry to zero."""
        self.memory.fill(0, sync=sync, stream=stream)

    def entries(self, *, stream: Stream | None = None) -> tuple[int, np.ndarray]:
        """The dispatch count and every entry (an array of :data:`ENTRY_DTYPE`), after the
        stream's earlier work."""
        words = self.memory.numpy(stream=stream)
        return int(words[COUNT_WORD]), words[HEADER_WORDS:].view(ENTRY_DTYPE)

    def views(self) -> tuple[Buffer]:
        """What a kernel taking this buffer reads and writes (as a bindless array's
        ``views()``): its memory."""
        return (self.memory,)

    def check_alive(self) -> None:
        self.memory.check_alive()

    def destroy(self) -> None:
        """Release the device memory once commands already created no longer need it."""
        self.memory.destroy()

    def __repr__(self) -> str:
        return f"<IndirectDispatchBuffer {self._name()} x{self.capacity} on {self.device.name}>"


def dispatch_window(
    indirect: IndirectDispatchBuffer, offset: Any, max_count: Any, kernel: str
) -> tuple[int, int]:
    """The entries ``[offset, end)`` a dispatch may run, from its ``offset`` and
    ``max_count`` (luisa-python's ``dispatch_buffer_offset`` and ``max_dispatch_size``)."""
    for what, value in (("offset", offset), ("max_count", max_count)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
            raise InvalidArgumentError(
                f"kernel {kernel!r}: the indirect dispatch {what} must be a non-negative int, "
                f"got {value!r}"
            )
    if offset >= indirect.capacity:
        raise IndirectDispatchError(
            f"kernel {kernel!r}: indirect dispatch offset {offset} is outside "
            f"{indirect._name()}, which holds {indirect.capacity} entries; pass an offset "
            f"in 0 <= offset < {indirect.capacity}"
        )
    return int(offset), int(min(indirect.capacity, offset + max_count))


def finish(backend: Backend, span: DeviceSpan | None) -> None:
    """Wait for an operation a backend deferred (``span``): an indirect dispatch needs the
    entries before it launches, and runs its launches one after another. The failure of
    an earlier command's operation is raised for that command; this one's as its cause."""
    if span is None:
        return
    try:
        backend.flush()
    except OperationFailed as error:
        if error.span is not span:
            raise
        raise error.cause or KernelError(str(error)) from None


class IndirectDispatchCommand(Command):
    """Kernel ``name`` with ``arguments``, run once per entry of ``indirect`` in
    ``[offset, end)`` that its count covers, with the entry's dispatch size and kernel id.
    ``launches`` lists what the latest run launched: ``(dispatch size, kernel id)``."""

    kind = CommandKind.DISPATCH
    __slots__ = ("arguments", "end", "indirect", "launches", "memory", "name", "offset", "ranges")

    def __init__(
        self,
        name: str,
        indirect: IndirectDispatchBuffer,
        arguments: DispatchArguments,
        offset: int,
        end: int,
    ) -> None:
        indirect.check_alive()
        Command.__init__(self, arguments.device, (*arguments.views, indirect.memory))
        self.name = name
        self.indirect = indirect
        self.memory = indirect.memory.kernel_buffer
        self.arguments = arguments
        self.offset = offset
        self.end = end
        self.launches: list[tuple[tuple[int, int, int], int]] = []
        entries = indirect.memory.view(
            HEADER_WORDS + ENTRY_WORDS * offset, HEADER_WORDS + ENTRY_WORDS * end
        )
        header = indirect.memory.view(0, HEADER_WORDS)
        self.ranges = (
            *arguments.device_ranges(),
            *header.device_ranges(Access.READ),
            *entries.device_ranges(Access.READ),
        )

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        """The kernel's buffers, and the count and entries it reads of the indirect buffer."""
        return self.ranges

    @property
    def label(self) -> str:  # type: ignore[override]
        """``dispatch(buffer=...) [indirect#3 'name' 0:16]``: the kernel, its scalar
        arguments and the entries it may run."""
        scalars = [
            (name, value)
            for name, value in self.arguments.named_scalars()
            if name != KERNEL_ID_PARAMETER
        ]
        kernel = dispatch_label(self.name, scalars, (1,)).removesuffix(" [1]")
        return f"{kernel} [{self.indirect._name()} {self.offset}:{self.end}]"

    def trace_fields(self) -> TraceFields:
        return (self.kind, self.label, self.ranges, None, None)

    def describe(self) -> str:
        return f"indirect dispatch {self.name} from {self.indirect._name()}"

    def run(self, transfers: Transfers) -> DeviceSpan | None:
        backend = transfers.backend
        memory = self.memory
        data = np.empty(memory.nbytes, np.uint8)
        finish(backend, backend.download(memory.allocation, memory.offset, data))
        arguments = self.arguments
        executable = arguments.executable
        self.launches = self.entries_to_run(data.view(np.uint32), executable.kernel.block_size)
        scalars = list(arguments.scalars)
        position = executable.kernel_id_position
        for dims, kernel_id in self.launches:
            if position is not None:
                scalars[position] = kernel_id
            finish(backend, backend.dispatch(executable, dims, arguments.buffers, tuple(scalars)))
        return None

    def entries_to_run(
        self, words: np.ndarray, block_size: tuple[int, int, int]
    ) -> list[tuple[tuple[int, int, int], int]]:
        """``(dispatch size, kernel id)`` of each entry to run (those of a zero size
        skipped), every entry checked first."""
        count, capacity = int(words[COUNT_WORD]), self.indirect.capacity
        buffer = self.indirect._name()
        where = f"kernel {self.name!r}, indirect dispatch from {buffer}"
        if count > capacity:
            raise IndirectDispatchError(
                f"{where}: the dispatch count is {count}, more than the {capacity} entries the "
                f"buffer holds; call set_dispatch_count(n) with n <= {capacity}, or create a "
                f"larger IndirectDispatchBuffer"
            )
        end = min(self.end, self.offset + count)
        entries = words[HEADER_WORDS:].reshape(capacity, ENTRY_WORDS)
        launches = []
        for index in range(self.offset, end):
            entry = entries[index].tolist()
            block = tuple(entry[BLOCK_SIZE_WORD : BLOCK_SIZE_WORD + 3])
            size = tuple(entry[DISPATCH_SIZE_WORD : DISPATCH_SIZE_WORD + 3])
            if block != block_size:
                from luisa_nb.kernels.typing.typer import MAX_BLOCK_THREADS  # an error path

                valid = 0 not in block and math.prod(block) <= MAX_BLOCK_THREADS
                what = (
                    ""
                    if valid
                    else f" (not a valid block size: each axis at least 1, at most "
                    f"{MAX_BLOCK_THREADS} threads in all)"
                )
                raise IndirectDispatchError(
                    f"{where}: entry {index} has block size {block}{what}, but the kernel "
                    f"runs blocks of {block_size} (its set_block_size, else 256 x 1 x 1); "
                    f"pass the kernel's block size to set_kernel"
                )
            if max(size) > INT32_RANGE[1]:
                raise IndirectDispatchError(
                    f"{where}: entry {index} has dispatch size {size}; each axis must be "
                    f"below 2**31, as dispatch_id() is int32"
                )
            if 0 not in size:
                launches.append((size, entry[KERNEL_ID_WORD]))
        return launches
