"""Generated C (golden files), parameters and access analysis."""

from __future__ import annotations

import platform
import re
import subprocess

import numpy as np
import pytest

from luisa_nb.kernels import (
    BufferType,
    KernelDefinition,
    Parameter,
    ScalarType,
    compiler_available,
)
from luisa_nb.kernels.c.emitter import CEmitter
from luisa_nb.kernels.c.toolchain import compiler_flags, find_compiler
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.frontend.captures import CaptureResolver
from luisa_nb.kernels.type_system import BindlessType, ImageType
from luisa_nb.kernels.typing.typer import KernelTyper

from . import sample_kernels

F32 = BufferType(ScalarType.FLOAT32)
I32 = BufferType(ScalarType.INT32)
VECADD = (F32,)
HEAP = BindlessType(
    (
        (0, F32, 16),
        (1, BufferType(ImageType(ScalarType.FLOAT32, 4, "uint8", 4, 2)), 32),
    )
)
MANDELBROT = (I32, ScalarType.INT32, ScalarType.INT32, ScalarType.INT32)
GOLDEN_KERNELS = {  # golden file name: (kernel, argument types, checks)
    "vecadd": ("vecadd", VECADD, False),
    "vecadd_checked": ("vecadd", VECADD, True),
    "mandelbrot": ("mandelbrot", MANDELBROT, False),
    "mandelbrot_checked": ("mandelbrot", MANDELBROT, True),
    "division_nan_checked": ("division", (I32, I32, I32, I32, F32, F32), "nan"),
    "control_flow_checked": ("control_flow", (I32, ScalarType.INT32), True),
    "bindless_checked": ("bindless_gather", (HEAP, F32), True),
    "shared_blocks_checked": ("shared_shift", (F32, F32), True),
}


def emitter_of(name: str, argument_types: tuple, checks: bool | str = True) -> CEmitter:
    """The C emitter of sample kernel ``name`` (no compiler needed)."""
    function = getattr(sample_kernels, name)
    definition = KernelDefinition(function, mode="c")
    kernel = KernelTyper(
        definition.kernel_source, argument_types, CaptureResolver(function), "c"
    ).run()
    return CEmitter(kernel, KernelChecks.parse(checks))


def emitted_c(name: str, argument_types: tuple, checks: bool | str = True) -> str:
    """C source from the typer and emitter alone (no compiler needed)."""
    return emitter_of(name, argument_types, checks).emit()


def test_simd_loops_and_lanes_build_at_o3_and_thread_by_thread_loops_at_o2() -> None:
    assert emitter_of("vecadd", VECADD).optimization == ("-O3",)
    assert emitter_of("mandelbrot", MANDELBROT).optimization == ("-O3",)  # lanes
    assert emitter_of("shared_shift", (F32, F32)).optimization == (
        "-O2",
        "-fno-schedule-insns2",
        "-fno-expensive-optimizations",
    )


@pytest.mark.parametrize("golden", sorted(GOLDEN_KERNELS))
def test_generated_c_golden(golden: str) -> None:
    from .helpers import check_golden

    check_golden(f"{golden}.c", emitted_c(*GOLDEN_KERNELS[golden]))


def test_simd_thread_loops_only_without_loops_or_returns() -> None:
    simd_thread_loop = re.compile(r"#pragma omp simd[^\n]*\n\s*for \(int32_t x = ")
    assert simd_thread_loop.search(emitted_c("vecadd", VECADD))
    looping = emitted_c("mandelbrot", MANDELBROT)
    assert not simd_thread_loop.search(looping)
    assert "(lnb_int3){64, 1, 1}, 1);" in looping  # 64-thread blocks, claimed one at a time


@pytest.mark.parametrize("checks", [True, False])
def test_thread_loop_counts_in_int32(checks: bool) -> None:
    """An int64 loop variable cast to int32 made gcc emit gathers and scatters."""
    source = emitted_c("vecadd", VECADD, checks)
    assert re.search(r"for \(int32_t x = \w+; x < \w+; \+\+x\)", source)
    assert "(int32_t)x" not in source


def test_parameters_and_access() -> None:
    executable = KernelDefinition(sample_kernels.vecadd, mode="python").executable((F32,))
    assert executable.parameters == [
        Parameter("buf_z", "buffer", np.dtype(np.float32), "write", None),
        Parameter("x", "buffer", np.dtype(np.float32), "read", sample_kernels.x),
        Parameter("y", "buffer", np.dtype(np.float32), "read", sample_kernels.y),
    ]
    assert executable.buffer_parameters == executable.parameters
    assert executable.scalar_parameters == []


def test_read_write_none_and_scalar_parameters() -> None:
    definition = KernelDefinition(sample_kernels.unused_and_read_write, mode="python")
    executable = definition.executable((F32, I32, ScalarType.FLOAT32))
    assert [(p.name, p.kind, p.access) for p in executable.parameters] == [
        ("accumulator", "buffer", "read_write"),
        ("unused", "buffer", "none"),
        ("scale", "scalar", "read"),
    ]
    assert [p.name for p in executable.scalar_parameters] == ["scale"]
    assert executable.scalar_parameters[0].dtype == np.dtype(np.float32)


def test_reads_inside_print_count_as_reads() -> None:
    executable = KernelDefinition(sample_kernels.debug_print, mode="python").executable((I32,))
    assert executable.parameters[0].access == "read_write"


def test_python_mode_source_is_the_function() -> None:
    executable = KernelDefinition(sample_kernels.saxpy, mode="python").executable(
        (ScalarType.FLOAT32, F32, F32, F32)
    )
    assert executable.source.startswith("def saxpy(a, x, y, out):")
    assert executable.mode == "python"


def test_executables_are_cached_per_argument_types() -> None:
    definition = KernelDefinition(sample_kernels.saxpy, mode="python")
    first = definition.executable((ScalarType.FLOAT32, F32, F32, F32))
    assert definition.executable((ScalarType.FLOAT32, F32, F32, F32)) is first
    f64 = BufferType(ScalarType.FLOAT64)
    other = definition.executable((ScalarType.FLOAT64, f64, f64, f64))
    assert other is not first
    assert other.scalar_parameters[0].dtype == np.dtype(np.float64)
    assert definition.name == "saxpy"


def test_emitter_dialect_is_overridable() -> None:
    class RenamedTypes(CEmitter):
        type_names = {**CEmitter.type_names, ScalarType.FLOAT32: "lnb_float"}
        kernel_prefix = "LNB_EXPORT "

    definition = KernelDefinition(sample_kernels.saxpy, mode="c")
    types = (ScalarType.FLOAT32, F32, F32, F32)
    kernel = KernelTyper(
        definition.kernel_source, types, CaptureResolver(sample_kernels.saxpy), "c"
    ).run()
    source = RenamedTypes(kernel).emit()
    assert "lnb_float s_a;" in source and "LNB_EXPORT void lnb_saxpy_launch(" in source
    assert "LNB_EXPORT void lnb_saxpy_launch(" in source


@pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not compiler_available(),
    reason="checks x86-64 assembly from the system C compiler",
)
@pytest.mark.parametrize("checks", [True, False, "nan"])
def test_vecadd_vectorizes_with_contiguous_accesses(tmp_path, checks: bool | str) -> None:
    source = tmp_path / "vecadd.c"
    source.write_text(emitted_c("vecadd", VECADD, checks))
    compiler = find_compiler()
    flags = [flag for flag in compiler_flags(compiler) if flag != "-shared"]
    command = [*compiler, *flags, "-S", str(source), "-o", "-"]
    assembly = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "addps" in assembly  # packed float adds: the thread loop is vectorized
    assert "gather" not in assembly and "scatter" not in assembly
