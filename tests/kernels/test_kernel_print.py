"""Device ``print``: luisa-python's formatting in compiled C, in Python mode (kernels with
luisa-python's rules) and in the CUDA source; a bounded log per launch; the lines of a
dispatch in its trace."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from helpers.cuda import needs_nvrtc
from helpers.printing_kernels import bad_index, squares

import luisa_nb as lnb
from luisa_nb.errors import KernelIndexError
from luisa_nb.kernels import KernelDefinition, compiler_available, dispatch_id, float2, uint3
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.cuda.emitter import CudaEmitter
from luisa_nb.kernels.cuda.nvrtc import compile_cuda
from luisa_nb.kernels.lang.device_print import (
    PRINT_LIMIT_VARIABLE,
    collecting,
    format_python_value,
    format_scalar,
)
from luisa_nb.kernels.rules import LUISA_RULES
from luisa_nb.kernels.type_system import ScalarType
from luisa_nb.luisa.util import array, struct

from .helpers import FakeBuffer, run

needs_c = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
MODES = ["python", pytest.param("c", marks=needs_c)]


@pytest.mark.parametrize(
    ("value", "kind", "text"),
    [
        (1.0, ScalarType.FLOAT32, "1"),
        (1.0 / 3.0, ScalarType.FLOAT32, "0.333333"),
        (1e10, ScalarType.FLOAT32, "1e+10"),
        (1e-7, ScalarType.FLOAT64, "1e-07"),
        (-0.0, ScalarType.FLOAT32, "-0"),
        (True, ScalarType.BOOL, "true"),
        (4294967295, ScalarType.UINT32, "4294967295"),
        (-3, ScalarType.INT64, "-3"),
    ],
)
def test_scalars_format_as_c_printf(value, kind, text) -> None:
    assert format_scalar(value, kind) == text


def test_python_values_format_by_their_kernel_type() -> None:
    assert format_python_value(uint3(1, 2, 3)) == "(1, 2, 3)"
    assert format_python_value(np.float32(2.5)) == "2.5"
    assert format_python_value(np.bool_(False)) == "false"
    assert format_python_value("text") == "text"


@pytest.mark.parametrize("mode", MODES)
def test_lines_are_ordered_by_thread_with_luisa_formatting(mode) -> None:
    definition = KernelDefinition(squares, mode=mode, rules=LUISA_RULES)
    out = FakeBuffer(np.zeros(4, np.int32))
    with collecting() as collector:
        run(definition, 4, out)
    assert collector.lines == [
        ((0, 0, 0), "square of 0 is 0 0 (0, 0.5) false"),
        ((1, 0, 0), "square of 1 is 1 0.25 (1, 0.5) false"),
        ((2, 0, 0), "square of 2 is 4 0.5 (2, 0.5) true"),
        ((3, 0, 0), "square of 3 is 9 0.75 (3, 0.5) true"),
    ]
    assert out.array.tolist() == [0, 1, 4, 9]


@pytest.mark.parametrize("mode", MODES)
def test_a_launch_keeps_at_most_the_limit_and_counts_the_rest(mode, monkeypatch) -> None:
    monkeypatch.setenv(PRINT_LIMIT_VARIABLE, "5")
    definition = KernelDefinition(squares, mode=mode, rules=LUISA_RULES)
    with collecting() as collector:
        run(definition, 1000, FakeBuffer(np.zeros(1000, np.int32)))
    assert len(collector.lines) == 5
    assert collector.dropped == 995


@needs_c
def test_a_compiled_launch_of_many_threads_keeps_the_limit(monkeypatch) -> None:
    monkeypatch.setenv(PRINT_LIMIT_VARIABLE, "64")
    definition = KernelDefinition(squares, mode="c", rules=LUISA_RULES)
    with collecting() as collector:
        run(definition, 1 << 20, FakeBuffer(np.zeros(1 << 20, np.int32)))
    assert (len(collector.lines), collector.dropped) == (64, (1 << 20) - 64)


@pytest.mark.parametrize("mode", MODES)
def test_lines_printed_before_a_failure_are_kept(mode) -> None:
    definition = KernelDefinition(bad_index, mode=mode, rules=LUISA_RULES)
    with collecting() as collector, pytest.raises(KernelIndexError):
        run(definition, 4, FakeBuffer(np.zeros(4, np.int32)))
    assert ((0, 0, 0), "before 0") in collector.lines


def test_without_a_collector_lines_go_to_stdout(capsys) -> None:
    definition = KernelDefinition(squares, mode="python", rules=LUISA_RULES)
    run(definition, 2, FakeBuffer(np.zeros(2, np.int32)))
    assert capsys.readouterr().out.splitlines() == [
        "[DEVICE] square of 0 is 0 0 (0, 0.5) false",
        "[DEVICE] square of 1 is 1 0.25 (1, 0.5) false",
    ]


def test_luisa_nb_kernels_keep_pythons_print_in_python_mode(capsys) -> None:
    definition = KernelDefinition(squares, mode="python")
    run(definition, 1, FakeBuffer(np.zeros(1, np.int32)))
    assert capsys.readouterr().out == "square of 0 is 0 0.0 float2(0,0.5) False\n"


@needs_c
def test_the_runtime_records_each_dispatchs_lines(capsys) -> None:
    kernel = lnb.kernel(squares)
    device = lnb.create_device("cpu")
    out = device.create_buffer(3, np.int32)
    with lnb.trace() as trace:
        kernel(out, dispatch_size=3)
        kernel(out, dispatch_size=2)
        device.synchronize()
    first, second = (c for c in trace.commands if c.kind.name == "DISPATCH")
    assert [line.text for line in trace.printed(first).lines][2] == (
        "square of 2 is 4 0.5 (2, 0.5) true"
    )
    assert trace.printed(second).threads == [(0, 0, 0), (1, 0, 0)]
    assert len(capsys.readouterr().out.splitlines()) == 5


@needs_c
def test_saved_traces_keep_the_lines(tmp_path) -> None:
    kernel = lnb.kernel(squares)
    device = lnb.create_device("cpu")
    out = device.create_buffer(2, np.int32)
    with lnb.trace() as trace:
        kernel(out, dispatch_size=2)
        device.synchronize()
    loaded = lnb.load_trace(trace.save(tmp_path / "printed.lnbtrace"))
    [dispatch] = [c for c in loaded.commands if c.kind.name == "DISPATCH"]
    assert loaded.printed(dispatch).of_thread(1) == ["square of 1 is 1 0.25 (1, 0.5) false"]


def test_the_cuda_source_prints_with_printf() -> None:
    definition = KernelDefinition(squares, mode="c", rules=LUISA_RULES)
    kernel = definition._typed((lnb.kernels.BufferType(ScalarType.INT32),))[1]
    source = CudaEmitter(kernel, KernelChecks.BOUNDS).emit()
    assert 'printf("[DEVICE] square of %u is %u %g (%g, %g) %s\\n"' in source
    assert "lnb_print_target" not in source


def test_the_cuda_source_prints_luisa_lines_in_the_emulation(capfd) -> None:
    emulation = pytest.importorskip("helpers.cuda_emulation")
    if emulation.find_cxx_compiler() is None:
        pytest.skip("the CUDA emulation needs a C++ compiler")
    definition = KernelDefinition(squares, mode="c", rules=LUISA_RULES)
    c_executable = run(definition, 1, FakeBuffer(np.zeros(1, np.int32)))
    built = c_executable
    [cuda] = emulation.emulate([(built.kernel, built.kernel_source, built.checks)])
    out = FakeBuffer(np.zeros(2, np.int32))
    capfd.readouterr()
    cuda.launch((2, 1, 1), [out.array.ctypes.data], [2])
    ctypes.CDLL(None).fflush(None)  # the C library's stdout buffer
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == [
        "[DEVICE] square of 0 is 0 0 (0, 0.5) false",
        "[DEVICE] square of 1 is 1 0.25 (1, 0.5) false",
    ]


POINT = struct(a=float2(1.0, 2.0), b=3)
PAIR = array([5, -2])


def composite_print(out):
    i = dispatch_id().x
    print(f"<{float2(i, 0.5)}>", "100%", POINT, PAIR)
    out.write(i, i)


@pytest.mark.parametrize("mode", MODES)
def test_f_strings_structs_and_arrays_print_as_luisa_python(mode) -> None:
    definition = KernelDefinition(composite_print, mode=mode, rules=LUISA_RULES)
    with collecting() as collector:
        run(definition, 2, FakeBuffer(np.zeros(2, np.int32)))
    assert [text for _, text in collector.lines] == [
        "<(0, 0.5)> 100% {(1, 2), 3} [5, -2]",
        "<(1, 0.5)> 100% {(1, 2), 3} [5, -2]",
    ]


@needs_nvrtc
def test_nvrtc_compiles_the_printf_of_every_kind_of_value() -> None:
    definition = KernelDefinition(composite_print, mode="c", rules=LUISA_RULES)
    kernel = definition._typed((lnb.kernels.BufferType(ScalarType.INT32),))[1]
    emitter = CudaEmitter(kernel, KernelChecks.BOUNDS)
    source = emitter.emit()
    assert '"[DEVICE] <(%g, %g)> 100%% {(%g, %g), %d} [%d, %d]\\n"' in source
    compile_cuda(source, emitter.entry_name, "compute_90")
