"""Kernels in luisa-python's style using vectors, for test_kernel_vectors and
test_kernel_math (each runs in C and in Python mode)."""

from __future__ import annotations

from luisa_nb.kernels import (
    all,
    any,
    clamp,
    cross,
    dispatch_id,
    dispatch_size,
    distance,
    dot,
    float2,
    float3,
    float4,
    fract,
    int2,
    int3,
    length,
    lerp,
    make_float3,
    max,
    min,
    normalize,
    reflect,
    select,
    smoothstep,
    step,
)


def constructors(out):
    i = dispatch_id().x
    v = float3(i)
    w = float4(v.xy, 0, 1)
    u = float4(float3(1, 2, 3), i)
    c = float2(int2(i, 2 * i))
    m = make_float3(c, 7)
    out.write(i, v.x + w.y * 10 + w.w * 100 + u.w * 1000 + c.y * 10000 + m.z * 100000)


def swizzles(out):
    i = dispatch_id().x
    v = float4(i, i + 1, i + 2, i + 3)
    r = v.wzyx
    v.xz = float2(10, 20)
    v.y += 0.5
    v.w *= 2
    v[1] = v[1] + 1
    k = i % 4
    s = v[k]
    v[k] = -1
    out.write(i, r.x + r.w * 10 + v.x * 100 + v.y * 1000 + s * 0.25 + v[k] + v.zz.y * 7)


def arithmetic(out, scale):
    i = dispatch_id().x
    a = float3(i, 2 * i + 1, 3)
    b = int3(i, -i, 7)
    c = a * scale + 1 - a / 2
    d = b // 2 + b % 3 - (b * 3 >> 1)
    e = -c + float3(d) * 0.5
    f = 2 * a - c**2.0
    lt = a < float3(1, 3, 2)
    picked = select(float3(0), float3(1, 2, 4), lt)
    total = e.x + e.y + e.z + f.x * 0.5 + f.y + picked.x + picked.y + picked.z
    flags = int(any(lt)) * 10 + int(all(a >= 0)) * 100
    out.write(i, total + float(flags))


def aliasing(out):
    i = dispatch_id().x
    a = float2(i, 1)
    b = a
    b.x = 100
    c = a if i > 2 else b
    c.y = 50
    out.write(i, a.x + a.y * 10 + b.x + c.y)


def unpacking(out):
    p = dispatch_id().xy
    n = dispatch_size().xy
    z, c = float2(0), 2 * p / n - float2(2, 1)
    z, c = c, z
    a, b = p.x, p.y
    a, b = b, a
    out.write(p.y * n.x + p.x, z.x * 1000 + z.y * 100 + c.x + float(a * 10 + b))


def geometry(out):
    i = dispatch_id().x
    a = float3(i + 1, 2, -1)
    b = float3(0.5, i, 3)
    n = normalize(a)
    c = cross(a, b)
    r = reflect(a, n)
    value = length(a) + dot(a, b) + distance(a, b) + n.x + c.y * 0.1 + r.z
    value += lerp(1.0, 3.0, 0.25 * i) + smoothstep(0.0, 4.0, float(i)) + step(2, i)
    v = clamp(a, 0, 1.5) + max(a, b) - min(b, 1)
    w = fract(a * 0.3)
    out.write(i, value + v.x + v.y + v.z + w.x + w.y)


def mandelbrot(image):
    p = dispatch_id().xy
    n = dispatch_size().xy
    z, c = float2(0), 2.5 * float2(p) / float2(n) - float2(2, 1.25)
    count = 0
    for _ in range(64):
        if length(z) > 2:
            break
        z = float2(z.x * z.x - z.y * z.y, 2 * z.x * z.y) + c
        count += 1
    image.write(p.y * n.x + p.x, float(count) / 64)
