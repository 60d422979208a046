"""A luisa-python program that differentiates in a kernel, timed: per thread, the
gradient of a smooth function of a float and a float3 (transcendental functions, a
branch, length and dot). Runs on real luisa-python (`python luisa_autodiff.py cpu`) or
on luisa_nb (bench_luisa_autodiff.py runs it with `import luisa` standing for
luisa_nb.luisa).

    python luisa_autodiff.py BACKEND THREADS REPEATS
"""

import sys
import time

import numpy as np

import luisa
from luisa.autodiff import autodiff, backward, grad, requires_grad
from luisa.mathtypes import *

backend, threads, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
luisa.init(backend, support_gui=False)
xs = luisa.Buffer.from_array(np.linspace(-2.0, 2.0, threads).astype(np.float32))
gradients = luisa.Buffer(threads * 4, float)


@luisa.func
def differentiate():
    i = dispatch_id().x
    x = xs.read(i)
    v = float3(x, 1.0 - x, 0.5)
    with autodiff():
        requires_grad(x, v)
        y = sin(x) * exp(x * 0.25) + length(v) * x
        if y > 0.0:  # noqa: SIM108 (a branch, not a select)
            y = y * y + dot(v, float3(1.0, 2.0, 3.0))
        else:
            y = cos(y) - x * x
        backward(y)
        gx = grad(x)
        gv = grad(v)
    gradients.write(i * 4, gx)
    gradients.write(i * 4 + 1, gv.x)
    gradients.write(i * 4 + 2, gv.y)
    gradients.write(i * 4 + 3, gv.z)


start = time.perf_counter()
differentiate(dispatch_size=threads)
first_call = time.perf_counter() - start
luisa.synchronize()
first = time.perf_counter() - start
times, calls = [], []
for _ in range(repeats):
    start = time.perf_counter()
    differentiate(dispatch_size=threads)
    calls.append(time.perf_counter() - start)
    luisa.synchronize()
    times.append(time.perf_counter() - start)
compile_time = first_call - min(calls)
checksum = gradients.numpy().astype(np.float64).sum()
print(f"first {first:.6f} compile {compile_time:.6f} best {min(times):.6f} checksum {checksum:.3f}")
