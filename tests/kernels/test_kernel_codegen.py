"""Generated C (golden files), parameters and access analysis."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.kernels import BufferType, KernelDefinition, Parameter, ScalarType
from luisa_nb.kernels.c_emitter import CEmitter
from luisa_nb.kernels.captures import CaptureResolver
from luisa_nb.kernels.typer import KernelTyper

from . import sample_kernels

F32 = BufferType(ScalarType.FLOAT32)
I32 = BufferType(ScalarType.INT32)
GOLDEN_KERNELS = {
    "vecadd": (F32,),
    "mandelbrot": (I32, ScalarType.INT32, ScalarType.INT32, ScalarType.INT32),
    "division": (I32, I32, I32, I32, F32, F32),
    "control_flow": (I32, ScalarType.INT32),
}


def emitted_c(name: str, argument_types: tuple) -> str:
    """C source from the typer and emitter alone (no compiler needed)."""
    function = getattr(sample_kernels, name)
    definition = KernelDefinition(function, mode="c")
    kernel = KernelTyper(
        definition.kernel_source, argument_types, CaptureResolver(function), "c"
    ).run()
    return CEmitter(kernel).emit()


@pytest.mark.parametrize("name", sorted(GOLDEN_KERNELS))
def test_generated_c_golden(name: str) -> None:
    from .helpers import check_golden

    check_golden(f"{name}.c", emitted_c(name, GOLDEN_KERNELS[name]))


def test_simd_only_without_loops_or_returns() -> None:
    assert "#pragma omp simd" in emitted_c("vecadd", GOLDEN_KERNELS["vecadd"])
    looping = emitted_c("mandelbrot", GOLDEN_KERNELS["mandelbrot"])
    assert "#pragma omp simd" not in looping
    assert "schedule(dynamic)" in looping


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
    assert "lnb_float s_a;" in source and "LNB_EXPORT void lnb_saxpy(" in source
