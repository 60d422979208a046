"""The CUDA emitter on the CPU: the test kernels' CUDA source, built with the emulation
header by the C++ compiler, must give the C path's results bit for bit.

Every kernel of a batch is built in one translation unit (one compiler run), so the
module costs a few compiler runs however many kernels it covers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from helpers.cuda import needs_nvrtc
from helpers.cuda_emulation import (
    EmulationError,
    build_unit,
    emulate,
    emulation_failure_function,
    emulation_unit,
    find_cxx_compiler,
)

from luisa_nb.conformance import kernels as conformance_kernels
from luisa_nb.errors import KernelBarrierError, KernelIndexError, UnsupportedFeatureError
from luisa_nb.kernels import (
    KernelDefinition,
    argument_type,
    compiler_available,
    dispatch_id,
    dtype_of,
    exp10,
    fmod,
    isinf,
    isnan,
    kernel_id,
    pow,
    set_block_size,
)
from luisa_nb.kernels.c.executable import run_launch
from luisa_nb.kernels.c.toolchain import load_launch_function
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.cuda.emitter import CudaEmitter, grid_of
from luisa_nb.kernels.cuda.nvrtc import NvrtcWarning, compile_cuda
from luisa_nb.kernels.lang.matrices import float3x3
from luisa_nb.kernels.lang.scalar_names import uint
from luisa_nb.kernels.lang.vectors import float2, float3, int2, uint3
from luisa_nb.kernels.rules import LUISA_RULES, PYTHON_RULES, KernelRules
from luisa_nb.kernels.type_system import resource_kind_of
from luisa_nb.runtime import kernel

from . import (
    atomic_kernels,
    block_kernels,
    image_kernels,
    matrix_kernels,
    sample_kernels,
    vector_kernels,
)
from .helpers import FakeBuffer, FakeIndirect, load_function, run
from .test_kernel_callables import buffers_in_callables, fractal, several_returns
from .test_kernel_images import FakeImage
from .test_kernel_structs import Outer, Pair, struct_arguments, structs_kernel

pytestmark = pytest.mark.skipif(
    not compiler_available() or find_cxx_compiler() is None, reason="no C and C++ compiler"
)
F32 = np.float32
RNG_SEED = 143


@dataclass(frozen=True)
class Case:
    """A kernel, its dispatch size, and a function making fresh arguments."""

    name: str
    function: Callable[..., None]
    size: int | tuple[int, ...]
    arguments: Callable[[np.random.Generator], list[Any]]
    checks: KernelChecks = KernelChecks.BOUNDS
    rules: KernelRules = PYTHON_RULES


matrix_arithmetic = kernel(matrix_kernels.arithmetic)  # a callable


def matrix_arithmetic_in_large_blocks(matrices, others, vectors, out_matrices, out_vectors,
                                      out_scalars, scale):  # fmt: skip
    """A kernel that needs many registers, in blocks of 1024 threads (at most 64 each)."""
    set_block_size(1024, 1, 1)
    matrix_arithmetic(matrices, others, vectors, out_matrices, out_vectors, out_scalars, scale)


def luisa_rules(a, b, quotient, remainder, mixed, ends):
    """luisa-python's rules: C's integer division, signed with unsigned, loop end values."""
    i = dispatch_id().x
    x, y = a.read(i), b.read(i)
    quotient.write(i, x // y)
    remainder.write(i, x % y)
    mixed.write(i, 1 if x < uint(3) else 0)
    for k in range(x & 7):  # noqa: B007 (read after the loop)
        pass
    ends.write(i, k)


def wide_atomics(longs, uints, doubles):
    """Atomics on int64, uint32 and float64 elements (CUDA's 64-bit and unsigned forms)."""
    i = dispatch_id().x
    longs.atomic_fetch_add(0, 3)
    longs.atomic_fetch_min(1, -7)
    longs.atomic_fetch_max(2, 9)
    longs.atomic_fetch_xor(3, 5)
    uints.atomic_fetch_sub(0, 1)
    uints.atomic_fetch_or(1, 6)
    doubles.atomic_fetch_add(0, 0.5)
    doubles.atomic_fetch_min(1, -0.25)
    doubles.atomic_exchange(2 + i % 2, 1.5)
    doubles.atomic_compare_exchange(4, 0.0, 7.0)


def special_floats(out, flags):
    """Infinity and NaN constants and tests, and float helpers CUDA spells as C does."""
    i = dispatch_id().x
    x = float(i) - 2.0
    big = math.inf
    y = x / 0.0 if i == 2 else x
    out.write(i, y + exp10(x * 0.1) + pow(2.0, x) + fmod(x, 1.5))
    flags.write(i, int(isnan(y)) + 2 * int(isinf(y)) + 4 * int(-big < x) + 8 * int(isinf(big)))


def _floats(rng: np.random.Generator, n: int, low: float = -4.0, high: float = 4.0) -> FakeBuffer:
    return FakeBuffer(rng.uniform(low, high, n).astype(F32))


def _matrices(rng: np.random.Generator, n: int) -> FakeBuffer:
    data = np.zeros(n, dtype_of(float3x3))
    data.view(F32)[...] = rng.uniform(-2, 2, data.view(F32).shape).astype(F32)
    return FakeBuffer(data)


def _image(rng: np.random.Generator, image: FakeImage) -> FakeImage:
    image.array[...] = rng.uniform(0, 1, image.array.shape).astype(image.array.dtype)
    return image


def _matrix_arithmetic_arguments(r: np.random.Generator) -> list[Any]:
    return [
        _matrices(r, 6),
        _matrices(r, 6),
        FakeBuffer(r.uniform(-1, 1, (6, 4)).astype(F32).view(dtype_of(float3)).ravel()),
        FakeBuffer(np.zeros(54, dtype_of(float3x3))),
        FakeBuffer(np.zeros(12, dtype_of(float3))),
        FakeBuffer(np.zeros(6, F32)),
        F32(1.5),
    ]


def _value_bytes(dtype: np.dtype, mask: np.ndarray | None = None, offset: int = 0) -> np.ndarray:
    """Which bytes of an element of ``dtype`` hold values (not padding)."""
    mask = np.zeros(dtype.itemsize, bool) if mask is None else mask
    if dtype.fields:
        for field_type, field_offset, *_ in dtype.fields.values():
            _value_bytes(field_type, mask, offset + field_offset)
    elif dtype.subdtype:
        base, shape = dtype.subdtype
        for index in range(int(np.prod(shape))):
            _value_bytes(base, mask, offset + index * base.itemsize)
    else:
        mask[offset : offset + dtype.itemsize] = True
    return mask


class FakeHeap:
    """Bindless-array-like by duck typing: fake buffers and images by ``(slot, kind)``;
    ``resources`` maps slots to resources, or lists ``(slot, resource)`` pairs where a
    slot holds a buffer and an image."""

    __lnb_bindless__ = True

    def __init__(self, resources: dict[int, FakeBuffer] | list[tuple[int, FakeBuffer]]) -> None:
        pairs = resources.items() if isinstance(resources, dict) else resources
        self._resources = {}
        for slot, resource in pairs:
            resource.size = resource.array.size
            kind = resource_kind_of(argument_type(resource).element)
            self._resources[(slot, kind)] = resource

    def resources(self) -> dict[tuple[int, str], FakeBuffer]:
        return dict(sorted(self._resources.items()))

    def samplers(self) -> dict[tuple[int, str], Any]:
        """No slot names a sampler: images sample bilinearly with repeat addressing."""
        return {}

    def views(self) -> list[FakeBuffer]:
        """The resources in ``(slot, kind)`` order, as a launch passes them."""
        return list(self.resources().values())


def flat_arguments(arguments: list[Any]) -> list[Any]:
    """``arguments`` with each bindless array replaced by its resources in slot order, as
    the kernel's parameters list them."""
    return [v for a in arguments for v in (a.views() if isinstance(a, FakeHeap) else [a])]


def shared_slot(heap, out):
    """Slot 0 holds a buffer and a 2D image: each call uses its own kind."""
    i = dispatch_id().x
    texel = heap.texture2d_read(0, int2(i % 4, 1))
    sample = heap.texture2d_sample(0, float2(0.3, 0.6))
    out.write(i, heap.buffer_read(float, 0, i) + texel.x + sample.y * 2.0)


def volume_slot(heap, out):
    """A 3D image in a bindless slot: texel reads, a trilinear sample and its size."""
    i = dispatch_id().x
    texel = heap.texture3d_read(1, uint3(i % 3, i % 2, 1))
    sample = heap.texture3d_sample(1, float3(0.3 + 0.05 * float(i), 0.6, 0.45))
    size = heap.texture3d_size(1)
    out.write(i, texel.x + sample.y * 2.0 + float(size.z))


def record_dispatches(indirect, out):
    """Entries of an indirect dispatch buffer (entry i: i + 1 threads, kernel id 7 + i),
    the count, and ``kernel_id()`` (0 in a direct dispatch)."""
    i = dispatch_id().x
    indirect.set_kernel(i, uint3(256, 1, 1), uint3(i + 1, 1, 2), i + 7)
    if i == 0:
        indirect.set_dispatch_count(5)
    out.write(i, kernel_id() + uint(i))


def _volume(rng: np.random.Generator, width: int, height: int, depth: int) -> FakeImage:
    image = FakeImage(width, height * depth, 4, "float", np.float32)
    image.height, image.depth = height, depth
    return _image(rng, image)


def _heap(rng: np.random.Generator) -> FakeHeap:
    return FakeHeap({
        0: _floats(rng, 64),
        1: FakeBuffer(rng.integers(-9, 9, 5).astype(np.int32)),
        2: _floats(rng, 8, 0.0, 1.0),
        3: _image(rng, FakeImage(5, 3, 4, "float", np.uint8)),
        4: _image(rng, FakeImage(6, 4, 1, "float", np.float32)),
    })  # fmt: skip


def _pairs(n: int) -> FakeBuffer:
    data = np.zeros(n, Pair.dtype)
    data["my_v0"]["x"] = np.arange(n)
    data["my_v1"]["w"] = 10
    return FakeBuffer(data)


CASES = [
    Case("saxpy", sample_kernels.saxpy, 1000, lambda r: [
        F32(1.5), _floats(r, 1000), _floats(r, 1000), FakeBuffer(np.zeros(1000, F32))]),
    Case("vecadd_unchecked", conformance_kernels.vecadd.__wrapped__, 777, lambda r: [
        FakeBuffer(np.zeros(777, F32)), _floats(r, 777), _floats(r, 777)], checks=KernelChecks.OFF),
    Case("mandelbrot", sample_kernels.mandelbrot, (64, 48), lambda r: [
        FakeBuffer(np.zeros(64 * 48, np.int32)), 64, 48, 200]),
    Case("luisa_rules", luisa_rules, 64, lambda r: [
        FakeBuffer(r.integers(-50, 50, 64).astype(np.int32)),
        FakeBuffer((np.where(r.random(64) < 0.5, -1, 1) * r.integers(1, 7, 64)).astype(np.int32)),
        *(FakeBuffer(np.zeros(64, np.int32)) for _ in range(4))], rules=LUISA_RULES),
    Case("control_flow", sample_kernels.control_flow, 16, lambda r: [
        FakeBuffer(np.zeros(16, np.int32)), 12]),
    Case("nested_ranges", sample_kernels.nested_ranges, 9, lambda r: [
        FakeBuffer(np.zeros(9, np.int32))]),
    Case("division", sample_kernels.division, 64, lambda r: [
        FakeBuffer(r.integers(-50, 50, 64).astype(np.int32)),
        FakeBuffer(r.integers(-6, 6, 64).astype(np.int32)),
        *(FakeBuffer(np.zeros(64, np.int32)) for _ in range(2)),
        *(FakeBuffer(np.zeros(64, F32)) for _ in range(2))]),
    Case("casts", sample_kernels.casts, 32, lambda r: [
        _floats(r, 32), FakeBuffer(np.zeros(32, np.int32)), FakeBuffer(np.zeros(32, F32)),
        FakeBuffer(np.zeros(32, np.bool_))]),
    Case("constants", sample_kernels.constants, 8, lambda r: [FakeBuffer(np.zeros(8, F32))]),
    Case("math_functions", sample_kernels.math_functions, 40, lambda r: [
        FakeBuffer(np.zeros(40, F32)), FakeBuffer(np.zeros(40, np.int32)), F32(0.17)]),
    Case("grid", sample_kernels.grid, (5, 4, 3), lambda r: [FakeBuffer(np.zeros(60, np.int32))]),
    Case("wide_types", sample_kernels.wide_types, 16, lambda r: [
        FakeBuffer(np.zeros(16, np.int64)), np.int64(1 << 40), 5]),
    Case("vector_constructors", vector_kernels.constructors, 8, lambda r: [
        FakeBuffer(np.zeros(8, F32))]),
    Case("swizzles", vector_kernels.swizzles, 8, lambda r: [FakeBuffer(np.zeros(8, F32))]),
    Case("vector_arithmetic", vector_kernels.arithmetic, 8, lambda r: [
        FakeBuffer(np.zeros(8, F32)), F32(1.25)]),
    Case("aliasing", vector_kernels.aliasing, 6, lambda r: [FakeBuffer(np.zeros(6, F32))]),
    Case("unpacking", vector_kernels.unpacking, (4, 3), lambda r: [FakeBuffer(np.zeros(12, F32))]),
    Case("geometry", vector_kernels.geometry, 8, lambda r: [FakeBuffer(np.zeros(8, F32))]),
    Case("vector_mandelbrot", vector_kernels.mandelbrot, (40, 30), lambda r: [
        FakeBuffer(np.zeros(1200, F32))]),
    Case("matrix_arithmetic", matrix_kernels.arithmetic, 6, _matrix_arithmetic_arguments),
    Case("matrix_arithmetic_in_large_blocks", matrix_arithmetic_in_large_blocks, 6,
         _matrix_arithmetic_arguments),
    Case("matrix_constructors", matrix_kernels.constructors, 4, lambda r: [
        FakeBuffer(np.zeros(64, F32))]),
    Case("matrix_arguments", matrix_kernels.arguments_and_fields, 3, lambda r: [
        FakeBuffer(np.zeros(9, dtype_of(float3))),
        float3x3(float3(1, 2, 3), float3(4, 5, 6), float3(7, 8, 10))]),
    Case("structs", structs_kernel, 5, lambda r: [_pairs(5), FakeBuffer(np.zeros(5, Outer.dtype))]),
    Case("struct_arguments", struct_arguments, 4, lambda r: [
        FakeBuffer(np.zeros(4, F32)), Pair(my_v0=float3(1.0, 2.0, 3.0)), F32(3)]),
    Case("fractal", fractal, (24, 24), lambda r: [FakeBuffer(np.zeros(576, np.int32)), 24]),
    Case("several_returns", several_returns, 12, lambda r: [FakeBuffer(np.zeros(12, F32))]),
    Case("buffers_in_callables", buffers_in_callables, 10, lambda r: [
        FakeBuffer(np.ones(10, F32))]),
    Case("histogram", atomic_kernels.histogram, 4096, lambda r: [
        FakeBuffer(r.integers(0, 1000, 4096).astype(np.int32)),
        FakeBuffer(np.zeros(16, np.int32))]),
    Case("int_reductions", atomic_kernels.int_reductions, 300, lambda r: [
        FakeBuffer(r.integers(-1000, 1000, 300).astype(np.int32)),
        FakeBuffer(np.array([1 << 30, -(1 << 30), -1, 0, 0, 7], np.int32))]),
    Case("float_reductions", atomic_kernels.float_reductions, 256, lambda r: [
        FakeBuffer(r.integers(-64, 64, 256).astype(F32) * F32(0.5)),
        FakeBuffer(np.array([0, 0, np.inf, -np.inf], F32))]),
    Case("old_values", atomic_kernels.old_values, 8, lambda r: [
        FakeBuffer(r.integers(0, 9, 72).astype(np.int32)),
        FakeBuffer(r.integers(-9, 9, 8).astype(np.int32)), FakeBuffer(np.zeros(72, np.int32))]),
    Case("first_claim", atomic_kernels.first_claim, 64, lambda r: [
        FakeBuffer(np.array([-1], np.int32)), FakeBuffer(np.zeros(1, np.int32))]),
    Case("float_compare_exchange", atomic_kernels.float_compare_exchange, 4, lambda r: [
        FakeBuffer(np.array([0.0, -0.0, 2.0, np.nan], F32))]),
    Case("sum_in_expression", atomic_kernels.sum_in_expression, 1, lambda r: [
        FakeBuffer(np.zeros(1, np.int32)), FakeBuffer(np.zeros(1, np.int32))]),
    Case("wide_atomics", wide_atomics, 40, lambda r: [
        FakeBuffer(np.array([0, 5, -3, 0], np.int64)), FakeBuffer(np.array([100, 0], np.uint32)),
        FakeBuffer(np.array([0, 1, 0, 0, 0], np.float64))]),
    Case("special_floats", special_floats, 8, lambda r: [
        FakeBuffer(np.zeros(8, F32)), FakeBuffer(np.zeros(8, np.int32))]),
    Case("image_gradient", image_kernels.gradient, (16, 8), lambda r: [
        FakeImage(16, 8, 4, "float", np.uint8)]),
    Case("image_mandelbrot", image_kernels.mandelbrot, (32, 24), lambda r: [
        FakeImage(32, 24, 4, "float", np.uint8)]),
    Case("image_floats", image_kernels.copy_into_floats, (4, 1), lambda r: [
        _image(r, FakeImage(4, 1, 2, "float", np.float32)), FakeBuffer(np.zeros(8, F32))]),
    Case("block_reduction", block_kernels.block_reduction, 1024, lambda r: [
        FakeBuffer(r.integers(-64, 64, 1024).astype(F32) * F32(0.25)),
        FakeBuffer(np.zeros(16, F32))]),
    Case("block_reduction_unchecked", block_kernels.block_reduction, 640, lambda r: [
        _floats(r, 640), FakeBuffer(np.zeros(10, F32))], checks=KernelChecks.OFF),
    Case("prefix_scan", block_kernels.prefix_scan, 70, lambda r: [
        _floats(r, 70), FakeBuffer(np.zeros(70, F32)), 5]),
    Case("stencil", block_kernels.stencil, 1000, lambda r: [
        _floats(r, 1000), FakeBuffer(np.zeros(1000, F32))]),
    Case("block_sums_2d", block_kernels.block_sums_2d, (32, 12), lambda r: [
        _floats(r, 384), FakeBuffer(np.zeros(12, F32)), 32]),
    Case("block_ids", block_kernels.block_ids, (9, 5, 3), lambda r: [
        FakeBuffer(np.zeros(135, np.int32))]),
    Case("shared_shift", sample_kernels.shared_shift, 200, lambda r: [
        _floats(r, 200), FakeBuffer(np.zeros(200, F32))]),
    Case("bindless_mix", block_kernels.bindless_mix, 40, lambda r: [
        _heap(r), FakeBuffer(np.zeros(320, F32))]),
    Case("bindless_mix_unchecked", block_kernels.bindless_mix, 24, lambda r: [
        _heap(r), FakeBuffer(np.zeros(192, F32))], checks=KernelChecks.OFF),
    Case("bindless_gather", sample_kernels.bindless_gather, 16, lambda r: [
        FakeHeap({0: _floats(r, 16), 1: _image(r, FakeImage(4, 2, 4, "float", np.uint8))}),
        FakeBuffer(np.zeros(16, F32))]),
    Case("shared_slot", shared_slot, 16, lambda r: [
        FakeHeap([(0, _floats(r, 16)), (0, _image(r, FakeImage(4, 2, 4, "float", np.uint8)))]),
        FakeBuffer(np.zeros(16, F32))]),
    Case("volume_slot", volume_slot, 12, lambda r: [
        FakeHeap([(1, _volume(r, 3, 2, 2))]), FakeBuffer(np.zeros(12, F32))]),
    Case("indirect_entries", record_dispatches, 5, lambda r: [
        FakeIndirect(5), FakeBuffer(np.zeros(5, np.uint32))]),
    Case("nan_checked_saxpy", sample_kernels.saxpy, 100, lambda r: [
        F32(2.0), _floats(r, 100), _floats(r, 100), FakeBuffer(np.zeros(100, F32))],
        checks=KernelChecks.BOUNDS_AND_FINITE),
]  # fmt: skip


def _batches(cases: list[Case]) -> list[list[Case]]:
    """Cases split so that no batch holds two kernels of one name (their ``__global__``
    functions are ``extern "C"``)."""
    batches: list[list[Case]] = []
    for case in cases:
        name = case.function.__name__
        home = next((b for b in batches if all(c.function.__name__ != name for c in b)), None)
        if home is None:
            batches.append(home := [])
        home.append(case)
    return batches


@pytest.fixture(scope="module")
def built() -> dict[str, tuple[Any, Any]]:
    """Each case's C executable and CUDA emulation."""
    executables: dict[str, tuple[Any, Any]] = {}
    for batch in _batches(CASES):
        c_executables = []
        for case in batch:
            types = tuple(argument_type(a) for a in case.arguments(np.random.default_rng(0)))
            definition = KernelDefinition(case.function, rules=case.rules)
            c_executables.append(definition.executable(types, case.checks))
        emulated = emulate([(e.kernel, e.kernel_source, e.checks) for e in c_executables])
        for case, c_executable, cuda in zip(batch, c_executables, emulated, strict=True):
            executables[case.name] = (c_executable, cuda)
    return executables


class _Built:
    """An executable built already, in the place of the definition ``helpers.run`` asks."""

    def __init__(self, executable: Any) -> None:
        self._executable = executable

    def executable(self, types: Any, checks: Any) -> Any:
        return self._executable


def _launch(executable: Any, case: Case) -> list[np.ndarray]:
    """Run ``executable`` on fresh arguments like ``helpers.run``; every buffer after."""
    arguments = flat_arguments(case.arguments(np.random.default_rng(RNG_SEED)))
    run(_Built(executable), case.size, *arguments, checks=case.checks)
    buffers = [a for a in arguments if isinstance(a, FakeBuffer)]
    captured = [p.capture for p in executable.buffer_parameters if p.capture is not None]
    return [b.array.copy() for b in [*buffers, *captured]]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_cuda_source_gives_the_c_results_bit_for_bit(built, case):
    c_executable, cuda = built[case.name]
    expected = _launch(c_executable, case)
    actual = _launch(cuda, case)
    assert any(a.view(np.uint8).any() for a in expected), "the C path wrote nothing to compare"
    for want, got in zip(expected, actual, strict=True):
        assert want.dtype == got.dtype
        values = _value_bytes(want.dtype)  # padding bytes hold whatever a copy left there
        rows = (-1, want.dtype.itemsize)
        got_bytes, want_bytes = got.view(np.uint8).reshape(rows), want.view(np.uint8).reshape(rows)
        np.testing.assert_array_equal(got_bytes[:, values], want_bytes[:, values])


NVRTC_ARCH = "sm_90"
"""H100 and H200. A real architecture, so NVRTC's code generator runs as well."""
REGISTERS_PER_BLOCK = 65536
"""What the threads of one block may use together on every GPU CUDA 12 supports."""


def _written_by_the_kernel(warning: NvrtcWarning) -> bool:
    """Whether ``warning`` is about what the kernel's Python says, not about code the
    emitter adds: a kernel variable (``v_`` names) that is written and never read, such
    as the ``_`` of ``for _ in range(n)``, or a division by a literal zero."""
    if warning.number == 550:  # variable "..." was set but never used
        return warning.text.startswith('variable "v_')
    return warning.number == 39  # division by zero


@needs_nvrtc
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_nvrtc_builds_the_cuda_source_with_no_warning_about_its_own_code(built, case):
    c_executable, _ = built[case.name]
    for checks in {case.checks, KernelChecks.OFF}:
        source = CudaEmitter(c_executable.kernel, checks).emit()
        build = compile_cuda(source, case.name, NVRTC_ARCH)
        assert build.binary.startswith(b"\x7fELF"), "NVRTC gave no cubin"
        threads = math.prod(c_executable.kernel.block_size)
        (registers,) = build.registers.values()
        assert registers * threads <= REGISTERS_PER_BLOCK, (
            f"{case.name}: a block of {threads} threads using {registers} registers each "
            "would not launch"
        )
        lines = source.splitlines()
        for warning in build.warnings:
            assert _written_by_the_kernel(warning), (
                f"{case.name} (checks={checks!r}): NVRTC warns {warning.text!r} about line "
                f"{warning.line}: {lines[warning.line - 1].strip()}"
            )


def test_vecadd_values_are_the_sums(built):
    _, cuda = built["vecadd_unchecked"]
    case = next(c for c in CASES if c.name == "vecadd_unchecked")
    out, a, b = _launch(cuda, case)
    np.testing.assert_array_equal(out, a + b)
    assert out.any()


def test_a_failed_check_names_the_same_thread_and_index_as_c(built):
    trap = conformance_kernels.trap.__wrapped__
    values = FakeBuffer(np.zeros(8, F32))
    c_executable = KernelDefinition(trap).executable((argument_type(values),), KernelChecks.BOUNDS)
    [cuda] = emulate([(c_executable.kernel, c_executable.kernel_source, KernelChecks.BOUNDS)])
    messages = []
    for executable in (c_executable, cuda):
        with pytest.raises(KernelIndexError) as caught:
            executable.launch((8, 1, 1), [values.array.ctypes.data], [8])
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "thread (0, 0, 0)" in messages[1] and str(1 << 30) in messages[1]


def test_threads_at_different_barriers_stop_the_launch_as_in_c():
    out = FakeBuffer(np.zeros(8, F32))
    definition = KernelDefinition(block_kernels.diverging_barriers)
    c_executable = definition.executable((argument_type(out),), KernelChecks.BOUNDS)
    [cuda] = emulate([(c_executable.kernel, c_executable.kernel_source, KernelChecks.BOUNDS)])
    errors = []
    for executable in (c_executable, cuda):
        with pytest.raises(KernelBarrierError) as caught:
            executable.launch((8, 1, 1), [out.array.ctypes.data], [8])
        errors.append(caught.value)
    assert errors[0].lines == errors[1].lines and errors[0].block == errors[1].block == (0, 0, 0)
    assert not out.array.any()


def test_the_source_is_cuda(built):
    _, cuda = built["histogram"]
    source = cuda.cuda_source
    entry = 'extern "C" __global__ __launch_bounds__(256) void lnb_histogram('
    assert entry + "const lnb_histogram_arguments a," in source
    assert "(int64_t)blockIdx.x * blockDim.x + threadIdx.x" in source
    assert "if (x >= a.size[0]" in source
    assert "atomicAdd((uint32_t *)address" in source
    assert "#include" not in source and "_Bool" not in source and "__atomic" not in source
    _, matrices = built["matrix_arguments"]
    assert "alignas(16)" in matrices.cuda_source and "_Alignas" not in matrices.cuda_source
    assert "({" not in matrices.cuda_source  # no GNU statement expressions
    _, floats = built["float_reductions"]
    assert "atomicCAS(bits, assumed, __float_as_uint(next))" in floats.cuda_source
    assert "atomicAdd(address, value)" in floats.cuda_source


def test_the_grid_covers_every_axis_within_cuda_limits():
    assert grid_of((1000, 1, 1)) == ((4, 1, 1), (256, 1, 1))
    assert grid_of((0, 0, 0)) == ((1, 1, 1), (256, 1, 1))
    assert grid_of((1, 70000, 3)) == ((1, 65535, 3), (256, 1, 1))
    assert grid_of((9, 5, 3), (4, 2, 2)) == ((3, 3, 2), (4, 2, 2))
    assert grid_of((8, 300000, 1), (8, 4, 1)) == ((1, 65535, 1), (8, 4, 1))


def test_block_kernels_are_cuda_blocks_with_shared_memory_and_barriers(built):
    _, cuda = built["block_sums_2d"]
    source = cuda.cuda_source
    assert "__shared__ lnb_block_sums_2d_shared lnb_shared;" in source
    # after zeroing; twice a round (to agree on the barrier, then on going on); after a block
    assert source.count("__syncthreads();") == 4
    assert "for (uint32_t round = 0;; ++round)" in source
    assert "case 2: goto lnb_resume_2;" in source  # the kernel's two barriers
    assert "const uint32_t t = threadIdx.x + 8u * (threadIdx.y + 4u * threadIdx.z);" in source
    assert "calloc" not in source and "omp" not in source and "({" not in source
    _, ids = built["block_ids"]  # a block size without shared memory: a plain entry
    assert "__syncthreads" not in ids.cuda_source and "__shared__" not in ids.cuda_source


def test_bindless_calls_are_lambdas_over_the_slots(built):
    _, cuda = built["bindless_mix"]
    source = cuda.cuda_source
    assert "({" not in source and "_Bool" not in source
    assert "[&]() {" in source and "switch (lnb_slot" in source
    assert "(lnb_float4){" not in source and "lnb_float4{" in source
    c_executable, _ = built["bindless_mix"]
    assert "({" in c_executable.source  # the C twin keeps GNU statement expressions


def _reduction_emulation(source_edit: Callable[[str], str]) -> np.ndarray:
    """The block reduction's CUDA source, edited, run by the emulation; the sums."""
    values = FakeBuffer(np.arange(128, dtype=F32))
    sums = FakeBuffer(np.zeros(2, F32))
    types = (argument_type(values), argument_type(sums))
    c_executable = KernelDefinition(block_kernels.block_reduction).executable(
        types, KernelChecks.OFF
    )
    [cuda] = emulate([(c_executable.kernel, c_executable.kernel_source, KernelChecks.OFF)])
    library = build_unit(emulation_unit([(
        source_edit(cuda.cuda_source), "lnb_block_reduction", (64, 1, 1)
    )]))  # fmt: skip
    packed = c_executable.pack((128, 1, 1), [values.array.ctypes.data, sums.array.ctypes.data], [])
    assert run_launch(load_launch_function(library, "lnb_emulate0"), packed, None) is None
    failure = emulation_failure_function(library)()
    if failure:
        raise EmulationError(failure.decode())
    return sums.array


def test_the_emulation_needs_the_barriers():
    """The emulation runs threads in turn up to each barrier: the reduction as emitted
    sums each block, and when threads do not pause at its barriers each thread reads
    cells the others have not written yet."""
    halves = np.arange(128, dtype=F32).reshape(2, 64).sum(axis=1)
    np.testing.assert_array_equal(_reduction_emulation(lambda source: source), halves)
    pauses = re.compile(r"return;\n(\s*lnb_resume_\d+:;)")
    without = _reduction_emulation(lambda source: pauses.sub(r"\1", source))
    assert not np.array_equal(without, halves)


def test_the_emulation_stops_at_a_barrier_that_returned_threads_skip():
    """A thread that leaves the kernel while the others wait at __syncthreads() is a bug
    of the generated source: the emulation says so instead of running on."""
    early_return = "            __syncthreads();\n"
    skipping = "            if (t == 5) return;\n" + early_return
    with pytest.raises(EmulationError, match="ended while others waited at __syncthreads"):
        _reduction_emulation(lambda source: source.replace(early_return, skipping, 1))


def test_cuda_limits_are_errors_that_say_what_to_change(tmp_path):
    tall = load_function(tmp_path, TALL_BLOCKS, stem="tall_blocks")
    executable = KernelDefinition(tall).executable((argument_type(FakeBuffer(np.zeros(1))),))
    with pytest.raises(UnsupportedFeatureError, match="at most 64 along z; put the threads"):
        CudaEmitter(executable.kernel, KernelChecks.BOUNDS).emit()


TALL_BLOCKS = """
from luisa_nb.kernels import dispatch_id, set_block_size


def kernel_under_test(out):
    set_block_size(1, 1, 128)
    out.write(dispatch_id().z, 1.0)
"""


def test_tall_dispatches_step_over_the_grid_along_y():
    """Rows past CUDA's 65535-block limit along y are run by the same blocks, in turn."""
    definition = KernelDefinition(sample_kernels.grid)
    out = FakeBuffer(np.zeros(2 * 65537, np.int32))
    c_executable = definition.executable((argument_type(out),), KernelChecks.OFF)
    [cuda] = emulate([(c_executable.kernel, c_executable.kernel_source, KernelChecks.OFF)])
    cuda.launch((2, 65537, 1), [out.array.ctypes.data], [])
    ids = np.arange(out.array.size)
    np.testing.assert_array_equal(out.array, ids % 2 + 10 * (ids // 2))


def test_cuda_emitter_keeps_the_c_emitter_output(built):
    """The dialect hooks leave C unchanged: no CUDA construct reaches the C source."""
    c_executable, _ = built["matrix_arguments"]
    assert "_Alignas(16)" in c_executable.source and "alignas(16)" not in c_executable.source
    assert "__global__" not in c_executable.source
    assert isinstance(CudaEmitter(c_executable.kernel, KernelChecks.BOUNDS).emit(), str)
