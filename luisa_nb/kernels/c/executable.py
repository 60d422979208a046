"""Compiled C executables: the C source of one specialisation, built, loaded and launched
under the fault guard."""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from luisa_nb.errors import (
    KernelArgumentError,
    KernelCancelledError,
    KernelError,
    KernelIndexError,
)
from luisa_nb.kernels import ir
from luisa_nb.kernels.c.device_print import PRINT_TARGET, PrintLog
from luisa_nb.kernels.c.emitter import CEmitter, argument_struct
from luisa_nb.kernels.c.fault_guard import guard_address
from luisa_nb.kernels.c.launch_runs import PreparedLaunch
from luisa_nb.kernels.c.tiers import hand_over, start_tiers
from luisa_nb.kernels.c.toolchain import (
    BackgroundBuild,
    build_library,
    cached_library,
    launch_function,
    load_library,
    tiered_compile,
    warn_background_failure,
)
from luisa_nb.kernels.checks import (
    STATUS_CANCELLED,
    STATUS_DIVERGED_BARRIERS,
    STATUS_FAULT,
    STATUS_INDEX_ERROR,
    STATUS_INVALID_SIZE,
    STATUS_NON_FINITE,
    KernelChecks,
    LaunchRecord,
    diverged_barriers_error,
    fault_error,
    index_error,
    non_finite_error,
    slot_error,
    texel_error,
)
from luisa_nb.kernels.executable import (
    NEVER_CANCELLED,
    CancelFlag,
    Executable,
    count_parameters,
    flatten_scalars,
)
from luisa_nb.kernels.frontend.source import KernelSource
from luisa_nb.kernels.indirect import capacity_of, entry_of, entry_offset_error
from luisa_nb.kernels.lang.device_print import current_collector, deliver
from luisa_nb.kernels.type_system import ImageType, ScalarType


def run_launch(
    function: Callable[[bytes, Any], None], packed: bytes, cancel: CancelFlag | None
) -> LaunchRecord | None:
    """Call a compiled ``lnb_<name>_launch`` entry with the packed arguments, under the
    fault guard; the launch record if a check, a fault or ``cancel`` stopped it early, else
    ``None``."""
    record = LaunchRecord(cancel=(cancel or NEVER_CANCELLED).address, guard=guard_address())
    function(packed, ctypes.byref(record))
    return record if record.status else None


class CExecutable(Executable):
    """Compiled C; ``launch`` takes the address of element 0 of each buffer."""

    mode = "c"

    def __init__(
        self,
        kernel: ir.KernelIR,
        source: KernelSource,
        checks: KernelChecks,
        emitter_class: type[CEmitter] = CEmitter,
    ) -> None:
        super().__init__(kernel, source, checks)
        if checks.bounds:
            self.parameters += count_parameters(kernel)
        emitter = emitter_class(kernel, checks)
        self.source = emitter.emit()
        self._heap_names = [name for name, _ in kernel.heaps]
        self._bindless_sites = emitter.bindless_sites
        self._entry_name, self._launch_name = emitter.entry_name, emitter.launch_name
        library_source = self.source
        optimization = emitter.optimization
        self.tier = "optimised"
        """"fast" while launches run from a tiered compile's fast build, then "optimised"
        (see ``c/tiers.py``)."""
        self._optimised_build: BackgroundBuild | None = None
        if (
            not self.prints
            and tiered_compile()
            and cached_library(self._entry_name, library_source, optimization) is None
        ):
            loaded, self._optimised_build = start_tiers(
                self._entry_name, library_source, optimization
            )
            self.tier = "fast"
        else:
            loaded = load_library(
                build_library(self._entry_name, library_source, optimization=optimization)
            )
        self._fast_library = loaded  # kept loaded: a launch may still run in it
        self._use(loaded)
        self._print_target = ctypes.c_void_p.in_dll(loaded, PRINT_TARGET) if self.prints else None
        self._print_lock = threading.Lock()
        if self._optimised_build is not None:
            self._optimised_build.when_done(self._switch_to_optimised)
        self._pack = argument_struct(kernel, checks).pack
        self._composites = {
            position: slot.type
            for position, slot in enumerate(kernel.scalars)
            if not isinstance(slot.type, ScalarType)
        }

    def _use(self, library: ctypes.CDLL) -> None:
        self.launch_entry = launch_function(library, self._launch_name)
        self.entry_address: int = ctypes.cast(self.launch_entry, ctypes.c_void_p).value

    def _switch_to_optimised(self, build: BackgroundBuild) -> None:
        """Launch from the optimised build from now on (called when it has ended)."""
        if build.error is not None:
            warn_background_failure(build)
            return
        optimised = load_library(build.library)
        hand_over(self._fast_library, optimised, self._entry_name, self._launch_name)
        self._use(optimised)
        self.tier = "optimised"

    def wait_optimised(self, timeout: float | None = None) -> bool:
        """Wait until launches run from the optimised build; whether they do (False after
        ``timeout`` seconds, or if the optimised build failed, with a warning)."""
        if self._optimised_build is not None:
            self._optimised_build.wait(timeout)
        return self.tier == "optimised"

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
        packed = self.pack(dims, buffers, scalars)
        if self.prints:
            stopped = self._printing_launch(packed, cancel)
        else:
            stopped = run_launch(self.launch_entry, packed, cancel)
        if stopped is not None:
            raise self.failure(stopped, dims, scalars)

    def _printing_launch(self, packed: bytes, cancel: CancelFlag | None) -> LaunchRecord | None:
        """A launch of a kernel with device prints: one at a time (the library holds
        one print log), its lines handed to this thread's collector even if it failed."""
        collector = current_collector()
        log = PrintLog(self.prints, collector.limit - len(collector.lines))
        with self._print_lock:
            self._print_target.value = log.address
            try:
                return run_launch(self.launch_entry, packed, cancel)
            finally:
                self._print_target.value = None
                log.collect(collector)
                deliver(collector)

    def prepare(
        self, dims: tuple[int, int, int], buffers: Sequence[int], scalars: Sequence[Any]
    ) -> PreparedLaunch:
        """A launch for :func:`~luisa_nb.kernels.c.launch_runs.run_launches` (argument
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
            return fault_error(self.name, thread, record.value, address, self.checks.bounds)
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
