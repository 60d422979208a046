"""Vector types in kernels: constructors, swizzles, element access, operators, tuple
unpacking, buffers of vectors and vector arguments, in C and in Python mode."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from luisa_nb.errors import InvalidArgumentError, KernelCompileError, KernelError
from luisa_nb.kernels import (
    BufferType,
    KernelDefinition,
    ScalarType,
    VectorType,
    argument_type,
    compiler_available,
    dtype_of,
    float2,
    float3,
    int2,
    int3,
    uint3,
)

from . import vector_kernels
from .helpers import FakeBuffer, load_function, numpy_vector_mandelbrot, run

MODES = ["python", pytest.param("c", marks=pytest.mark.skipif(
    not compiler_available(), reason="no C compiler"))]  # fmt: skip
F32 = np.float32


def outputs(function, size, *arguments, dtype=np.float32, count=None):
    """The output buffer of ``function`` in each mode: {mode: array}."""
    results = {}
    for mode in ("c", "python") if compiler_available() else ("python",):
        total = count or int(np.prod(size))
        out = FakeBuffer(np.zeros(total, dtype))
        run(KernelDefinition(function, mode=mode), size, out, *arguments)
        results[mode] = out.array
    return results


def agreeing(function, size, *arguments, **options):
    """The output, checked to be identical in both modes."""
    results = outputs(function, size, *arguments, **options)
    first, *others = results.values()
    for other in others:
        np.testing.assert_array_equal(first, other)
    return first


def test_constructors() -> None:
    i = np.arange(6, dtype=F32)
    expected = i + i * 10 + 100 + i * 1000 + 2 * i * 10000 + 7 * 100000
    np.testing.assert_array_equal(agreeing(vector_kernels.constructors, 6), expected)


def test_host_swizzles_that_repeat_a_component_are_read_only_and_made_on_first_use() -> None:
    from luisa_nb.kernels.lang.vectors import uint4

    probe = "from luisa_nb.kernels.lang.vectors import uint4; print('wzzy' in vars(uint4))"
    fresh = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert fresh.stdout.split() == ["False"], fresh.stderr  # not made at import
    v = uint4(1, 2, 3, 4)
    assert repr(v.wzzy) == "uint4(4,3,3,2)" and repr(v.xx) == "uint2(1,1)"
    assert "wzzy" in vars(uint4)
    v.wzyx = (5, 6, 7, 8)  # a swizzle without repeats is writable
    assert repr(v) == "uint4(8,7,6,5)"
    with pytest.raises(AttributeError):
        v.xx = (1, 2)
    with pytest.raises(AttributeError):
        v.xyzwx  # noqa: B018 - five letters are no swizzle


def test_swizzle_reads_and_writes() -> None:
    i = np.arange(8, dtype=F32)
    v = np.stack([np.full(8, 10, F32), i + 1.5 + 1, np.full(8, 20, F32), (i + 3) * 2], 1)
    r = np.stack([(i + 3), i + 2, i + 1, i], 1)
    k = np.arange(8) % 4
    s = v[np.arange(8), k]
    expected = r[:, 0] + r[:, 3] * 10 + 100 * np.where(k == 0, -1, 10)
    expected += 1000 * np.where(k == 1, -1, v[:, 1]) + s * F32(0.25) - 1
    expected += 7 * np.where(k == 2, -1, F32(20))
    np.testing.assert_array_equal(agreeing(vector_kernels.swizzles, 8), expected.astype(F32))


def test_element_wise_arithmetic_with_broadcast() -> None:
    scale = F32(1.5)
    i = np.arange(8, dtype=F32)
    a = np.stack([i, 2 * i + 1, np.full(8, 3, F32)], 1)
    b = np.stack([np.arange(8), -np.arange(8), np.full(8, 7)], 1).astype(np.int32)
    c = a * scale + F32(1) - a / F32(2)
    d = b // 2 + b % 3 - ((b * 3) >> 1)
    e = -c + d.astype(F32) * F32(0.5)
    f = F32(2) * a - np.power(c, F32(2))
    lt = a < np.array([1, 3, 2], F32)
    picked = np.where(lt, np.array([1, 2, 4], F32), F32(0))
    total = e[:, 0] + e[:, 1] + e[:, 2] + f[:, 0] * F32(0.5) + f[:, 1]
    total = total + picked[:, 0] + picked[:, 1] + picked[:, 2]
    flags = lt.any(1) * 10 + (a >= 0).all(1) * 100
    expected = total + flags.astype(F32)
    np.testing.assert_allclose(agreeing(vector_kernels.arithmetic, 8, 1.5), expected, rtol=1e-6)


def test_assignment_copies_vectors_in_both_modes() -> None:
    i = np.arange(5, dtype=F32)
    # b = a copies; c = a or b copies; changing b or c leaves a alone
    expected = i + 10 + 100 + 50
    np.testing.assert_array_equal(agreeing(vector_kernels.aliasing, 5), expected)


def test_tuple_unpacking_computes_all_values_first() -> None:
    width, height = 4, 3
    px, py = np.meshgrid(np.arange(width), np.arange(height))
    cx = (2 * px).astype(F32) / F32(width) - F32(2)
    cy = (2 * py).astype(F32) / F32(height) - F32(1)
    expected = cx * 1000 + cy * 100 + (py * 10 + px).astype(F32)
    result = agreeing(vector_kernels.unpacking, (width, height))
    np.testing.assert_array_equal(result, expected.ravel())


def test_luisa_style_mandelbrot_matches_numpy() -> None:
    width, height = 48, 32
    result = agreeing(vector_kernels.mandelbrot, (width, height))
    np.testing.assert_array_equal(result, numpy_vector_mandelbrot(width, height, 64))


@pytest.mark.parametrize("mode", MODES)
def test_dispatch_id_is_an_int3(tmp_path, mode) -> None:
    source = """
from luisa_nb.kernels import dispatch_id, dispatch_size

def kernel_under_test(out):
    p = dispatch_id()
    n = dispatch_size()
    q = p * 2 + n
    out.write(p.x + p.y * n.x, q.x * 100 + q.y * 10 + q.z)
"""
    out = FakeBuffer(np.zeros(6, np.int32))
    run(KernelDefinition(load_function(tmp_path, source), mode=mode), (3, 2), out)
    px, py = np.meshgrid(np.arange(3), np.arange(2))
    np.testing.assert_array_equal(out.array, ((2 * px + 3) * 100 + (2 * py + 2) * 10 + 1).ravel())


@pytest.mark.parametrize("mode", MODES)
def test_buffers_of_vectors_round_trip(tmp_path, mode) -> None:
    source = """
from luisa_nb.kernels import dispatch_id, float3

def kernel_under_test(points, sums, offset):
    i = dispatch_id().x
    p = points.read(i)
    points.write(i, p.zyx + offset)
    sums.write(i, int3(p) + 1)
"""
    assert dtype_of(float3).itemsize == 16 and dtype_of(float2).itemsize == 8
    assert dtype_of(int3).names == ("x", "y", "z") and dtype_of(int3).itemsize == 16
    points = FakeBuffer(np.zeros(4, dtype_of(float3)))
    for axis, name in enumerate("xyz"):
        points.array[name] = np.arange(4) * 3 + axis
    sums = FakeBuffer(np.zeros(4, dtype_of(int3)))
    assert argument_type(points) == BufferType(VectorType(ScalarType.FLOAT32, 3))
    function = load_function(tmp_path, source.replace("float3", "float3, int3"))
    run(KernelDefinition(function, mode=mode), 4, points, sums, float3(0.5, 1, 2))
    base = np.arange(4) * 3
    np.testing.assert_array_equal(points.array["x"], base + 2 + 0.5)
    np.testing.assert_array_equal(points.array["y"], base + 1 + 1)
    np.testing.assert_array_equal(points.array["z"], base + 0 + 2)
    np.testing.assert_array_equal(sums.array["z"], base + 3)


def test_host_vectors() -> None:
    v = float3(1, 2, 3)
    assert argument_type(v) == VectorType(ScalarType.FLOAT32, 3)
    assert (v.zyx + 1).x == 4 and v.x.dtype == np.float32
    assert np.array_equal(np.asarray(int3(7, -8, 9) // 2), [3, -4, 4])
    assert (uint3(1, 2, 3) + 1).x.dtype == np.uint32
    assert repr(int2(1, 2)) == "int2(1,2)"
    with pytest.raises(KernelError, match="no single truth value"):
        bool(v == v)
    with pytest.raises(InvalidArgumentError, match="cannot add float3 and int2"):
        v + int2(1, 2)
    with pytest.raises(InvalidArgumentError, match="needs one scalar or 3 components"):
        float3(1, 2)


TYPE_ERRORS = [
    ("v = float3(1, 2, 3) + int2(1, 2)", "cannot add float3 and int2: the vectors have "),
    ("v = float3(1, 2)", "float3() needs one scalar or 3 components in all, got 2"),
    ("v = int3(1) + uint3(2)", "cannot add int3 and uint3: mixing signed int32 and unsigned"),
    ("v = float2(1).xyz", "float2 values have no attribute 'xyz'"),
    ("v = float3(1)\nv.xx = float2(1)", "cannot assign to swizzle 'xx': it repeats"),
    ("v = float3(1)\nif v > 0:\n    pass", "a bool3 value is not a single condition; use any"),
    ("v = float3(1)\nv = int3(1)", "cannot assign an int3 value to 'v', which is float3"),
    ("v = float3(1)[3]", "index 3 is outside float3 (0 <= i < 3)"),
    ("v = float3(1) < float3(2) < float3(3)", "chained comparisons need scalars"),
    ("v = length(int2(1))", "length() takes float vectors, got int2"),
    ("v = float2(1) ** 2.0\nw = int2(1) ** 2", "** on vectors needs float vectors"),
]


@pytest.mark.parametrize(("statements", "message"), TYPE_ERRORS)
def test_vector_type_errors(tmp_path, statements, message) -> None:
    body = "".join(f"    {line}\n" for line in statements.splitlines())
    source = (
        "from luisa_nb.kernels import *\n\ndef kernel_under_test(out):\n"
        "    i = dispatch_id().x\n" + body
    )
    function = load_function(tmp_path, source)
    with pytest.raises(KernelCompileError) as caught:
        run(KernelDefinition(function, mode="python"), 1, FakeBuffer(np.zeros(1, np.float32)))
    assert message in caught.value.reason
    assert caught.value.lineno >= 5


@pytest.mark.parametrize("mode", MODES)
def test_captured_buffers_of_vectors_and_structs(mode) -> None:
    """A kernel holds its captured buffers' shims, so each launch binds those same shims,
    whatever their elements are."""
    import luisa_nb as lnb
    from luisa_nb.kernels import StructType, dispatch_id

    pair = StructType(a=float, b=int)
    device = lnb.create_device("cpu")
    colours = device.create_buffer(4, dtype_of(float3))
    pairs = device.create_buffer(4, dtype_of(pair))

    def paint(scale):
        i = dispatch_id().x
        colours.write(i, float3(scale * i, 1.0, 2.0))
        p = pair()
        p.a = scale
        p.b = i
        pairs.write(i, p)

    kernel = lnb.kernel(paint, mode=mode)
    for scale in (0.5, 2.0):  # a second launch binds the same shims again
        kernel(scale, dispatch_size=4)
        device.synchronize()
        np.testing.assert_array_equal(colours.numpy()["x"], scale * np.arange(4))
        np.testing.assert_array_equal(pairs.numpy()["b"], np.arange(4))
        np.testing.assert_array_equal(pairs.numpy()["a"], np.full(4, scale, np.float32))
    device.close()
