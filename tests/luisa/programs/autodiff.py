"""A luisa-python program that differentiates in kernels: straight-line code, an
if/else, select(), a callable, float2 and float3 values with length and dot, max and
clamp, a seed given to backward, and a callable holding its own autodiff block. Only
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
ROWS = ("chain", "branch", "selected", "callable", "pieces", "seeded", "inner")
xs = luisa.Buffer.from_array(np.array(INPUTS, np.float32))
out = luisa.Buffer(N * len(ROWS), float)
vector_out = luisa.Buffer(N * 3, float)


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
    vector_out.write(i * 3, gv.x)
    vector_out.write(i * 3 + 1, gv.y)
    vector_out.write(i * 3 + 2, gv.z)
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


len_rows = len(ROWS)
differentiate(dispatch_size=N)
values = out.numpy().reshape(N, len(ROWS))
vectors = vector_out.numpy().reshape(N, 3)
result = {row: values[:, k].tolist() for k, row in enumerate(ROWS)}
result["vector"] = vectors.tolist()
print(json.dumps(result))
