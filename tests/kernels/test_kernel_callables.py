"""Callables: kernels called inside kernels, in C and in Python mode."""

from __future__ import annotations

import re

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.errors import KernelCompileError
from luisa_nb.kernels import (
    KernelDefinition,
    compiler_available,
    dispatch_id,
    float2,
    float3,
    length,
)

from .helpers import FakeBuffer, run

MODES = ["python", pytest.param("c", marks=pytest.mark.skipif(
    not compiler_available(), reason="no C compiler"))]  # fmt: skip
F32 = np.float32


@lnb.kernel
def complex_sqr(z):
    return float2(z[0] ** 2 - z[1] ** 2, z[1] * z[0] * 2)


@lnb.kernel
def clamp_or_zero(x, low):
    if x < low:
        return low
    if x > 10:
        return 10
    return x


def fractal(out, n):
    """luisa-python's fractal example: a callable returning a vector."""
    p = dispatch_id().xy
    c = float2(p.x, p.y) / float(n) * 2.0 - 1.0
    z = float2(0.0)
    count = 0
    for _ in range(16):
        if length(z) <= 2.0:
            z = complex_sqr(z) + c
            count += 1
    out.write(p.y * n + p.x, count)


def numpy_fractal(n):
    ys, xs = np.meshgrid(np.arange(n, dtype=F32), np.arange(n, dtype=F32), indexing="ij")
    cx, cy = xs / F32(n) * F32(2) - F32(1), ys / F32(n) * F32(2) - F32(1)
    zx, zy = np.zeros_like(cx), np.zeros_like(cy)
    count = np.zeros(cx.shape, np.int32)
    for _ in range(16):
        active = np.sqrt(zx * zx + zy * zy) <= F32(2)
        new_x = zx**2 - zy**2 + cx
        new_y = zy * zx * F32(2) + cy
        zx, zy = np.where(active, new_x, zx), np.where(active, new_y, zy)
        count += active
    return count.ravel()


@pytest.mark.parametrize("mode", MODES)
def test_fractal_with_a_vector_callable(mode):
    n = 24
    out = FakeBuffer(np.zeros(n * n, np.int32))
    run(KernelDefinition(fractal, mode=mode), (n, n), out, n)
    np.testing.assert_array_equal(out.array, numpy_fractal(n))


def several_returns(out):
    i = dispatch_id().x
    out.write(i, clamp_or_zero(i - 4, 0) + clamp_or_zero(float(i) * 1.5, 2.0))


@pytest.mark.parametrize("mode", MODES)
def test_several_returns_and_one_callable_per_argument_types(mode):
    out = FakeBuffer(np.zeros(12, np.float32))
    executable = run(KernelDefinition(several_returns, mode=mode), 12, out)
    i = np.arange(12)
    expected = np.clip(i - 4, 0, 10) + np.where(i * 1.5 < 2, 2, np.minimum(i * 1.5, 10))
    np.testing.assert_array_equal(out.array, expected.astype(F32))
    if mode == "c":  # int32 and float32 specialisations
        assert executable.source.count("static inline int32_t lnb_f") == 1
        assert executable.source.count("static inline float lnb_f") == 1


TABLE = FakeBuffer(np.arange(10, dtype=np.float32) * 10)


@lnb.kernel
def lookup(i):
    return TABLE.read(i)


@lnb.kernel
def accumulate(target, i, value):
    target.write(i, target.read(i) + value)


@lnb.kernel
def bump(v):
    v.x += 100.0
    return v


def buffers_in_callables(out):
    i = dispatch_id().x
    v = float3(1.0, 2.0, 3.0)
    w = bump(v)
    accumulate(out, i, lookup(i) + v.x + w.x)


@pytest.mark.parametrize("mode", MODES)
def test_callables_take_and_capture_buffers_and_copy_vectors(mode):
    out = FakeBuffer(np.ones(10, np.float32))
    run(KernelDefinition(buffers_in_callables, mode=mode), 10, out)
    expected = 1 + np.arange(10, dtype=F32) * 10 + 1 + 101
    np.testing.assert_array_equal(out.array, expected)


@lnb.kernel
def first(x):
    return second(x)


@lnb.kernel
def second(x):
    return first(x - 1)


def recursive(out):
    out.write(0, first(3))


def test_recursion_is_a_compile_error():
    with pytest.raises(KernelCompileError, match=r"callable 'first' calls itself \(first -> "
                       r"second -> first\); callables cannot recurse"):  # fmt: skip
        KernelDefinition(recursive, mode="python").executable(
            (lnb.kernels.argument_type(FakeBuffer(np.zeros(1, np.int32))),)
        )


@lnb.kernel
def mixed_returns(x):
    if x > 0:
        return x
    return float3(0.0)


@lnb.kernel
def no_value():
    pass


def uses_mixed(out):
    out.write(0, mixed_returns(1))


def uses_no_value(out):
    out.write(0, no_value())


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (uses_mixed, "this callable returns int32 at an earlier return, here float3"),
        (uses_no_value, "no_value() returns nothing; call it as a statement"),
    ],
)
def test_callable_type_errors(function, message):
    definition = KernelDefinition(function, mode="python")
    with pytest.raises(KernelCompileError, match=re.escape(message)):
        definition.executable((lnb.kernels.argument_type(FakeBuffer(np.zeros(1, np.int32))),))


def test_kernels_dispatched_through_the_runtime_call_callables():
    device = lnb.create_device("cpu")
    n = 8
    out = device.create_buffer(n * n, np.int32)

    @lnb.kernel(mode="c" if compiler_available() else "python")
    def fractal_kernel(target):
        p = dispatch_id().xy
        c = float2(p.x, p.y) / float(n) * 2.0 - 1.0
        z = float2(0.0)
        count = 0
        for _ in range(16):
            if length(z) <= 2.0:
                z = complex_sqr(z) + c
                count += 1
        target.write(p.y * n + p.x, count)

    fractal_kernel.dispatch((n, n), out)
    np.testing.assert_array_equal(out.numpy(), numpy_fractal(n))
