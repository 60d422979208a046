"""The ``cuda`` backend on a GPU, beside references measured in the same run.

    python benchmarks/bench_cuda.py [--count 2000] [--tests "SUMMARY"] [--check | --smoke]

- vecadd over 2^28 float32 (reads 2 GiB, writes 1 GiB) against a device-to-device copy
  of the same 3 GiB of traffic (1.5 GiB copied), as GB/s and their ratio;
- per-command cost of tiny dispatches and of 4 KiB uploads under both staging policies
  (one submission of COUNT commands, then synchronize), and of tiny dispatches one
  submission each (``tiny(buf, dispatch_size=1)`` COUNT times), beside the ``cpu`` backend;
- the seed of LuisaCompute #143 under both staging policies: how many elements of its
  result are stale, and the hazard the trace names (stale under ``submit``, correct with
  a latent hazard under ``execute``);
- 64 MiB uploads under both staging policies (under ``submit`` read into pinned memory
  at ``submit()``, under ``execute`` copied through the pinned arena when they run);
- tracing overhead: the tiny dispatches traced against untraced;
- a block reduction of 2^24 float32 (shared memory, barriers, 256-thread blocks)
  against the ``cpu`` backend, sums compared;
- mandelbrot 4096x4096 (256 iterations) against the ``cpu`` backend, images compared.

Prints one table with the load average. ``--tests`` adds a row with a test summary (what
``benchmarks/gpu_check.sh`` passes). ``--check`` needs no GPU: it types every kernel here,
emits its CUDA source and, where CuPy can load NVRTC, compiles it for ``sm_90``, then
exits (non-zero on any error). ``--smoke`` runs every measurement once at small sizes,
which a CPU stand-in for CuPy runs in seconds (the tests do): it checks the script end to
end, and its numbers mean nothing. Without CuPy or a GPU the benchmark says why and
exits 2: nothing was measured. It exits 1 when the GPU's results differ from the ``cpu``
backend's, or the seed's are not what its staging policy gives.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from timing import best_of, load_average, print_table

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.errors import BackendUnavailableError
from luisa_nb.recording.trace import Trace
from luisa_nb.seed import expected_rows, run_seed

UPLOAD_BYTES = 4096
REDUCTION_BLOCK = 256
MANDELBROT_ITERATIONS = 256
SMOKE_COUNT = 20
"""Commands per submission under ``--smoke``, unless ``--count`` asks for fewer."""


@dataclass(frozen=True)
class Sizes:
    """What the measurements move and compute, and how many timed runs each takes."""

    vecadd_elements: int = 1 << 28
    large_upload_bytes: int = 64 << 20
    reduction_elements: int = 1 << 24
    mandelbrot_size: int = 4096
    repeats: int = 3


SMOKE = Sizes(
    vecadd_elements=1 << 12,
    large_upload_bytes=64 << 10,
    reduction_elements=1 << 12,
    mandelbrot_size=64,
    repeats=1,
)


def power_of_two(n: int) -> str:
    return f"2^{n.bit_length() - 1}"


def byte_size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


@lnb.kernel
def vecadd(out, a, b):
    i = lnb.dispatch_id().x
    out.write(i, a.read(i) + b.read(i))


@lnb.kernel
def tiny(target):
    target.write(lnb.dispatch_id().x, 1.0)


Partial = lnb.kernels.SharedArrayType(REDUCTION_BLOCK, float)


@lnb.kernel
def block_sums(values, sums):
    """Each block of 256 threads sums its values through shared memory, halving the
    stride with a barrier in every step."""
    lnb.kernels.set_block_size(REDUCTION_BLOCK, 1, 1)
    partial = Partial()
    t = lnb.kernels.thread_id().x
    partial[t] = values.read(lnb.dispatch_id().x)
    stride = REDUCTION_BLOCK // 2
    while stride > 0:
        lnb.kernels.sync_block()
        if t < stride:
            partial[t] = partial[t] + partial[t + stride]
        stride = stride // 2
    if t == 0:
        sums.write(lnb.kernels.block_id().x, partial[0])


@lnb.kernel
def mandelbrot(image, width, height, max_iterations):
    px = lnb.dispatch_id().x
    py = lnb.dispatch_id().y
    cx = float(px) / float(width) * 3.0 - 2.0
    cy = float(py) / float(height) * 2.0 - 1.0
    zx = 0.0
    zy = 0.0
    iteration = 0
    while iteration < max_iterations and zx * zx + zy * zy <= 4.0:
        t = zx * zx - zy * zy + cx
        zy = 2.0 * zx * zy + cy
        zx = t
        iteration += 1
    image.write(py * width + px, iteration)


def bandwidth(device: lnb.Device, sizes: Sizes) -> list[list[object]]:
    """vecadd on ``device`` and a CuPy device-to-device copy of the same traffic."""
    import cupy

    n = sizes.vecadd_elements
    a, b, out = (device.create_buffer(n, np.float32) for _ in range(3))
    a.fill(1.0)
    b.fill(2.0)
    stream = device.default_stream
    traffic = 3 * n * 4

    def run_vecadd() -> None:
        vecadd(out, a, b, dispatch_size=n)
        stream.synchronize()

    vecadd_seconds = best_of(run_vecadd, sizes.repeats)
    if not (out.numpy() == 3.0).all():
        raise RuntimeError("vecadd on the GPU did not give 1 + 2 everywhere")
    copy_bytes = traffic // 2
    source = cupy.empty(copy_bytes, np.uint8)
    target = cupy.empty(copy_bytes, np.uint8)
    copy_stream = cupy.cuda.Stream(non_blocking=True)

    def run_copy() -> None:
        target.data.copy_from_device_async(source.data, copy_bytes, copy_stream)
        copy_stream.synchronize()

    copy_seconds = best_of(run_copy, sizes.repeats)
    vecadd_rate, copy_rate = traffic / vecadd_seconds / 1e9, traffic / copy_seconds / 1e9
    return [
        [f"vecadd {power_of_two(n)} float32", "GB/s", vecadd_rate, "d2d copy, same traffic",
         copy_rate, vecadd_rate / copy_rate],
    ]  # fmt: skip


@dataclass(frozen=True)
class PerCommand:
    """Microseconds per command of one submission of many, and of one submission each."""

    dispatch: float
    upload: float
    dispatch_each: float


def per_command(name: str, staging: str | None, count: int, sizes: Sizes) -> PerCommand:
    """Microseconds per tiny dispatch and per 4 KiB upload on backend ``name``."""
    device = lnb.create_device(name, staging=staging)
    try:
        stream = device.default_stream
        small = device.create_buffer(UPLOAD_BYTES // 4, np.float32)
        host = np.ones(UPLOAD_BYTES // 4, np.float32)

        def dispatches() -> None:
            stream.submit([tiny.dispatch_async(1, small) for _ in range(count)])
            stream.synchronize()

        def uploads() -> None:
            stream.submit([small.copy_from_async(host) for _ in range(count)])
            stream.synchronize()

        def dispatches_each() -> None:
            for _ in range(count):
                tiny(small, dispatch_size=1)
            stream.synchronize()

        def microseconds(function: Callable[[], None]) -> float:
            return best_of(function, sizes.repeats) / count * 1e6

        return PerCommand(microseconds(dispatches), microseconds(uploads),
                          microseconds(dispatches_each))  # fmt: skip
    finally:
        device.close()


def seed_rows() -> tuple[list[list[object]], list[str]]:
    """The seed of #143 on ``cuda`` under each staging policy, as table rows, and what
    differs from what that policy must give (nothing, when all is well)."""
    expected = expected_rows()
    must_give = {"submit": (expected.size, HazardKind.STALE_UPLOAD),
                 "execute": (0, HazardKind.LATENT_STALE_UPLOAD)}  # fmt: skip
    rows, wrong = [], []
    for staging, (must_be_stale, must_name) in must_give.items():
        device = lnb.create_device("cuda", staging=staging)
        try:
            run = run_seed(device)
        finally:
            device.close()
        stale = int(np.count_nonzero(run.x != expected))
        hazards = [hazard.kind for hazard in run.trace.hazards]
        rows.append([f"seed #143 ({staging}): stale elements of x", f"of {expected.size}",
                     stale, "hazard named", ", ".join(kind.name for kind in hazards),
                     ""])  # fmt: skip
        if (stale, hazards) != (must_be_stale, [must_name]):
            wrong.append(f"under {staging!r} {stale} stale and hazards {hazards}, "
                         f"not {must_be_stale} and [{must_name}]")  # fmt: skip
    return rows, wrong


def large_uploads(staging: str, sizes: Sizes) -> float:
    """GB/s of large uploads on the cuda backend under ``staging`` (one per submission,
    synchronized), the bytes checked."""
    device = lnb.create_device("cuda", staging=staging)
    try:
        host = np.arange(sizes.large_upload_bytes // 4, dtype=np.float32)
        buffer = device.create_buffer(host.size, np.float32)

        def upload() -> None:
            buffer.copy_from(host)
            device.default_stream.synchronize()

        seconds = best_of(upload, sizes.repeats)
        if not np.array_equal(buffer.numpy(), host):
            raise RuntimeError(f"a large upload under {staging!r} did not arrive intact")
        return host.nbytes / seconds / 1e9
    finally:
        device.close()


def reduction_seconds(name: str, sizes: Sizes) -> tuple[float, np.ndarray]:
    """Seconds of the block reduction of float32 values on backend ``name``; the sums."""
    n = sizes.reduction_elements
    device = lnb.create_device(name)
    try:
        values = device.create_buffer(n, np.float32)
        values.copy_from((np.arange(n) % 1000).astype(np.float32) * 0.25)
        sums = device.create_buffer(n // REDUCTION_BLOCK, np.float32)

        def run() -> None:
            block_sums(values, sums, dispatch_size=n)
            device.default_stream.synchronize()

        return best_of(run, sizes.repeats), sums.numpy()
    finally:
        device.close()


def check_sources() -> dict[str, str]:
    """The CUDA source of every kernel here by name, typed and emitted without a GPU or
    a C compiler (what ``--check`` runs)."""
    from luisa_nb.kernels.checks import KernelChecks
    from luisa_nb.kernels.cuda.emitter import CudaEmitter
    from luisa_nb.kernels.frontend.captures import CaptureResolver
    from luisa_nb.kernels.type_system import BufferType, ScalarType
    from luisa_nb.kernels.typing.typer import KernelTyper

    f32, i32 = BufferType(ScalarType.FLOAT32), BufferType(ScalarType.INT32)
    integer = ScalarType.INT32
    signatures = [
        (vecadd, (f32, f32, f32)),
        (tiny, (f32,)),
        (block_sums, (f32, f32)),
        (mandelbrot, (i32, integer, integer, integer)),
    ]
    sources = {}
    for kernel, types in signatures:
        definition = kernel.__lnb_kernel_definition__
        typer = KernelTyper(
            definition.kernel_source, types, CaptureResolver(definition.function), "c"
        )
        sources[definition.function.__name__] = CudaEmitter(typer.run(), KernelChecks.BOUNDS).emit()
    return sources


def nvrtc_check(sources: dict[str, str]) -> str:
    """Each source compiled by NVRTC for ``sm_90`` (no GPU needed), or why it was not;
    NVRTC rejecting one raises KernelBuildError."""
    from luisa_nb.kernels.cuda.nvrtc import compile_cuda, nvrtc_version

    try:
        major, minor = nvrtc_version()
    except BackendUnavailableError as error:
        return f"not compiled: {error}"
    for name, source in sources.items():
        compile_cuda(source, name, "sm_90")
    return f"NVRTC {major}.{minor} compiled each for sm_90"


def tracing(device: lnb.Device, count: int, repeats: int) -> tuple[float, float]:
    """Microseconds per tiny dispatch untraced and traced."""
    stream = device.default_stream
    small = device.create_buffer(1, np.float32)

    def dispatches() -> None:
        stream.submit([tiny.dispatch_async(1, small) for _ in range(count)])
        stream.synchronize()

    def traced() -> None:
        with Trace():
            dispatches()

    return best_of(dispatches, repeats) / count * 1e6, best_of(traced, repeats) / count * 1e6


def mandelbrot_seconds(name: str, sizes: Sizes) -> tuple[float, np.ndarray]:
    size = sizes.mandelbrot_size
    device = lnb.create_device(name)
    try:
        image = device.create_buffer(size * size, np.int32)

        def run() -> None:
            mandelbrot(image, size, size, MANDELBROT_ITERATIONS, dispatch_size=(size, size))
            device.default_stream.synchronize()

        seconds = best_of(run, sizes.repeats if name == "cuda" else 1)
        return seconds, image.numpy()
    finally:
        device.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="commands per submission")
    parser.add_argument("--tests", default="", help="a test summary to print in the table")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument(
        "--check", action="store_true", help="emit every kernel's CUDA source, measure nothing"
    )
    modes.add_argument(
        "--smoke", action="store_true", help="every measurement once, at small sizes"
    )
    options = parser.parse_args(argv)
    if options.count < 1:
        parser.error(f"--count must be at least 1, got {options.count}")
    if options.check:
        sources = check_sources()
        print(f"bench_cuda: {len(sources)} kernels emitted as CUDA source; "
              f"{nvrtc_check(sources)}; nothing measured")  # fmt: skip
        return 0
    try:
        device = lnb.create_device("cuda")
    except BackendUnavailableError as error:
        print(f"bench_cuda: no GPU to measure, nothing measured: {error}", file=sys.stderr)
        return 2
    sizes = SMOKE if options.smoke else Sizes()
    count = min(options.count, SMOKE_COUNT) if options.smoke else options.count
    started = time.perf_counter()
    info = device.info
    rows: list[list[object]] = []
    if options.tests:
        rows.append(["GPU tests", "", options.tests, "", "", ""])
    rows += bandwidth(device, sizes)
    cpu = per_command("cpu", None, count, sizes)
    for staging in ("execute", "submit"):
        cuda = per_command("cuda", staging, count, sizes)
        rows.append([f"tiny dispatch ({staging})", "us/command", cuda.dispatch, "cpu backend",
                     cpu.dispatch, cuda.dispatch / cpu.dispatch])  # fmt: skip
        rows.append([f"tiny dispatch, one submission each ({staging})", "us/command",
                     cuda.dispatch_each, "cpu backend", cpu.dispatch_each,
                     cuda.dispatch_each / cpu.dispatch_each])  # fmt: skip
        rows.append([f"4 KiB upload ({staging})", "us/command", cuda.upload, "cpu backend",
                     cpu.upload, cuda.upload / cpu.upload])  # fmt: skip
    pinned = {staging: large_uploads(staging, sizes) for staging in ("submit", "execute")}
    large = byte_size(sizes.large_upload_bytes)
    rows.append([f"{large} upload (submit: pinned at submit)", "GB/s", pinned["submit"],
                 "execute: through the arena", pinned["execute"],
                 pinned["submit"] / pinned["execute"]])  # fmt: skip
    untraced, traced = tracing(device, count, sizes.repeats)
    rows.append(["tiny dispatch traced", "us/command", traced, "untraced", untraced,
                 traced / untraced])  # fmt: skip
    device.close()
    gpu_seconds, gpu_image = mandelbrot_seconds("cuda", sizes)
    cpu_seconds, cpu_image = mandelbrot_seconds("cpu", sizes)
    same = "identical" if np.array_equal(gpu_image, cpu_image) else "DIFFERENT"
    rows.append([f"mandelbrot {sizes.mandelbrot_size}^2 ({same})", "ms", gpu_seconds * 1e3,
                 "cpu backend", cpu_seconds * 1e3, gpu_seconds / cpu_seconds])  # fmt: skip
    gpu_reduction, gpu_sums = reduction_seconds("cuda", sizes)
    cpu_reduction, cpu_sums = reduction_seconds("cpu", sizes)
    sums_same = "identical" if np.array_equal(gpu_sums, cpu_sums) else "DIFFERENT"
    reduction = power_of_two(sizes.reduction_elements)
    rows.append([f"block reduction {reduction} ({sums_same})", "ms", gpu_reduction * 1e3,
                 "cpu backend", cpu_reduction * 1e3, gpu_reduction / cpu_reduction])  # fmt: skip
    seed, seed_wrong = seed_rows()
    rows += seed
    title = (
        f"{'smoke run, numbers mean nothing: ' if options.smoke else ''}"
        f"cuda backend on {info['gpu']} (compute capability {info['compute_capability']}, "
        f"CuPy {info['cupy_version']}); {load_average()}; "
        f"{time.perf_counter() - started:.0f} s"
    )
    print_table(title, ["measurement", "unit", "cuda", "reference", "reference value", "ratio"],
                rows)  # fmt: skip
    if "DIFFERENT" in (same, sums_same):
        print("bench_cuda: the GPU's results differ from the cpu backend's", file=sys.stderr)
    for wrong in seed_wrong:
        print(f"bench_cuda: the seed on the GPU: {wrong}", file=sys.stderr)
    return 1 if "DIFFERENT" in (same, sums_same) or seed_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
