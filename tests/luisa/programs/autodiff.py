"""A luisa-python program that differentiates in kernels: straight-line code, an
if/else, select(), a callable, float2 and float3 values with length, dot, normalize,
cross, reflect, swizzles and a component store, math functions, max, min and clamp, a
seed given to backward, and a callable holding its own autodiff block. Only
what real luisa-python 0.3.7's CPU backend runs (its autodiff crashes on loops, detach
and gradients of intermediate values). Prints one JSON object of per-thread gradients."""

import json
import sys

import numpy as np

import luisa
from luisa.autodiff import autodiff, backward, grad, requires_grad
from luisa.mathtypes import *

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
INPUTS = [0.5, 1.0, -2.0, 3.0, 0.25, -0.75, 1.75, 2.5]
N = len(INPUTS)
ROWS = ("chain", "branch", "selected", "callable", "pieces", "seeded", "inner", "functions")
ROWS += ("components",)
VECTORS = ("vector", "geometry", "components_by_vector")
xs = luisa.Buffer.from_array(np.array(INPUTS, np.float32))
out = luisa.Buffer(N * len(ROWS), float)
vector_out = luisa.Buffer(N * 3 * len(VECTORS), float)


@luisa.func
def square(a):
    return a * a


@luisa.func
def clamped_slope(a):
    with autodiff():
        requires_grad(a)
        t = clamp(a * 2.0, -1.0, 1.5)
        backward(t, 1.0)
        g = grad(a)
    return g


@luisa.func
def differentiate():
    i = dispatch_id().x
    x = xs.read(i)
    n = len_rows
    with autodiff():
        requires_grad(x)
        y = x * x * x + sin(x) * exp(x * 0.5) - x / (x * x + 1.0)
        backward(y)
        g = grad(x)
    out.write(i * n, g)
    with autodiff():
        requires_grad(x)
        y = x * x
        if x > 0.7:  # noqa: SIM108 (a branch, not a select)
            y = y * 3.0
        else:
            y = sin(y) + x
        backward(y)
        g = grad(x)
    out.write(i * n + 1, g)
    with autodiff():
        requires_grad(x)
        y = select(x * x, cos(x), x > 0.7)
        backward(y)
        g = grad(x)
    out.write(i * n + 2, g)
    with autodiff():
        requires_grad(x)
        y = square(x) * x + square(x + 1.0)
        backward(y)
        g = grad(x)
    out.write(i * n + 3, g)
    v = float3(x, 2.0 * x, 1.0)
    with autodiff():
        requires_grad(v)
        y = length(v) + dot(v, float3(1.0, 2.0, 3.0))
        backward(y)
        gv = grad(v)
    m = len_vectors * 3
    vector_out.write(i * m, gv.x)
    vector_out.write(i * m + 1, gv.y)
    vector_out.write(i * m + 2, gv.z)
    with autodiff():
        requires_grad(v)
        w = normalize(v) * 2.0 + cross(v, float3(0.3, 0.2, 0.1))
        w = w + reflect(v, float3(0.0, 1.0, 0.0))
        y = dot(w, v) + length(v - float3(1.0)) + length_squared(v)
        backward(y)
        gv = grad(v)
    vector_out.write(i * m + 3, gv.x)
    vector_out.write(i * m + 4, gv.y)
    vector_out.write(i * m + 5, gv.z)
    with autodiff():
        requires_grad(v, x)
        u = v * x
        u.y = u.x * 2.0
        y = u.y + u.z * v[1] + sin(u).x
        backward(y)
        gv = grad(v)
        g = grad(x)
    vector_out.write(i * m + 6, gv.x)
    vector_out.write(i * m + 7, gv.y)
    vector_out.write(i * m + 8, gv.z)
    out.write(i * n + 8, g)
    with autodiff():
        requires_grad(x)
        t = float2(x, x * x)
        y = dot(t, float2(1.0, 2.0)) + max(x, 0.7) + clamp(x, 0.0, 1.0)
        backward(y)
        g = grad(x)
    out.write(i * n + 4, g)
    with autodiff():
        requires_grad(x)
        y = x * x + 1.0
        backward(y, 2.5)
        g = grad(x)
    out.write(i * n + 5, g)
    out.write(i * n + 6, clamped_slope(x))
    with autodiff():
        requires_grad(x)
        y = abs(x) * pow(x * x + 1.0, 1.5) + atan2(x, 2.0) + lerp(x, 2.0 * x, 0.3)
        y = y + min(x, 0.6) + tanh(x) + exp2(x) + log(x * x + 1.0) + sqrt(x * x + 1.0)
        backward(y + fma(x, x, 1.0))
        g = grad(x)
    out.write(i * n + 7, g)


len_rows = len(ROWS)
len_vectors = len(VECTORS)
differentiate(dispatch_size=N)
values = out.numpy().reshape(N, len(ROWS))
vectors = vector_out.numpy().reshape(N, len(VECTORS), 3)
result = {row: values[:, k].tolist() for k, row in enumerate(ROWS)}
result.update({name: vectors[:, k].tolist() for k, name in enumerate(VECTORS)})
print(json.dumps(result))
