"""Matrices (float2x2, float3x3, float4x4) in kernels and on the host: constructors,
columns, products, scaling, element-wise + and -, transpose, determinant and inverse,
buffers, arguments, struct fields and callables, in C and Python mode against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import InvalidArgumentError, KernelCompileError
from luisa_nb.kernels import (
    BufferType,
    KernelDefinition,
    MatrixType,
    argument_type,
    compiler_available,
    determinant,
    dtype_of,
    float2,
    float2x2,
    float3,
    float3x3,
    float4x4,
    inverse,
    make_float2x2,
    transpose,
)
from luisa_nb.kernels.lang.vectors import VectorIndexError

from . import matrix_kernels
from .helpers import FakeBuffer, load_function, run

F32 = np.float32
MODES = ("c", "python") if compiler_available() else ("python",)


def columns_of(array: np.ndarray, size: int) -> np.ndarray:
    """(n, size, size) columns of a buffer array of float{size}x{size}."""
    padded = 4 if size == 3 else size
    return array.view(F32).reshape(len(array), size, padded)[:, :, :size]


def as_math(array: np.ndarray, size: int) -> np.ndarray:
    """(n, row, column) matrices of a buffer array, as numpy writes them."""
    return columns_of(array, size).transpose(0, 2, 1)


def test_layout_matches_luisacompute() -> None:
    assert [dtype_of(t).itemsize for t in (float2x2, float3x3, float4x4)] == [16, 48, 64]
    assert MatrixType(3).alignment == 16
    buffer = FakeBuffer(np.zeros(2, dtype_of(float3x3)))
    assert argument_type(buffer) == BufferType(MatrixType(3))
    assert argument_type(float2x2()) == MatrixType(2)


def test_host_values_follow_lcapi() -> None:
    m = float2x2(1, 2, 3, 4)
    assert repr(m) == "float2x2([1,2], [3,4])"
    np.testing.assert_array_equal(np.asarray(m), [[1, 3], [2, 4]])
    np.testing.assert_array_equal(np.asarray(float2x2(5)), [[5, 0], [0, 5]])
    np.testing.assert_array_equal(np.asarray(make_float2x2(float2(1, 2), float2(3, 4))), m)
    grown = float4x4(m)
    np.testing.assert_array_equal(np.asarray(grown)[:2, :2], m)
    np.testing.assert_array_equal(np.asarray(grown)[2:, 2:], np.eye(2))
    np.testing.assert_array_equal(np.asarray(float2x2(float3x3(2))), 2 * np.eye(2))
    m[1][0] = 7
    m[0] = float2(8, 9)
    np.testing.assert_array_equal(np.asarray(m), [[8, 7], [9, 4]])
    assert (m * float2(1, 1)).x == 15
    assert determinant(m) == F32(8 * 4 - 7 * 9)
    np.testing.assert_array_equal(np.asarray(transpose(m)), np.asarray(m).T)
    np.testing.assert_allclose(np.asarray(inverse(m)), np.linalg.inv(np.asarray(m)), rtol=1e-6)
    with pytest.raises(VectorIndexError, match="outside float2x2"):
        m[2]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (lambda: float3x3() * float2(1, 2), "cannot multiply float3x3 and float2"),
        (lambda: float2(1, 2) * float2x2(), "write transpose(m) * v"),
        (lambda: float2x2() + 1.0, "cannot add float2x2 and float32"),
        (lambda: float2x2() / float2(1, 2), "a matrix divides only by a scalar"),
        (lambda: 2.0 / float2x2(), "cannot divide float32 and float2x2"),
        (lambda: float2x2() * np.float64(2), "convert the scalar with float(...)"),
        (lambda: float2x2(1, 2, 3), "takes no arguments (zeros), 2x2 numbers"),
    ],
)
def test_host_errors(expression, message) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        expression()
    assert message in str(caught.value)


@pytest.mark.parametrize("mode", MODES)
def test_arithmetic_matches_numpy(mode) -> None:
    rng = np.random.default_rng(7)
    n = 16
    a = rng.uniform(-2, 2, (n, 3, 3)).astype(F32) + 3 * np.eye(3, dtype=F32)
    b = rng.uniform(-2, 2, (n, 3, 3)).astype(F32)
    v = rng.uniform(-2, 2, (n, 3)).astype(F32)
    matrices, others = (FakeBuffer(np.zeros(n, dtype_of(float3x3))) for _ in range(2))
    as_math(matrices.array, 3)[:] = a
    as_math(others.array, 3)[:] = b
    vectors = FakeBuffer(np.zeros(n, dtype_of(float3)))
    vectors.array.view(F32).reshape(n, 4)[:, :3] = v
    out_matrices = FakeBuffer(np.zeros(9 * n, dtype_of(float3x3)))
    out_vectors = FakeBuffer(np.zeros(2 * n, dtype_of(float3)))
    out_scalars = FakeBuffer(np.zeros(n, F32))
    definition = KernelDefinition(matrix_kernels.arithmetic, mode=mode)
    buffers = (matrices, others, vectors, out_matrices, out_vectors, out_scalars)
    run(definition, n, *buffers, F32(1.5))
    got = as_math(out_matrices.array, 3).reshape(n, 9, 3, 3)
    exact = {
        2: a * F32(1.5) + F32(2) * b,
        3: a + b - a.transpose(0, 2, 1),
        4: -a,
        8: a / F32(1.5),
    }
    for index, expected in exact.items():
        np.testing.assert_array_equal(got[:, index], expected)
    close = {0: a @ b, 1: a @ b, 5: np.linalg.inv(a), 6: a * F32(0.5) + b, 7: a @ b @ a}
    for index, expected in close.items():
        np.testing.assert_allclose(got[:, index], expected, rtol=2e-5, atol=2e-5)
    vectors_out = out_vectors.array.view(F32).reshape(2 * n, 4)[:, :3].reshape(n, 2, 3)
    np.testing.assert_allclose(vectors_out[:, 0], np.einsum("nij,nj->ni", a, v), rtol=2e-5)
    second = np.einsum("nij,nj->ni", b, np.einsum("nij,nj->ni", a, v))
    np.testing.assert_allclose(vectors_out[:, 1], second, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(out_scalars.array, np.linalg.det(a), rtol=2e-5)


def test_modes_agree_bit_for_bit() -> None:
    rng = np.random.default_rng(11)
    n = 8
    arrays = {}
    for mode in MODES:
        buffers = [FakeBuffer(np.zeros(n, dtype_of(float3x3))) for _ in range(2)]
        for buffer in buffers:
            as_math(buffer.array, 3)[:] = rng.uniform(-3, 3, (n, 3, 3)).astype(F32)
        rng = np.random.default_rng(11)  # the same inputs for the next mode
        vectors = FakeBuffer(np.ones(n, dtype_of(float3)))
        outputs = [
            FakeBuffer(np.zeros(9 * n, dtype_of(float3x3))),
            FakeBuffer(np.zeros(2 * n, dtype_of(float3))),
            FakeBuffer(np.zeros(n, F32)),
        ]
        definition = KernelDefinition(matrix_kernels.arithmetic, mode=mode)
        run(definition, n, *buffers, vectors, *outputs, F32(0.25))
        matrices, vectors_out, scalars = (output.array for output in outputs)
        vector_components = vectors_out.view(F32).reshape(2 * n, 4)[:, :3]
        arrays[mode] = (columns_of(matrices, 3), vector_components, scalars)
    first, *others = arrays.values()
    for other in others:  # the padding of float3 columns may differ
        for got, expected in zip(other, first, strict=True):
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("mode", MODES)
def test_constructors_columns_and_stores(mode) -> None:
    out = FakeBuffer(np.zeros(64, F32))
    run(KernelDefinition(matrix_kernels.constructors, mode=mode), 4, out)
    got = out.array.reshape(4, 16)[:, :6]
    i = np.arange(4, dtype=F32)
    np.testing.assert_array_equal(got[:, 0], i + 2 * 10 + 7 * 100)
    np.testing.assert_array_equal(got[:, 1], 1 + 5 * 10 + 9 * 100)
    np.testing.assert_array_equal(got[:, 2], i + 10 + 0 + 2 * 1000)
    unit = {0: (0, 1), 1: (1, 2), 2: (2, 0)}
    expected_e = [
        [1.0 if unit[k % 3] == pair else 0.0 for pair in ((0, 1), (1, 2), (2, 0))] for k in range(4)
    ]
    np.testing.assert_array_equal(got[:, 3], np.array(expected_e, F32) @ [1, 10, 100])
    np.testing.assert_array_equal(got[:, 4], -3 + 7.5 * 10 + 8.5 * 100)
    columns = np.array([[1, 3], [5, 5], [9, 9], [1, 3]], F32)
    np.testing.assert_array_equal(got[:, 5], columns @ [1, 10])


@pytest.mark.parametrize("mode", MODES)
def test_arguments_struct_fields_and_callables(mode) -> None:
    m = float3x3(1, 2, 3, 4, 5, 6, 7, 8, 10)
    out = FakeBuffer(np.zeros(9, dtype_of(float3)))
    run(KernelDefinition(matrix_kernels.arguments_and_fields, mode=mode), 3, out, m)
    got = out.array.view(F32).reshape(9, 4)[:, :3].reshape(3, 3, 3)
    for i in range(3):
        basis = np.asarray(m) * F32(i + 1)
        basis[0, 0] += 1
        np.testing.assert_array_equal(got[i, 0], basis[:, 0] + [1, 2, 3])
        np.testing.assert_array_equal(got[i, 1], 2 * basis[:, 0])
        np.testing.assert_array_equal(got[i, 2], basis[:, 2])


KERNEL = """\
from luisa_nb.kernels import *


def kernel_under_test(out):
    m = float3x3()
    v = float3()
    w = float2()
    {statement}
"""


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("x = m * w", "cannot multiply float3x3 and float2: float3x3 multiplies a float3x3"),
        ("x = v * m", "cannot multiply float3 and float3x3: luisa-python multiplies a matrix"),
        ("x = v @ v", "@ multiplies a matrix by a matrix or a vector"),
        ("x = m @ 2.0", "scale with *"),
        ("x = m / w", "cannot divide float3x3 and float2: a matrix divides only by a scalar"),
        ("x = 2.0 / m", "cannot divide float32 and float3x3: a matrix divides only by a"),
        ("x = m + 1.0", "cannot add float3x3 and float32: matrices combine element by"),
        ("x = m + float2x2()", "cannot add float3x3 and float2x2"),
        ("x = m == m", "cannot compare float3x3 and float3x3: matrices have only"),
        ("x = float3x3(1.0)", "luisa.util's make_float3x3_eye(s) makes a diagonal"),
        ("x = float3x3(w, w, w)", "float3 columns, or a matrix; got float2, float2, float2"),
        ("x = transpose(v)", "transpose() takes a matrix, got float3"),
        ("x = length(m)", "length() takes float vectors, got float3x3"),
        ("x = m[3]", "index 3 is outside float3x3"),
        ("m[0] = w", "cannot store a float2 value into a float3 place"),
        ("x = +m", "unary + does not apply to float3x3"),
    ],
)
def test_compile_errors_name_both_types(tmp_path, statement, message) -> None:
    function = load_function(tmp_path, KERNEL.format(statement=statement))
    out = FakeBuffer(np.zeros(1, F32))
    with pytest.raises(KernelCompileError) as caught:
        KernelDefinition(function, mode="python").executable((argument_type(out),))
    assert message in str(caught.value)
    assert "snippet.py:8:" in str(caught.value)


@pytest.mark.parametrize("mode", MODES)
def test_luisa_modules_export_matrices(mode) -> None:
    from luisa_nb.luisa import builtin, mathtypes, types
    from luisa_nb.luisa.util import make_float2x2_eye, make_float3x3_eye, make_float4x4_eye

    assert {"float3x3", "make_float4x4"} <= set(mathtypes.__all__)
    assert {"transpose", "determinant", "inverse"} <= set(builtin.__all__)
    assert types.element_dtype(mathtypes.float3x3).itemsize == 48

    def eye(out):
        m = make_float3x3_eye(2.5) * make_float2x2_eye(1)[1][1]
        out.write(0, m[1].y + m[0].y + make_float4x4_eye(3)[3][3])

    out = FakeBuffer(np.zeros(1, F32))
    run(KernelDefinition(eye, mode=mode), 1, out)
    assert out.array[0] == F32(5.5)
