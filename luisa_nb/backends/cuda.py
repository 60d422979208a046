"""``cuda``: an NVIDIA GPU through CuPy; kernels are the IR emitted as CUDA C++ and
compiled by NVRTC (``cupy.RawModule``).

Device memory comes from CuPy's memory pool. Each luisa_nb stream's worker thread gets
its own non-blocking ``cupy.cuda.Stream``; every operation is enqueued on it and
``flush()`` (the end of each submission) waits for it. Under ``submit``, the runtime
reads an upload's host bytes at ``submit()`` into pinned memory this backend gives
(:meth:`CudaBackend.snapshot_memory`), which goes to the device as it is and is held
until the stream has finished the copy; other uploads copy their bytes into the stream's
pinned staging arena and from there to the device; downloads copy into the
arena and reach the host array at ``flush()`` (``readback = "fence"``). When host
memory is read stays the shared staging code's decision: under ``submit`` the bytes
were read at ``submit()``, under ``execute`` the runtime lands pending readbacks (a
``flush()``: the worker waits for the stream) and then this upload reads the host
array, in stream order. Device spans come from one CUDA event after each operation,
placed on the host clock by an event recorded on the idle stream at the start of each
run. Importing this module raises :class:`BackendUnavailableError` when CuPy or a GPU
is missing. See docs/backends.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from luisa_nb.backends.base import (
    Allocation,
    Backend,
    DeviceSpan,
    DispatchSpan,
    KernelBuffer,
    OperationFailed,
)
from luisa_nb.errors import BackendUnavailableError, KernelBuildError
from luisa_nb.kernels.c.emitter import argument_struct
from luisa_nb.kernels.checks import LaunchRecord
from luisa_nb.kernels.cuda.emitter import CudaEmitter, grid_of
from luisa_nb.kernels.cuda.nvrtc import INSTALL_HINT, OPTIONS, nvrtc_version, signal_handling_kept
from luisa_nb.kernels.executable import flatten_scalars
from luisa_nb.kernels.type_system import ScalarType

try:
    import cupy
    from cupy.cuda import compiler as cupy_compiler
    from cupy.cuda.function import CPointer
except ImportError as error:
    raise BackendUnavailableError(
        f"the cuda backend needs CuPy, which is not installed here ({error}); install it with "
        f"{INSTALL_HINT}, or use another backend such as 'cpu'"
    ) from error


def _device_count() -> int:
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        return 0


if _device_count() == 0:
    raise BackendUnavailableError(
        f"the cuda backend needs an NVIDIA GPU, but CuPy {cupy.__version__} finds none (no "
        f"device, or no driver): run on a machine with an NVIDIA GPU and its driver, where "
        f"{INSTALL_HINT} is all luisa_nb needs, or use another backend such as 'cpu'"
    )

try:
    nvrtc_version()
except BackendUnavailableError as error:
    raise BackendUnavailableError(
        f"the cuda backend compiles its kernels with NVRTC: {error}; or use another backend "
        "such as 'cpu'"
    ) from error

PINNED_CHUNK = 8 * 1024 * 1024
RECORD_CHUNK = 256
RECORD_SIZE = ctypes.sizeof(LaunchRecord)
FILL_CHUNK = 1 << 16
ALIGNMENT = 256
STRUCT_ALIGNMENT = 16
"""The packed arguments are padded to this, the largest alignment of a member, so the
launch copies ``sizeof`` the CUDA struct from within them."""
HOST_TO_DEVICE = cupy.cuda.runtime.memcpyHostToDevice
DEVICE_TO_HOST = cupy.cuda.runtime.memcpyDeviceToHost
DEVICE_TO_DEVICE = cupy.cuda.runtime.memcpyDeviceToDevice


class CudaAllocation(Allocation):
    """``nbytes`` of device memory from CuPy's pool; returned to it when collected."""

    __slots__ = ("address", "memory", "nbytes")

    def __init__(self, memory: Any, nbytes: int) -> None:
        self.memory = memory
        self.address: int = memory.ptr
        self.nbytes = nbytes


class CudaKernel:
    """One executable compiled by NVRTC: the ``__global__`` function and how to pack
    its arguments."""

    __slots__ = ("composites", "function", "module", "pack", "source")

    def __init__(self, executable: Any) -> None:
        kernel = executable.kernel
        emitter = CudaEmitter(kernel, executable.checks)
        self.source = emitter.emit()
        try:
            with signal_handling_kept():
                self.module = cupy.RawModule(code=self.source, options=OPTIONS)
                self.function = self.module.get_function(emitter.entry_name)
                self.function.compile()  # now, not at the first launch
        except cupy_compiler.CompileException as error:
            raise KernelBuildError(
                f"kernel {kernel.name!r}: NVRTC rejected the generated CUDA source (see "
                f"kernel.source(...) for the C twin):\n{error}"
            ) from None
        self.pack = argument_struct(kernel, executable.checks).pack
        self.composites = {
            position: slot.type
            for position, slot in enumerate(kernel.scalars)
            if not isinstance(slot.type, ScalarType)
        }


class CudaDispatchSpan(DispatchSpan):
    """A dispatch's span with the slot of its launch record, which the kernel fills in
    when a check fails."""

    __slots__ = ("record",)

    def __init__(self, executable: Any, dims: tuple[int, int, int], scalars: Any) -> None:
        super().__init__(executable, dims, scalars)
        self.record = 0


class StreamState:
    """What one worker thread holds: its CUDA stream, pinned staging arena, launch
    records, the events of the current run, and the downloads waiting for ``flush()``."""

    def __init__(self, device: Any) -> None:
        device.use()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.chunks: list[Any] = []
        self.held: list[Any] = []  # memory this run's enqueued work uses, until finish()
        self.chunk = 0
        self.offset = 0
        self.records: list[Any] = []
        self.records_used = 0
        self.events: list[Any] = []
        self.used_events = 0
        self.base: Any = None
        self.base_time = 0
        self.spans: list[DeviceSpan] = []
        self.dispatches: list[CudaDispatchSpan] = []
        self.downloads: list[tuple[np.ndarray, np.ndarray]] = []

    def release(self) -> None:
        """Give back the pinned chunks and launch records (the device is closing). An
        error of the stream's work was raised by ``flush()`` already: the stream's
        synchronize here does not raise it again."""
        with contextlib.suppress(cupy.cuda.runtime.CUDARuntimeError):
            self.stream.synchronize()
        self.chunks.clear()
        self.held.clear()
        self.records.clear()
        self.chunk = self.offset = self.records_used = 0

    def staging(self, nbytes: int) -> tuple[np.ndarray, int]:
        """``nbytes`` of pinned memory until the end of the run: (array, address)."""
        if nbytes > PINNED_CHUNK:
            memory = cupy.cuda.alloc_pinned_memory(nbytes)
            self.held.append(memory)
            return np.frombuffer(memory, np.uint8, nbytes), memory.ptr
        if self.chunk < len(self.chunks) and self.offset + nbytes > PINNED_CHUNK:
            self.chunk, self.offset = self.chunk + 1, 0
        if self.chunk == len(self.chunks):
            self.chunks.append(cupy.cuda.alloc_pinned_memory(PINNED_CHUNK))
        memory, start = self.chunks[self.chunk], self.offset
        self.offset += -(-max(nbytes, 1) // ALIGNMENT) * ALIGNMENT
        view = np.frombuffer(memory, np.uint8, nbytes, start)
        return view, memory.ptr + start

    def record_address(self) -> tuple[int, int]:
        """A zeroed launch record for the next dispatch: (slot, device address)."""
        slot = self.records_used
        chunk, index = divmod(slot, RECORD_CHUNK)
        if chunk == len(self.records):
            memory = cupy.cuda.alloc(RECORD_CHUNK * RECORD_SIZE)
            cupy.cuda.runtime.memsetAsync(
                memory.ptr, 0, RECORD_CHUNK * RECORD_SIZE, self.stream.ptr
            )
            self.records.append(memory)
        self.records_used += 1
        return slot, self.records[chunk].ptr + index * RECORD_SIZE

    def begin(self) -> StreamState:
        """Before an operation is enqueued: at the first of a run, record the event that
        places the run on the host clock (the stream is idle, so it completes at once)."""
        if self.base is None:
            self.base = self._event()
            self.base.record(self.stream)
            self.base_time = time.perf_counter_ns()
        return self

    def mark(self, span: DeviceSpan) -> DeviceSpan:
        """Record an event after the operation just enqueued; ``span`` ends there."""
        self._event().record(self.stream)
        self.spans.append(span)
        return span

    def _event(self) -> Any:
        if self.used_events == len(self.events):
            self.events.append(cupy.cuda.Event())
        self.used_events += 1
        return self.events[self.used_events - 1]

    def finish(self) -> tuple[CudaDispatchSpan, LaunchRecord] | None:
        """Wait for the stream, land downloads, time the spans, reset for the next run;
        the first dispatch whose launch record says it failed, with that record."""
        try:
            self.stream.synchronize()
            for staged, out in self.downloads:
                out[...] = staged
            events = self.events[: self.used_events]
            previous = 0
            for span, event in zip(self.spans, events[1:], strict=True):
                ended = round(cupy.cuda.get_elapsed_time(events[0], event) * 1e6)
                span.started, span.finished = self.base_time + previous, self.base_time + ended
                previous = ended
            return self._failed_dispatch()
        finally:
            self.downloads.clear()
            self.spans.clear()
            self.dispatches.clear()
            self.held.clear()
            self.chunk = self.offset = self.used_events = self.records_used = 0
            self.base = None

    def _failed_dispatch(self) -> tuple[CudaDispatchSpan, LaunchRecord] | None:
        if not self.dispatches:
            return None
        used = self.records_used
        host = np.zeros(used * RECORD_SIZE, np.uint8)
        for chunk in range(-(-used // RECORD_CHUNK)):
            count = min(RECORD_CHUNK, used - chunk * RECORD_CHUNK)
            start = chunk * RECORD_CHUNK * RECORD_SIZE
            cupy.cuda.runtime.memcpy(
                host.ctypes.data + start, self.records[chunk].ptr, count * RECORD_SIZE,
                DEVICE_TO_HOST,
            )  # fmt: skip
            cupy.cuda.runtime.memsetAsync(
                self.records[chunk].ptr, 0, count * RECORD_SIZE, self.stream.ptr
            )
        for span in self.dispatches:
            record = LaunchRecord.from_buffer_copy(host, span.record * RECORD_SIZE)
            if record.status:
                return span, record
        return None


class CudaBackend(Backend):
    name = "cuda"
    default_staging = "execute"
    readback = "fence"
    description = (
        "an NVIDIA GPU through CuPy: memory from CuPy's pool, transfers through pinned "
        "staging, one CUDA stream per luisa_nb stream, kernels compiled by NVRTC"
    )

    def __init__(self, device_index: int = 0) -> None:
        count = _device_count()
        if not isinstance(device_index, int) or not 0 <= device_index < count:
            raise BackendUnavailableError(
                f"cuda: device_index={device_index!r} names no GPU here; CuPy sees {count} "
                f"(0 to {count - 1})"
            )
        self.device_index = device_index
        self._device = cupy.cuda.Device(device_index)
        self._local = threading.local()
        self._states: list[StreamState] = []
        self._kernels: weakref.WeakKeyDictionary[Any, CudaKernel] = weakref.WeakKeyDictionary()
        # pinned snapshots not yet uploaded, by id (weak: a dropped submission frees them)
        self._snapshots: weakref.WeakValueDictionary[int, np.ndarray] = (
            weakref.WeakValueDictionary()
        )
        self._lock = threading.Lock()
        with self._device:
            self._cancel_stream = cupy.cuda.Stream(non_blocking=True)
            self._cancel_flag = cupy.cuda.alloc(4)
            self._cancel_values = cupy.cuda.alloc_pinned_memory(8)
            np.frombuffer(self._cancel_values, np.int32, 2)[...] = (0, 1)
            self._set_cancel_flag(0)

    def _state(self) -> StreamState:
        """This worker thread's stream state, ready for the next operation."""
        state = getattr(self._local, "state", None)
        if state is None:
            state = self._local.state = StreamState(self._device)
            with self._lock:
                self._states.append(state)
        return state.begin()

    def info(self) -> dict[str, Any]:
        properties = cupy.cuda.runtime.getDeviceProperties(self.device_index)
        return {
            **super().info(),
            "gpu": properties["name"].decode(),
            "compute_capability": self._device.compute_capability,
            "device_index": self.device_index,
            "memory_bytes": properties["totalGlobalMem"],
            "cupy_version": cupy.__version__,
            "cuda_runtime_version": cupy.cuda.runtime.runtimeGetVersion(),
            "cuda_driver_version": cupy.cuda.runtime.driverGetVersion(),
        }

    def allocate(self, nbytes: int) -> CudaAllocation:
        """``nbytes`` of device memory, zeroed (``cudaMemset``, before any command can
        use it), as every luisa_nb backend gives a new buffer."""
        with self._device:
            memory = cupy.cuda.alloc(nbytes)
            if nbytes:
                memory.memset(0, nbytes)
            return CudaAllocation(memory, nbytes)

    def snapshot_memory(self, nbytes: int) -> np.ndarray:
        """Pinned memory from CuPy's pinned pool, for host bytes read at ``submit()``:
        ``upload`` sends it as it is and holds it until its stream has finished the copy."""
        if nbytes == 0:
            return np.empty(0, np.uint8)
        with self._device:
            memory = cupy.cuda.alloc_pinned_memory(nbytes)
        snapshot = np.frombuffer(memory, np.uint8, nbytes)  # keeps `memory` alive
        self._snapshots[id(snapshot)] = snapshot
        return snapshot

    def upload(self, allocation: CudaAllocation, offset: int, data: np.ndarray) -> DeviceSpan:
        """From pinned memory: a snapshot from :meth:`snapshot_memory` directly, any other
        host array through the stream's pinned arena."""
        state = self._state()
        if self._snapshots.pop(id(data), None) is data:
            address = data.ctypes.data
            state.held.append(data)
        else:
            staged, address = state.staging(data.nbytes)
            np.copyto(staged, data)
        cupy.cuda.runtime.memcpyAsync(
            allocation.address + offset, address, data.nbytes, HOST_TO_DEVICE, state.stream.ptr
        )
        return state.mark(DeviceSpan())

    def download(self, allocation: CudaAllocation, offset: int, out: np.ndarray) -> DeviceSpan:
        state = self._state()
        staged, address = state.staging(out.nbytes)
        cupy.cuda.runtime.memcpyAsync(
            address, allocation.address + offset, out.nbytes, DEVICE_TO_HOST, state.stream.ptr
        )
        state.downloads.append((staged, out))
        return state.mark(DeviceSpan())

    def copy(
        self,
        source: CudaAllocation,
        source_offset: int,
        target: CudaAllocation,
        target_offset: int,
        nbytes: int,
    ) -> DeviceSpan:
        state = self._state()
        stream = state.stream.ptr
        start, end = source.address + source_offset, target.address + target_offset
        if source is target and abs(start - end) < nbytes:  # overlapping: through a temporary
            temporary = cupy.cuda.alloc(nbytes)
            cupy.cuda.runtime.memcpyAsync(temporary.ptr, start, nbytes, DEVICE_TO_DEVICE, stream)
            start = temporary.ptr
            state.held.append(temporary)
        cupy.cuda.runtime.memcpyAsync(end, start, nbytes, DEVICE_TO_DEVICE, stream)
        return state.mark(DeviceSpan())

    def fill(
        self, allocation: CudaAllocation, offset: int, nbytes: int, element: np.ndarray
    ) -> DeviceSpan:
        """A memset when the element's bytes are all equal; else one chunk of copies of
        the element uploaded, then doubled by device-to-device copies."""
        state = self._state()
        stream = state.stream.ptr
        address = allocation.address + offset
        pattern = element.view(np.uint8)
        if nbytes and (pattern == pattern[0]).all():
            cupy.cuda.runtime.memsetAsync(address, int(pattern[0]), nbytes, stream)
        elif nbytes:
            itemsize = pattern.nbytes
            first = min(nbytes, -(-FILL_CHUNK // itemsize) * itemsize)
            staged, staged_address = state.staging(first)
            staged.reshape(-1, itemsize)[...] = pattern
            cupy.cuda.runtime.memcpyAsync(address, staged_address, first, HOST_TO_DEVICE, stream)
            done = first
            while done < nbytes:
                size = min(done, nbytes - done)
                cupy.cuda.runtime.memcpyAsync(
                    address + done, address, size, DEVICE_TO_DEVICE, stream
                )
                done += size
        return state.mark(DeviceSpan())

    def check_executable(self, executable: Any) -> None:
        """Compile ``executable``'s IR with NVRTC (once), so a build error is raised where
        the dispatch is made."""
        self._kernel(executable)

    def cuda_source(self, executable: Any) -> str:
        """The CUDA C++ that NVRTC compiled for ``executable`` (``kernel.source(...)``
        shows the C path's twin)."""
        return self._kernel(executable).source

    def _kernel(self, executable: Any) -> CudaKernel:
        compiled = self._kernels.get(executable)
        if compiled is not None:
            return compiled
        if executable.mode != "c":
            raise KernelBuildError(
                f"kernel {executable.name!r} runs in Python mode (mode='python', or no C "
                f"compiler); the cuda device runs compiled kernels only"
            )
        with self._lock:
            compiled = self._kernels.get(executable)
            if compiled is None:
                with self._device:
                    compiled = self._kernels[executable] = CudaKernel(executable)
        return compiled

    def dispatch(
        self,
        executable: Any,
        dims: tuple[int, int, int],
        buffers: Sequence[KernelBuffer],
        scalars: Sequence[Any],
    ) -> DeviceSpan:
        compiled = self._kernel(executable)
        state = self._state()
        addresses = [b.allocation.address + b.offset for b in buffers]
        flat = flatten_scalars(scalars, compiled.composites) if compiled.composites else scalars
        raw = compiled.pack(*dims, *addresses, *flat)
        packed = np.frombuffer(raw + bytes(-len(raw) % STRUCT_ALIGNMENT), np.uint8)
        span = CudaDispatchSpan(executable, dims, scalars)
        span.record, record = state.record_address()
        grid, block = grid_of(dims, executable.kernel.block_size)
        cancel = np.uint64(self._cancel_flag.ptr)
        arguments = (CPointer(packed.ctypes.data), np.uint64(record), cancel)
        compiled.function(grid, block, arguments, stream=state.stream)
        state.dispatches.append(span)
        return state.mark(span)

    def flush(self) -> None:
        state = getattr(self._local, "state", None)
        if state is None or not state.spans:
            return
        # an error of asynchronous work is blamed on the run's first dispatch, taken
        # before finish() clears the run's spans
        blamed = state.dispatches[0] if state.dispatches else state.spans[0]
        try:
            failed = state.finish()
        except cupy.cuda.runtime.CUDARuntimeError as error:
            raise OperationFailed(blamed, f"CUDA reported an error: {error}") from error
        if failed is not None:
            span, record = failed
            cause = span.executable.failure(record, span.dims, span.scalars)
            raise OperationFailed(span, str(cause), cause)

    def cancel(self) -> None:
        with self._device:
            self._set_cancel_flag(1)

    def close(self) -> None:
        """Return every stream's pinned arena and launch records to CuPy's pools."""
        with self._lock:
            for state in self._states:
                state.release()
            self._states.clear()
            self._kernels.clear()

    def _set_cancel_flag(self, value: int) -> None:
        """Write the flag kernels poll by a copy from pinned memory on its own stream: a
        copy engine runs it beside kernels that fill every multiprocessor (a memset
        could wait behind them for a free one)."""
        source = self._cancel_values.ptr + 4 * value
        cupy.cuda.runtime.memcpyAsync(
            self._cancel_flag.ptr, source, 4, HOST_TO_DEVICE, self._cancel_stream.ptr
        )
        if value == 0:
            self._cancel_stream.synchronize()

    def resume(self) -> None:
        with self._device:
            self._set_cancel_flag(0)


backend_class = CudaBackend
