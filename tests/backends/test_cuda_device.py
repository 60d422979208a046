"""The ``cuda`` backend.

Three parts: the error ``create_device("cuda")`` raises without CuPy; the backend's own
code (pinned staging, streams, spans, launch records, fills, copies) on a CPU stand-in
for CuPy whose memory is host memory, whose streams run their work on threads of their
own and whose kernels are the CUDA emulation; and, where
CuPy finds a GPU, the same checks on the GPU (skipped here otherwise, with the reason).
"""

from __future__ import annotations

import ctypes
import importlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers.callback_waits import WAITS as CALLBACK_WAITS
from helpers.callback_waits import check_wait_in_callback_fails
from helpers.cuda import nvrtc_library_not_found
from helpers.cuda_emulation import (
    build_unit,
    emulation_failure_function,
    emulation_unit,
    find_cxx_compiler,
)
from helpers.interrupts import ctrl_c_stops_a_wait, interrupt_main_thread_after, needs_main_thread

import luisa_nb.backends
from luisa_nb.conformance.programs import FIXED_PROGRAMS
from luisa_nb.conformance.verify import check_program
from luisa_nb.errors import BackendUnavailableError, CommandFailedError
from luisa_nb.kernels import (
    compiler_available,
    dispatch_id,
    dispatch_size,
    dtype_of,
    float3,
    kernel_id,
    set_block_size,
    uint3,
)
from luisa_nb.kernels.lang.scalar_names import uint
from luisa_nb.recording.records import Status
from luisa_nb.recording.trace import Trace
from luisa_nb.runtime import BindlessArray, create_device, kernel
from luisa_nb.seed import SEED_FILL, expected_rows, run_seed

MODULE = "luisa_nb.backends.cuda"
CUPY_MODULES = ("cupy", "cupy.cuda", "cupy.cuda.function", "cupy.cuda.runtime", "cupy.cuda.nvrtc")


def _forget_backend_module() -> None:
    sys.modules.pop(MODULE, None)
    if hasattr(luisa_nb.backends, "cuda"):
        delattr(luisa_nb.backends, "cuda")


def _gpu_reason() -> str | None:
    """Why the GPU tests cannot run here, or None when they can."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install luisa_nb[cuda])"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # no driver: CUDARuntimeError
        return f"CuPy {cupy.__version__} finds no GPU ({error})"
    return None if count else f"CuPy {cupy.__version__} finds no GPU"


GPU_REASON = _gpu_reason()
needs_gpu = pytest.mark.skipif(GPU_REASON is not None, reason=GPU_REASON or "")
needs_compilers = pytest.mark.skipif(
    not compiler_available() or find_cxx_compiler() is None, reason="no C and C++ compiler"
)


# --- without CuPy ---------------------------------------------------------------------


def _unavailable_message(monkeypatch, modules: dict[str, types.ModuleType | None]) -> str:
    """What ``create_device("cuda")`` raises with ``modules`` as CuPy (None: ``import``
    raises ImportError)."""
    _forget_backend_module()
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    try:
        with pytest.raises(BackendUnavailableError) as caught:
            create_device("cuda")
    finally:
        _forget_backend_module()
    return str(caught.value)


def test_without_cupy_create_device_says_what_is_missing_and_how_to_install(monkeypatch):
    message = _unavailable_message(monkeypatch, {"cupy": None})
    assert "needs CuPy" in message
    assert "pip install luisa_nb[cuda]" in message and "cupy-cuda12x" in message
    assert "cuda" not in luisa_nb.backends.available_backends() or GPU_REASON is None


def test_without_a_gpu_create_device_says_so(monkeypatch):
    modules = _fake_cupy()
    modules["cupy.cuda.runtime"].getDeviceCount = lambda: 0
    message = _unavailable_message(monkeypatch, modules)
    assert "needs an NVIDIA GPU, but CuPy stand-in finds none" in message
    assert "pip install luisa_nb[cuda]" in message


def test_without_nvrtc_create_device_says_so(monkeypatch):
    modules = _fake_cupy()
    modules["cupy.cuda.nvrtc"].getVersion = nvrtc_library_not_found
    message = _unavailable_message(monkeypatch, modules)
    assert "compiles its kernels with NVRTC" in message and "libnvrtc.so.12" in message
    assert "pip install luisa_nb[cuda]" in message and "nvidia-cuda-nvrtc-cu12" in message


def test_cuda_device_names_parse_with_an_index_and_a_policy():
    from luisa_nb.runtime.config import DeviceConfig

    config = DeviceConfig._from_text("cuda:1:submit")
    assert config.backend == "cuda" and config.option_dict == {"device_index": 1}
    assert config.label == "cuda:1:submit"
    assert DeviceConfig._from_text("cuda").label == "cuda"


def test_cuda_benchmark_scripts_parse_and_fail_loudly(tmp_path):
    """The GPU check's scripts, as far as a machine without a GPU can run them: the shell
    scripts parse, the benchmark's --check emits its kernels, and without a GPU all three
    say that nothing was checked and exit 2 (not 0), the session writing no results."""
    root = Path(__file__).resolve().parents[2]
    environment = {**os.environ, "PYTHONPATH": str(root)}

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            command, cwd=root, env=environment, capture_output=True, text=True, timeout=300
        )

    assert run("bash", "-n", "benchmarks/gpu_check.sh").returncode == 0
    assert run("bash", "-n", "benchmarks/gpu_session.sh").returncode == 0
    usage = run("bash", "benchmarks/gpu_session.sh", "run")
    assert usage.returncode == 2 and "usage: benchmarks/gpu_session.sh" in usage.stderr
    check = run(sys.executable, "benchmarks/bench_cuda.py", "--check")
    assert check.returncode == 0, check.stderr
    assert "4 kernels emitted as CUDA source" in check.stdout
    wrong = run(sys.executable, "benchmarks/bench_cuda.py", "--count", "0")
    assert wrong.returncode == 2 and "--count must be at least 1" in wrong.stderr
    if GPU_REASON is None:
        return
    bench = run(sys.executable, "benchmarks/bench_cuda.py")
    assert bench.returncode == 2 and "nothing measured" in bench.stderr
    script = run("bash", "benchmarks/gpu_check.sh")
    assert script.returncode == 2, script.stdout + script.stderr
    assert "no GPU here, nothing was checked" in script.stderr
    results = tmp_path / "results"
    session = run("bash", "benchmarks/gpu_session.sh", "run", str(results))
    assert session.returncode == 2, session.stdout + session.stderr
    assert "gpu_session: no GPU here, nothing was checked" in session.stderr
    assert not results.exists()


# --- a CPU stand-in for CuPy ----------------------------------------------------------


class _Memory(np.ndarray):
    """Host bytes standing in for device or pinned memory (``ptr``, ``size``)."""

    ptr: int

    def copy_from_device_async(self, source: _Memory, nbytes: int, stream: _Stream) -> None:
        _on_stream(stream.ptr, lambda: ctypes.memmove(self.ptr, source.ptr, nbytes))

    def memset(self, value: int, nbytes: int) -> None:
        """``cudaMemset``: done when it returns."""
        ctypes.memset(self.ptr, value, nbytes)


def _memory(nbytes: int) -> _Memory:
    memory = np.zeros(max(nbytes, 1), np.uint8).view(_Memory)
    memory.ptr = memory.ctypes.data
    return memory


def _run_stream(work: queue.SimpleQueue, errors: list[BaseException]) -> None:
    """A stream's thread: run what is enqueued, in order, until None comes."""
    while (item := work.get()) is not None:
        try:
            item()
        except BaseException as error:  # raised at the stream's next synchronize()
            errors.append(error)


class _Stream:
    """A CUDA stream as a GPU runs one: the work enqueued on it runs in order on a thread
    of its own, while the host goes on; ``synchronize()`` waits for it and raises what
    failed. So the backend is checked under real asynchrony: host memory it reused or
    freed before the stream had passed it would give wrong bytes."""

    by_pointer: weakref.WeakValueDictionary[int, _Stream] = weakref.WeakValueDictionary()

    def __init__(self, non_blocking: bool = False) -> None:
        self.ptr = id(self)
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._errors: list[BaseException] = []
        threading.Thread(target=_run_stream, args=(self._work, self._errors), daemon=True).start()
        weakref.finalize(self, self._work.put, None)
        _Stream.by_pointer[self.ptr] = self

    def enqueue(self, work: Callable[[], object]) -> None:
        self._work.put(work)

    def synchronize(self) -> None:
        done = threading.Event()
        self._work.put(done.set)
        done.wait()
        if self._errors:
            raise self._errors.pop(0)


def _on_stream(pointer: int, work: Callable[[], object]) -> None:
    """``work`` enqueued on the stream at ``pointer`` (the legacy stream, 0: run now)."""
    stream = _Stream.by_pointer.get(pointer)
    if stream is None:
        work()
    else:
        stream.enqueue(work)


class _Event:
    def record(self, stream: _Stream | None = None) -> None:
        _on_stream(stream.ptr if stream else 0, self._reached)

    def _reached(self) -> None:
        self.time = time.perf_counter_ns()


class _Device:
    compute_capability = "00"

    def __init__(self, index: int = 0) -> None:
        self.index = index

    def use(self) -> None:
        return None

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exception: object) -> None:
        return None


class _Function:
    """A ``__global__`` function of the emulation, called as CuPy calls a RawKernel: on
    the grid and block the backend asks for."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self.entry = library.lnb_emulate0_grid
        self.entry.argtypes = [ctypes.c_void_p] * 5
        self.entry.restype = None
        arguments_size = library.lnb_emulate0_grid_arguments_size
        arguments_size.restype = ctypes.c_size_t
        self.arguments_size = arguments_size()
        self.failed = emulation_failure_function(library._name)
        self.launches: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def compile(self) -> None:
        """What an NVRTC compile does to the process's signal handling, which the
        backend must undo (see ``luisa_nb.kernels.cuda.nvrtc``)."""
        signal.siginterrupt(signal.SIGINT, False)

    def __call__(self, grid, block, arguments, stream=None) -> None:
        """Enqueue the launch on ``stream``; the packed arguments are copied now, as CUDA
        copies kernel parameters when a launch is made."""
        pointer, record, cancel = arguments
        self.launches.append((tuple(grid), tuple(block)))
        dims = [np.array(d, np.uint32) for d in (grid, block)]
        packed = np.frombuffer(ctypes.string_at(pointer.ptr, self.arguments_size), np.uint8)

        def launch() -> None:
            self.entry(dims[0].ctypes.data, dims[1].ctypes.data, packed.ctypes.data,
                       int(record), int(cancel))  # fmt: skip
            failure = self.failed()  # this thread's, so read here
            assert failure is None, failure.decode()

        _on_stream(stream.ptr if stream else 0, launch)


class _RawModule:
    """Builds the CUDA source with the emulation header; calls run it on the CPU."""

    functions: list[_Function] = []

    def __init__(self, code: str, options: tuple[str, ...] = ()) -> None:
        self.code = code

    def get_function(self, name: str) -> _Function:
        # the block size only shapes the unit's C-path entry, which is not called here
        library = ctypes.CDLL(str(build_unit(emulation_unit([(self.code, name, (1, 1, 1))]))))
        function = _Function(library)
        _RawModule.functions.append(function)
        return function


def _fake_cupy() -> dict[str, types.ModuleType]:
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")
    function = types.ModuleType("cupy.cuda.function")
    runtime = types.ModuleType("cupy.cuda.runtime")
    nvrtc = types.ModuleType("cupy.cuda.nvrtc")
    cupy.__version__ = "stand-in"
    cupy.cuda = cuda
    cupy.RawModule = _RawModule
    cupy.empty = lambda n, dtype: types.SimpleNamespace(data=_memory(n * np.dtype(dtype).itemsize))
    cuda.runtime = runtime
    cuda.function = function
    cuda.nvrtc = nvrtc
    cuda.compiler = types.SimpleNamespace(CompileException=type("CompileException", (), {}))
    cuda.Stream, cuda.Event, cuda.Device = _Stream, _Event, _Device
    cuda.alloc = cuda.alloc_pinned_memory = _memory
    cuda.get_elapsed_time = lambda start, end: (end.time - start.time) / 1e6
    function.CPointer = type(
        "CPointer", (), {"__init__": lambda self, p=0: setattr(self, "ptr", p)}
    )
    runtime.CUDARuntimeError = type("CUDARuntimeError", (RuntimeError,), {})
    runtime.memcpyHostToDevice, runtime.memcpyDeviceToHost = 1, 2
    runtime.memcpyDeviceToDevice = 3
    runtime.getDeviceCount = lambda: 1
    runtime.memcpy = lambda dst, src, size, kind: ctypes.memmove(dst, src, size)
    runtime.memcpyAsync = lambda dst, src, size, kind, stream: _on_stream(
        stream, lambda: ctypes.memmove(dst, src, size)
    )
    runtime.memset = lambda pointer, value, size: ctypes.memset(pointer, value, size)
    runtime.memsetAsync = lambda pointer, value, size, stream: _on_stream(
        stream, lambda: ctypes.memset(pointer, value, size)
    )
    runtime.getDeviceProperties = lambda index: {"name": b"CPU stand-in", "totalGlobalMem": 0}
    runtime.runtimeGetVersion = runtime.driverGetVersion = lambda: 0
    nvrtc.getVersion = lambda: (12, 9)
    return dict(zip(CUPY_MODULES, (cupy, cuda, function, runtime, nvrtc), strict=True))


@pytest.fixture
def stand_in(monkeypatch) -> Iterator[None]:
    """``luisa_nb.backends.cuda`` imported over the CPU stand-in for CuPy."""
    _forget_backend_module()
    for name, module in _fake_cupy().items():
        monkeypatch.setitem(sys.modules, name, module)
    importlib.import_module(MODULE)
    yield
    _forget_backend_module()


@pytest.fixture(params=["execute", "submit"])
def policy(request) -> str:
    return request.param


@pytest.fixture
def stand_in_device(stand_in, policy):
    device = create_device("cuda", staging=policy)
    yield device
    device.close()


@needs_compilers
def test_stand_in_seed_is_stale_only_under_submit(stand_in_device, policy):
    run = run_seed(stand_in_device)
    expected = expected_rows()
    np.testing.assert_array_equal(run.z_data, expected)
    stale = [check.command_id for check in run.trace.uploads if check.stale]
    if policy == "execute":
        np.testing.assert_array_equal(run.x, expected)
        assert not stale
    else:
        np.testing.assert_array_equal(run.x, np.full(expected.size, SEED_FILL, np.float32))
        assert len(stale) == 1


@needs_compilers
@pytest.mark.parametrize("make_program", FIXED_PROGRAMS, ids=lambda make: make.__name__)
def test_stand_in_conformance_programs(stand_in_device, make_program):
    failure = check_program(stand_in_device, make_program())
    assert failure is None, failure


def record_squares(indirect, count):
    """Entry i: i + 1 threads of kernel id i, in blocks of 32."""
    i = dispatch_id().x
    indirect.set_dispatch_count(count)
    indirect.set_kernel(i, uint3(32, 1, 1), uint3(i + 1, 1, 1), i)


def add_dispatch_sizes(out):
    set_block_size(32, 1, 1)
    out.atomic_fetch_add(kernel_id(), uint(dispatch_size().x))


@needs_compilers
def test_stand_in_runs_indirect_dispatches(stand_in_device):
    """The entries are read back (a deferred download, waited for) before the launches,
    one per entry, each with its kernel id; a count above the capacity fails."""
    device = stand_in_device
    indirect = device.create_indirect_dispatch_buffer(4)
    out = device.create_buffer(4, np.uint32)
    out.fill(0)
    kernel(record_squares)(indirect, np.uint32(4), dispatch_size=4)
    kernel(add_dispatch_sizes)(out, dispatch_size=indirect)
    assert out.numpy().tolist() == [1, 4, 9, 16]
    kernel(record_squares)(indirect, np.uint32(5), dispatch_size=4)
    kernel(add_dispatch_sizes)(out, dispatch_size=indirect)
    with pytest.raises(CommandFailedError, match="dispatch count is 5, more than the 4"):
        device.synchronize()


@needs_compilers
def test_stand_in_kernels_fills_copies_and_spans(stand_in_device):
    device = stand_in_device
    info = device.info
    assert info["name"] == "cuda" and info["gpu"] == "CPU stand-in"
    assert info["cupy_version"] == "stand-in" and info["readback"] == "fence"

    @kernel
    def shift(points, offset):
        i = dispatch_id().x
        points.write(i, points.read(i) + offset * float(i))

    points = device.create_buffer(5, dtype_of(float3))
    with Trace() as trace:
        points.fill(np.array((1.0, 2.0, 3.0), dtype_of(float3)))
        shift(points, float3(0.5, 0.0, -1.0), dispatch_size=5)
        values = points.numpy()
    i = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(values["x"], 1 + 0.5 * i)
    np.testing.assert_array_equal(values["z"], 3 - i)
    executable = next(iter(device.backend._kernels.keys()))
    entry = 'extern "C" __global__ __launch_bounds__(256) void lnb_shift('
    assert entry in device.backend.cuda_source(executable)
    spans = [(r.device_started, r.device_finished) for r in trace.commands]
    assert spans and all(s is not None and f is not None and s <= f for s, f in spans)

    numbers = device.create_buffer(10, np.float32)
    numbers.copy_from(np.arange(10, dtype=np.float32))
    numbers.view(2, 10).copy_to_buffer(numbers.view(0, 8), sync=True)  # overlapping
    np.testing.assert_array_equal(numbers.numpy(), [2, 3, 4, 5, 6, 7, 8, 9, 8, 9])


@needs_compilers
def test_stand_in_failed_check_raises_on_synchronize(stand_in_device):
    @kernel
    def past_the_end(values):
        i = dispatch_id().x
        values.write(i + 3, 1.0)

    values = stand_in_device.create_buffer(4, np.float32)
    past_the_end(values, dispatch_size=4)
    with pytest.raises(CommandFailedError, match="thread \\(1, 0, 0\\)"):
        stand_in_device.default_stream.synchronize()


@needs_compilers
def test_stand_in_a_cuda_error_fails_the_dispatch_and_the_trace_keeps_it(
    stand_in_device, monkeypatch
):
    """An asynchronous error (an illegal address, say) surfaces at the stream's
    synchronize in ``flush()``: it is the run's first dispatch that fails, not an
    IndexError after the run's spans were cleared."""
    error = sys.modules["cupy.cuda.runtime"].CUDARuntimeError
    values = stand_in_device.create_buffer(4, np.float32)
    values.copy_from(np.zeros(4, np.float32))

    wait_for_the_stream = _Stream.synchronize

    def illegal_address(self) -> None:
        """As CUDA reports a sticky error: after the stream's work has ended, so the
        backend may free what that work used."""
        wait_for_the_stream(self)
        raise error("cudaErrorIllegalAddress: an illegal memory access was encountered")

    monkeypatch.setattr(_Stream, "synchronize", illegal_address)
    with Trace() as trace:
        kernel(double)(values, dispatch_size=4)
        with pytest.raises(CommandFailedError, match="CUDA reported an error: cudaErrorIllegal"):
            stand_in_device.default_stream.synchronize()
    (command,) = trace.commands
    assert command.status is Status.FAILED
    stand_in_device.close()  # the error was raised once: closing does not raise it again


@needs_compilers
def test_the_gpu_benchmark_runs_end_to_end_on_the_stand_in(stand_in, monkeypatch, capsys):
    """``bench_cuda.py --smoke``: every measurement and comparison of the GPU benchmark,
    at small sizes, so that no GPU time goes to finding a mistake in the script."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    bench = importlib.import_module("bench_cuda")
    assert bench.main(["--smoke", "--tests", "57 passed"]) == 0
    table = capsys.readouterr().out
    assert "smoke run, numbers mean nothing: cuda backend on CPU stand-in" in table
    for row in ("GPU tests", "vecadd 2^12 float32", "tiny dispatch (execute)",
                "tiny dispatch, one submission each (submit)",
                "4 KiB upload (submit)", "64 KiB upload (submit: pinned at submit)",
                "tiny dispatch traced", "mandelbrot 64^2 (identical)",
                "block reduction 2^12 (identical)"):  # fmt: skip
        assert row in table
    seed = [line.split() for line in table.splitlines() if line.lstrip().startswith("seed #143")]
    assert [(words[2], words[-4], words[-1]) for words in seed] == [
        ("(submit):", "1024", "STALE_UPLOAD"),
        ("(execute):", "0", "LATENT_STALE_UPLOAD"),
    ]


LUISA_PROGRAMS = Path(__file__).resolve().parents[1] / "luisa" / "programs"
LUISA_PROGRAM_NAMES = [
    "bindless.py", "bindless3d.py", "indirect.py", "kernel_rules.py", "shared_memory.py"
]  # fmt: skip
"""Programs whose output holds no transcendental function's result, so a GPU prints the
same as the cpu backend."""


def _luisa_program_output(name: str, backend: str, capsys) -> str:
    """What the luisa-python program ``name`` of ``tests/luisa/programs`` prints when it
    runs on ``backend`` (it takes the backend as its first argument)."""
    import luisa_nb.luisa as luisa
    from tests.luisa.running import run_on_luisa_nb

    capsys.readouterr()
    luisa.del_device()
    try:
        run_on_luisa_nb(LUISA_PROGRAMS / name, backend)
    finally:
        luisa.del_device()
    return capsys.readouterr().out


@needs_compilers
@pytest.mark.parametrize("name", LUISA_PROGRAM_NAMES)
def test_stand_in_runs_luisa_programs_as_the_cpu_backend_does(stand_in, name, capsys):
    """luisa-python programs, unchanged, on ``cuda``: bindless buffers and 2D and 3D
    images, indirect dispatch, luisa's kernel rules, shared arrays and barriers."""
    expected = _luisa_program_output(name, "cpu", capsys)
    assert expected.strip(), f"{name} printed nothing"
    built = len(_RawModule.functions)
    assert _luisa_program_output(name, "cuda", capsys) == expected
    assert len(_RawModule.functions) > built, "no kernel ran on the cuda stand-in"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("wait", CALLBACK_WAITS)
def test_stand_in_a_callback_that_waits_for_its_device_fails_and_the_stream_goes_on(stand_in, wait):
    check_wait_in_callback_fails(create_device("cuda"), wait)  # open: closing could hang


@needs_compilers
def test_stand_in_large_fills_and_zero_fills(stand_in_device):
    n = 100_000  # 1.6 MB of float3: one uploaded chunk, then doubling device copies
    points = stand_in_device.create_buffer(n, dtype_of(float3))
    points.fill(np.array((1.5, -2.0, 4.0), dtype_of(float3)))
    values = points.numpy()
    assert (values["x"] == 1.5).all() and (values["y"] == -2).all() and (values["z"] == 4).all()
    points.fill(np.zeros((), dtype_of(float3)))
    zeroed = points.numpy()
    assert not (zeroed["x"].any() or zeroed["y"].any() or zeroed["z"].any())


@needs_compilers
def test_stand_in_pinned_snapshots_go_to_the_device_without_a_second_copy(stand_in):
    """A snapshot from snapshot_memory is sent as it is and held until the stream has
    finished; any other host array goes through the stream's pinned arena."""
    device = create_device("cuda", staging="submit")
    try:
        backend = device.backend
        allocation = backend.allocate(64)
        snapshot = backend.snapshot_memory(32)
        snapshot[...] = np.arange(32, dtype=np.uint8)
        backend.upload(allocation, 0, snapshot)
        state = backend._local.state
        assert any(held is snapshot for held in state.held) and not state.chunks
        backend.upload(allocation, 32, np.arange(32, 64, dtype=np.uint8))
        assert len(state.chunks) == 1  # the plain array went through the arena
        out = np.zeros(64, np.uint8)
        backend.download(allocation, 0, out)
        backend.flush()
        np.testing.assert_array_equal(out, np.arange(64, dtype=np.uint8))
        assert not state.held and not backend._snapshots
        assert backend.snapshot_memory(0).nbytes == 0
    finally:
        device.close()


@needs_compilers
def test_stand_in_submit_reads_into_pinned_snapshots_at_submit(stand_in):
    """Under submit the runtime reads uploads into the backend's pinned snapshots while
    submit() runs; the uploads then use no arena memory."""
    device = create_device("cuda", staging="submit")
    try:
        buffer = device.create_buffer(256, np.float32)
        host = np.arange(256, dtype=np.float32)
        given = []
        original = device.backend.snapshot_memory

        def logged(nbytes):
            given.append(original(nbytes))
            return given[-1]

        device.transfers.snapshot = logged
        stream = device.default_stream
        with Trace() as trace:
            stream.submit([buffer.copy_from_async(host)])
            returned = time.perf_counter_ns()
            host[:] = -1.0
            stream.synchronize()
        assert [g.nbytes for g in given] == [1024]
        (record,) = trace.commands
        assert record.host_read <= returned
        assert not any(state.chunks for state in device.backend._states)
        np.testing.assert_array_equal(buffer.numpy(), np.arange(256, dtype=np.float32))
        assert not device.backend._snapshots
    finally:
        device.close()


@needs_compilers
def test_stand_in_gives_the_c_results_for_every_codegen_case(stand_in):
    """The GPU test's harness on the stand-in: every codegen case through the backend's
    own operations gives the C path's bytes exactly (the emulation has glibc's math)."""
    _every_codegen_case_gives_the_c_results(set())


def _blocks_and_bindless(device) -> dict[str, np.ndarray]:
    """A block reduction (shared memory, barriers, 64-thread blocks) and bindless reads
    and samples on ``device``; the buffers after."""
    from kernels.block_kernels import bindless_mix, block_reduction

    values = device.create_buffer(1024, np.float32)
    values.copy_from(np.arange(1024, dtype=np.float32) * np.float32(0.5) - 100)
    sums = device.create_buffer(16, np.float32)
    kernel(block_reduction)(values, sums, dispatch_size=1024)
    rng = np.random.default_rng(5)
    floats = device.create_buffer(64, np.float32)
    floats.copy_from(rng.uniform(-4, 4, 64).astype(np.float32))
    ints = device.create_buffer(5, np.int32)
    ints.copy_from(np.arange(5, dtype=np.int32) - 2)
    unit = device.create_buffer(8, np.float32)
    unit.copy_from(rng.uniform(0, 1, 8).astype(np.float32))
    bytes_image = device.create_image(5, 3, 4, "float", "byte")
    bytes_image.copy_from(rng.integers(0, 255, (3, 5, 4)).astype(np.uint8))
    float_image = device.create_image(6, 4, 1, "float")
    float_image.copy_from(rng.uniform(0, 1, (4, 6, 1)).astype(np.float32))
    heap = BindlessArray(device, 6)
    for slot, resource in enumerate((floats, ints, unit, bytes_image, float_image)):
        heap.emplace(slot, resource)
    heap.update()
    out = device.create_buffer(320, np.float32)
    kernel(bindless_mix)(heap, out, dispatch_size=40)
    return {"sums": sums.numpy(), "bindless": out.numpy()}


def _blocks_and_bindless_match_the_cpu(device) -> dict[str, np.ndarray]:
    """Run :func:`_blocks_and_bindless` on ``device`` and on the cpu backend, assert the
    buffers agree bit for bit; ``device``'s buffers."""
    results = _blocks_and_bindless(device)
    cpu = create_device("cpu")
    try:
        expected = _blocks_and_bindless(cpu)
    finally:
        cpu.close()
    for name, want in expected.items():
        np.testing.assert_array_equal(results[name], want, err_msg=name)
    return results


@needs_compilers
def test_stand_in_blocks_and_bindless_give_the_cpu_results(stand_in_device):
    """Shared arrays, barriers and bindless arrays through the backend: the results of
    the cpu backend bit for bit, launched in blocks of the kernel's block size."""
    _RawModule.functions.clear()
    results = _blocks_and_bindless_match_the_cpu(stand_in_device)
    halves = np.arange(1024, dtype=np.float32).reshape(16, 64) * 0.5 - 100
    np.testing.assert_array_equal(results["sums"], halves.sum(axis=1))
    assert results["bindless"].any()
    launches = [launch for f in _RawModule.functions for launch in f.launches]
    assert ((16, 1, 1), (64, 1, 1)) in launches  # the reduction
    assert ((1, 1, 1), (256, 1, 1)) in launches  # bindless_mix: the default block


def _ctrl_c_cancels_a_kernel_that_never_ends(device) -> None:
    from kernels.checked_kernels import spin_forever

    out = device.create_buffer(1000, np.int32)
    with Trace() as trace:
        spin = kernel(spin_forever).dispatch_async(1000, out)  # compiled here
        assert ctrl_c_stops_a_wait(), "after the kernel's compile Ctrl-C no longer stops a wait"
        device.default_stream.submit([spin])
        timer = interrupt_main_thread_after(0.3)
        with pytest.raises(KeyboardInterrupt):
            device.synchronize()
        timer.join()
        device.synchronize()  # a cancelled kernel is not a failure
    (command,) = trace.commands
    assert command.status is Status.CANCELLED
    data = np.arange(1000, dtype=np.int32)
    out.copy_from(data)
    kernel(double)(out, dispatch_size=1000)
    np.testing.assert_array_equal(out.numpy(), data * 2)


def double(out):
    i = dispatch_id().x
    out.write(i, out.read(i) * 2)


@needs_compilers
@needs_main_thread
def test_stand_in_ctrl_c_cancels_a_kernel_that_never_ends(stand_in_device):
    _ctrl_c_cancels_a_kernel_that_never_ends(stand_in_device)


# --- on a GPU -------------------------------------------------------------------------


@needs_gpu
@needs_main_thread
def test_gpu_ctrl_c_cancels_a_kernel_that_never_ends(gpu_device):
    _ctrl_c_cancels_a_kernel_that_never_ends(gpu_device)


@pytest.fixture
def gpu_device(policy):
    _forget_backend_module()
    device = create_device("cuda", staging=policy)
    yield device
    device.close()


@needs_gpu
@pytest.mark.parametrize("name", LUISA_PROGRAM_NAMES)
def test_gpu_runs_luisa_programs_as_the_cpu_backend_does(name, capsys):
    _forget_backend_module()
    expected = _luisa_program_output(name, "cpu", capsys)
    assert _luisa_program_output(name, "cuda", capsys) == expected


@needs_gpu
def test_gpu_info_names_the_gpu(gpu_device):
    info = gpu_device.info
    assert info["gpu"] and info["compute_capability"] and info["cupy_version"]


@needs_gpu
def test_gpu_seed(gpu_device, policy):
    run = run_seed(gpu_device)
    expected = expected_rows()
    np.testing.assert_array_equal(run.z_data, expected)
    stale = [check for check in run.trace.uploads if check.stale]
    if policy == "execute":
        np.testing.assert_array_equal(run.x, expected)
        assert not stale
    else:
        assert len(stale) == 1


@needs_gpu
@pytest.mark.parametrize("make_program", FIXED_PROGRAMS, ids=lambda make: make.__name__)
def test_gpu_conformance_programs(gpu_device, make_program):
    failure = check_program(gpu_device, make_program())
    assert failure is None, failure


@needs_gpu
def test_gpu_upload_download_round_trip(gpu_device):
    rng = np.random.default_rng(7)
    for size in (1, 4096, 1 << 20, 3 * (1 << 22) + 5):
        data = rng.integers(0, 255, size, dtype=np.uint8)
        buffer = gpu_device.create_buffer(size, np.uint8)
        buffer.copy_from(data)
        out = np.zeros_like(data)
        buffer.copy_to(out, sync=True)
        np.testing.assert_array_equal(out, data)


@needs_gpu
def test_gpu_snapshots_are_pinned_and_reach_the_device(gpu_device, policy):
    import cupy

    memory = gpu_device.backend.snapshot_memory(4096)
    attributes = cupy.cuda.runtime.pointerGetAttributes(memory.ctypes.data)
    assert attributes.devicePointer != 0  # page-locked and mapped (pageable memory: 0)
    host = np.arange(1 << 20, dtype=np.float32)
    buffer = gpu_device.create_buffer(host.size, np.float32)
    stream = gpu_device.default_stream
    stream.submit([buffer.copy_from_async(host)])
    host_before = host.copy()
    host[:] = -1.0  # under submit the bytes were read already; under execute maybe not
    stream.synchronize()
    values = buffer.numpy()
    if policy == "submit":
        np.testing.assert_array_equal(values, host_before)
    assert not gpu_device.backend._snapshots


@needs_gpu
def test_gpu_blocks_and_bindless_give_the_cpu_results(gpu_device):
    _blocks_and_bindless_match_the_cpu(gpu_device)


@needs_gpu
def test_gpu_mandelbrot_matches_the_cpu_bit_for_bit(gpu_device):
    from kernels.sample_kernels import mandelbrot

    width, height = 256, 192
    images = []
    cpu = create_device("cpu")
    try:
        for device in (gpu_device, cpu):
            image = device.create_buffer(width * height, np.int32)
            kernel(mandelbrot)(image, width, height, 100, dispatch_size=(width, height))
            images.append(image.numpy())
    finally:
        cpu.close()
    np.testing.assert_array_equal(images[0], images[1])
    assert images[0].max() == 100


@needs_gpu
def test_gpu_failed_check_raises_on_synchronize(gpu_device):
    @kernel
    def past_the_end(values):
        i = dispatch_id().x
        values.write(i + 3, 1.0)

    values = gpu_device.create_buffer(4, np.float32)
    past_the_end(values, dispatch_size=4)
    with pytest.raises(CommandFailedError, match="past_the_end"):
        gpu_device.default_stream.synchronize()


def _codegen_tests():
    """``tests/kernels/test_cuda_codegen.py``, under the name pytest gave it."""
    for name in ("kernels.test_cuda_codegen", "tests.kernels.test_cuda_codegen"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    pytest.skip("tests/kernels/test_cuda_codegen.py cannot be imported from here")


def _run_on_backend(backend, executable, case, seed):
    """``case`` through the backend's own operations as the runtime calls them: upload
    every buffer (captured ones too), dispatch, download, flush; every buffer after."""
    from luisa_nb.backends.base import KernelBuffer

    arguments = _codegen_tests().flat_arguments(case.arguments(np.random.default_rng(seed)))
    given = iter(a for a in arguments if getattr(a, "__lnb_buffer__", False))
    fakes = [next(given) if p.capture is None else p.capture for p in executable.buffer_parameters]
    scalars = [a for a in arguments if not getattr(a, "__lnb_buffer__", False)]
    if executable.kernel_id_position is not None:
        scalars.append(0)  # a direct dispatch's kernel id
    scalars += [
        fakes[p.count_of].array.size for p in executable.scalar_parameters if p.count_of is not None
    ]
    buffers = []
    for fake in fakes:
        allocation = backend.allocate(fake.array.nbytes)
        backend.upload(allocation, 0, fake.array.view(np.uint8).reshape(-1))
        buffers.append(KernelBuffer(allocation, 0, fake.array.nbytes, fake.array.dtype))
    size = case.size if isinstance(case.size, tuple) else (case.size,)
    backend.dispatch(executable, (*size, 1, 1)[:3], buffers, scalars)
    outs = [np.empty(buffer.nbytes, np.uint8) for buffer in buffers]
    for buffer, out in zip(buffers, outs, strict=True):
        backend.download(buffer.allocation, 0, out)
    backend.flush()
    return [out.view(fake.array.dtype) for out, fake in zip(outs, fakes, strict=True)]


TRANSCENDENTAL = {"math_functions", "structs", "geometry", "special_floats"}
"""Cases calling sin, exp, pow or exp10: CUDA's are within a few ulp of glibc's."""


@needs_gpu
def test_gpu_gives_the_c_results_for_every_codegen_case():
    """Every kernel of the codegen tests on the GPU beside the C path: bit for bit, except
    where CUDA's transcendental functions may round differently (then within 1e-5)."""
    _every_codegen_case_gives_the_c_results(TRANSCENDENTAL)


def _every_codegen_case_gives_the_c_results(tolerated: set[str]) -> None:
    """Each codegen case through a cuda device's backend against the C path: the same
    bytes, or for a case in ``tolerated`` float32 values within 1e-5."""
    from luisa_nb.kernels import KernelDefinition, argument_type

    codegen = _codegen_tests()
    device = create_device("cuda")
    try:
        for case in codegen.CASES:
            arguments = case.arguments(np.random.default_rng(0))
            types = tuple(argument_type(a) for a in arguments)
            executable = KernelDefinition(case.function, rules=case.rules).executable(
                types, case.checks
            )
            expected = codegen._launch(executable, case)
            actual = _run_on_backend(device.backend, executable, case, codegen.RNG_SEED)
            for want, got in zip(expected, actual, strict=True):
                values = codegen._value_bytes(want.dtype)
                rows = (-1, want.dtype.itemsize)
                same = np.array_equal(
                    got.view(np.uint8).reshape(rows)[:, values],
                    want.view(np.uint8).reshape(rows)[:, values],
                )
                if same:
                    continue
                assert case.name in tolerated, f"{case.name}: the device and C differ"
                np.testing.assert_allclose(
                    got.view(np.float32), want.view(np.float32), rtol=1e-5, atol=1e-6
                )
    finally:
        device.close()


@needs_gpu
def test_gpu_nvrtc_compiles_every_codegen_case_with_and_without_checks():
    import cupy

    from luisa_nb.kernels import KernelDefinition, argument_type
    from luisa_nb.kernels.checks import KernelChecks
    from luisa_nb.kernels.cuda.emitter import CudaEmitter
    from luisa_nb.kernels.cuda.nvrtc import OPTIONS

    codegen = _codegen_tests()
    for case in codegen.CASES:
        types = tuple(argument_type(a) for a in case.arguments(np.random.default_rng(0)))
        executable = KernelDefinition(case.function, rules=case.rules).executable(
            types, case.checks
        )
        for checks in {case.checks, KernelChecks.OFF}:
            emitter = CudaEmitter(executable.kernel, checks)
            module = cupy.RawModule(code=emitter.emit(), options=OPTIONS)
            module.get_function(emitter.entry_name).compile()
