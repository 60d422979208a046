"""Kernels computing known results, in C and in Python mode."""

from __future__ import annotations

import math

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.errors import KernelCompileError
from luisa_nb.kernels import KernelDefinition, argument_type, compiler_available

from . import sample_kernels
from .helpers import FakeBuffer, numpy_mandelbrot, run

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
MODES = [pytest.param("c", marks=needs_compiler), "python"]


@pytest.mark.parametrize("mode", MODES)
def test_vecadd_with_captured_buffers(mode: str) -> None:
    sample_kernels.x.array[:] = np.arange(64, dtype=np.float32)
    sample_kernels.y.array[:] = np.linspace(0, 1, 64, dtype=np.float32)
    z = FakeBuffer(np.zeros(64, np.float32))
    executable = run(KernelDefinition(sample_kernels.vecadd, mode=mode), 64, z)
    np.testing.assert_array_equal(z.array, sample_kernels.x.array + sample_kernels.y.array)
    assert executable.mode == mode


@pytest.mark.parametrize("mode", MODES)
def test_saxpy(mode: str) -> None:
    x = FakeBuffer(np.linspace(-3, 3, 1000, dtype=np.float32))
    y = FakeBuffer(np.linspace(1, 2, 1000, dtype=np.float32))
    out = FakeBuffer(np.zeros(1000, np.float32))
    run(KernelDefinition(sample_kernels.saxpy, mode=mode), 1000, 2.5, x, y, out)
    np.testing.assert_array_equal(out.array, np.float32(2.5) * x.array + y.array)


@needs_compiler
def test_mandelbrot_matches_numpy_exactly() -> None:
    image = FakeBuffer(np.zeros(256 * 256, np.int32))
    run(KernelDefinition(sample_kernels.mandelbrot, mode="c"), (256, 256), image, 256, 256, 100)
    expected = numpy_mandelbrot(256, 256, 100)
    np.testing.assert_array_equal(image.array, expected)
    assert image.array.max() == 100 and image.array.min() < 5


def test_mandelbrot_python_mode_matches_numpy() -> None:
    image = FakeBuffer(np.zeros(24 * 16, np.int32))
    run(KernelDefinition(sample_kernels.mandelbrot, mode="python"), (24, 16), image, 24, 16, 30)
    np.testing.assert_array_equal(image.array, numpy_mandelbrot(24, 16, 30))


def control_flow_reference(i: int, n: int) -> int:
    total = 0
    for j in range(n):
        if j % 3 == 0:
            continue
        if j > 2 * i + 5:
            break
        total += sum(range(j, 0, -2))
    count = max(i, 1)
    if i == 7:
        return -1
    return (total + (i != 8)) * 100 + count


@pytest.mark.parametrize("mode", MODES)
def test_loops_break_continue_while_return(mode: str) -> None:
    out = FakeBuffer(np.zeros(20, np.int32))
    run(KernelDefinition(sample_kernels.control_flow, mode=mode), 20, out, 17)
    assert out.array.tolist() == [control_flow_reference(i, 17) for i in range(20)]


@pytest.mark.parametrize("mode", MODES)
def test_nested_ranges(mode: str) -> None:
    out = FakeBuffer(np.zeros(12, np.int32))
    run(KernelDefinition(sample_kernels.nested_ranges, mode=mode), 12, out)
    expected = [
        sum(a * b + c for a in range(i) for b in range(1, a, 2) for c in range(3))
        for i in range(12)
    ]
    assert out.array.tolist() == expected


@pytest.mark.parametrize("mode", MODES)
def test_floor_division_and_modulo_follow_python(mode: str) -> None:
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (-1, 5), (6, -3), (-9, 4), (5, 7)]
    a = FakeBuffer([p[0] for p in pairs], np.int32)
    b = FakeBuffer([p[1] for p in pairs], np.int32)
    outputs = [FakeBuffer(np.zeros(len(pairs), dtype)) for dtype in ("i4", "i4", "f4", "f4")]
    run(KernelDefinition(sample_kernels.division, mode=mode), len(pairs), a, b, *outputs)
    assert outputs[0].array.tolist() == [p // q for p, q in pairs]
    assert outputs[1].array.tolist() == [p % q for p, q in pairs]
    assert outputs[2].array.tolist() == [(p * 0.5) // q for p, q in pairs]
    assert outputs[3].array.tolist() == [(p * 0.5) % q for p, q in pairs]


@needs_compiler
def test_integer_division_by_zero_gives_zero_like_numpy() -> None:
    a = FakeBuffer([5, -5, -(2**31)], np.int32)
    b = FakeBuffer([0, 0, -1], np.int32)
    outputs = [FakeBuffer(np.zeros(3, dtype)) for dtype in ("i4", "i4", "f4", "f4")]
    run(KernelDefinition(sample_kernels.division, mode="c"), 3, a, b, *outputs)
    assert outputs[0].array.tolist() == [0, 0, -(2**31)]
    assert outputs[1].array.tolist() == [0, 0, 0]


@pytest.mark.parametrize("mode", MODES)
def test_casts(mode: str) -> None:
    source = FakeBuffer([2.7, -2.7, 0.0, 3.5], np.float32)
    as_int = FakeBuffer(np.zeros(4, np.int32))
    as_float = FakeBuffer(np.zeros(4, np.float32))
    as_bool = FakeBuffer(np.zeros(4, np.bool_))
    definition = KernelDefinition(sample_kernels.casts, mode=mode)
    run(definition, 4, source, as_int, as_float, as_bool)
    assert as_int.array.tolist() == [2, -2, 0, 3]
    assert as_float.array.tolist() == [1.0, -1.0, 0.0, 1.5]
    assert as_bool.array.tolist() == [False, True, False, False]


@pytest.mark.parametrize("mode", MODES)
def test_captured_constants(mode: str) -> None:
    out = FakeBuffer(np.zeros(8, np.float32))
    run(KernelDefinition(sample_kernels.constants, mode=mode), 8, out)
    expected = np.arange(8, dtype=np.float32) * 3 + np.float32(0.25 + 3.14159265 + 1.0)
    np.testing.assert_allclose(out.array, expected, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_three_dimensional_dispatch(mode: str) -> None:
    out = FakeBuffer(np.zeros(4 * 3 * 2, np.int32))
    run(KernelDefinition(sample_kernels.grid, mode=mode), (4, 3, 2), out)
    expected = [x + 10 * y + 100 * z for z in range(2) for y in range(3) for x in range(4)]
    assert out.array.tolist() == expected


@pytest.mark.parametrize("mode", MODES)
def test_64_bit_types(mode: str) -> None:
    out = FakeBuffer(np.zeros(5, np.int64))
    run(KernelDefinition(sample_kernels.wide_types, mode=mode), 5, out, np.int64(2**40), 3)
    assert out.array.tolist() == [2**40 + 3 * i + 3_000_000_000 for i in range(5)]


@needs_compiler
@pytest.mark.parametrize(
    ("kernel", "size", "make_arguments"),
    [
        ("math_functions", 40, lambda: [np.zeros(40, "f4"), np.zeros(40, "i4"), 0.17]),
        ("control_flow", 30, lambda: [np.zeros(30, "i4"), 23]),
        ("mandelbrot", (20, 12), lambda: [np.zeros(240, "i4"), 20, 12, 50]),
        ("casts", 6, lambda: [np.linspace(-3, 3, 6, dtype="f4"), *_zeros(6, "i4 f4 ?")]),
        ("grid", (3, 2, 2), lambda: [np.zeros(12, "i4")]),
    ],
)
def test_c_and_python_modes_agree(kernel: str, size, make_arguments) -> None:
    function = getattr(sample_kernels, kernel)
    results = {}
    for mode in ("c", "python"):
        arguments = [FakeBuffer(a) if isinstance(a, np.ndarray) else a for a in make_arguments()]
        run(KernelDefinition(function, mode=mode), size, *arguments)
        results[mode] = [a.array for a in arguments if isinstance(a, FakeBuffer)]
    for c_result, python_result in zip(results["c"], results["python"], strict=True):
        if c_result.dtype.kind == "f":
            np.testing.assert_allclose(c_result, python_result, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(c_result, python_result)


def _zeros(size: int, dtypes: str) -> list[np.ndarray]:
    return [np.zeros(size, dtype) for dtype in dtypes.split()]


def test_python_mode_print(capsys: pytest.CaptureFixture[str]) -> None:
    out = FakeBuffer(np.full(3, 9, np.int32))
    run(KernelDefinition(sample_kernels.debug_print, mode="python"), 3, out)
    assert capsys.readouterr().out == "thread 1 sees 9 end\n"
    assert out.array.tolist() == [0, 1, 2]


@pytest.mark.parametrize("mode", MODES)
def test_closure_captures_and_unicode_names(mode: str) -> None:
    data = FakeBuffer(np.arange(10, dtype=np.uint32))
    factor = 3

    def größe(out, flag, offset):
        i = lnb.dispatch_id().x
        wert = data.read(i) * factor + offset + 1
        if flag:
            wert += math.floor(2.7) * 0 + 2 if i > 4 else 0
        out.write(i, wert)

    out = FakeBuffer(np.zeros(10, np.uint32))
    definition = KernelDefinition(größe, mode=mode)
    with pytest.raises(KernelCompileError, match="mixing signed int32 and unsigned uint32"):
        run(definition, 10, out, True, np.uint32(5))


@pytest.mark.parametrize("mode", MODES)
def test_closure_kernel_with_uint_and_bool_parameters(mode: str) -> None:
    data = FakeBuffer(np.arange(10, dtype=np.uint32))

    def größe(out, flag, offset):
        i = lnb.dispatch_id().x
        wert = data.read(i) * 3 + offset + 1
        if flag and i > 4:
            wert += 2
        out.write(i, wert)

    out = FakeBuffer(np.zeros(10, np.uint32))
    run(KernelDefinition(größe, mode=mode), 10, out, True, np.uint32(5))
    assert out.array.tolist() == [3 * i + 6 + 2 * (i > 4) for i in range(10)]
    run(KernelDefinition(größe, mode=mode), 0, out, False, np.uint32(5))
    assert out.array.tolist() == [3 * i + 6 + 2 * (i > 4) for i in range(10)]


@pytest.mark.parametrize("mode", MODES)
def test_captures_are_resolved_once(mode: str) -> None:
    scale = 2

    def scaled(out):
        i = lnb.dispatch_id().x
        out.write(i, i * scale + math.floor(float(i) / 2.0))

    out = FakeBuffer(np.zeros(6, np.int32))
    definition = KernelDefinition(scaled, mode=mode)
    run(definition, 6, out)
    scale = 100  # rebinding after the first specialisation has no effect
    run(definition, 6, out)
    assert out.array.tolist() == [2 * i + i // 2 for i in range(6)]
    if mode == "c":
        assert "v_i * 2" in definition.executable((argument_type(out),)).source
