"""Kernels in luisa-python's style using matrices, for test_kernel_matrices (each runs in
C and in Python mode)."""

from __future__ import annotations

import luisa_nb as lnb
from luisa_nb.kernels import (
    StructType,
    determinant,
    dispatch_id,
    float2,
    float2x2,
    float3,
    float3x3,
    float4,
    float4x4,
    inverse,
    make_float2x2,
    make_float3x3,
    transpose,
)

Frame = StructType(basis=float3x3, origin=float3)


def arithmetic(matrices, others, vectors, out_matrices, out_vectors, out_scalars, scale):
    """Every matrix operation on buffer elements; 9 matrices and 2 vectors per thread."""
    i = dispatch_id().x
    m = matrices.read(i)
    n = others.read(i)
    v = vectors.read(i)
    out_matrices.write(9 * i + 0, m * n)
    out_matrices.write(9 * i + 1, m @ n)
    out_matrices.write(9 * i + 2, m * scale + 2 * n)
    out_matrices.write(9 * i + 3, m + n - transpose(m))
    out_matrices.write(9 * i + 4, -m)
    out_matrices.write(9 * i + 5, inverse(m))
    p = m
    p *= 0.5
    p += n
    out_matrices.write(9 * i + 6, p)
    out_matrices.write(9 * i + 7, m * n * m)
    out_matrices.write(9 * i + 8, m / scale)
    out_vectors.write(2 * i, m * v)
    out_vectors.write(2 * i + 1, n @ (m @ v))
    out_scalars.write(i, determinant(m))


def constructors(out):
    """Each constructor form; columns and elements read and stored."""
    i = dispatch_id().x
    a = float2x2(1.0, 2.0, 3, i)
    b = make_float2x2(float2(5, 6), float2(7, 8))
    c = float3x3(float4x4(float4(1.0, 2, 3, 4), float4(5.0), float4(9.0), float4(13.0)))
    d = float4x4(a)
    e = float3x3()
    f = make_float3x3(c)
    f[1] = float3(-1, -2, -3)
    f[2][0] = 7.5
    f[2].y = 8.5
    e[i % 3][(i + 1) % 3] = 1.0
    column = c[i % 3]
    out.write(16 * i + 0, a[1][1] + a[0].y * 10 + b[1].x * 100)
    out.write(16 * i + 1, c[0].x + c[1].y * 10 + c[2][2] * 100)
    out.write(16 * i + 2, d[1][1] + d[2][2] * 10 + d[3][0] * 100 + d[0][1] * 1000)
    out.write(16 * i + 3, e[0][1] + e[1][2] * 10 + e[2][0] * 100)
    out.write(16 * i + 4, f[1].z + f[2].x * 10 + f[2][1] * 100)
    out.write(16 * i + 5, column.x + column.z * 10)


def arguments_and_fields(out, m):
    """A matrix argument, a struct with a matrix field, a callable taking and returning
    matrices."""
    i = dispatch_id().x
    frame = Frame(basis=m * float(i + 1), origin=float3(1, 2, 3))
    frame.basis[0].x += 1.0
    moved = to_world(frame, float3(1, 0, 0))
    out.write(3 * i, moved)
    out.write(3 * i + 1, doubled(frame.basis)[0])
    out.write(3 * i + 2, frame.basis[2])


@lnb.kernel
def to_world(frame, p):
    return frame.basis * p + frame.origin


@lnb.kernel
def doubled(m):
    m = m + m
    return m
