"""A luisa-python program: mandelbrot with float2 arithmetic, timed. Runs on real
luisa-python (`python luisa_mandelbrot.py cpu`) or on luisa_nb (bench_luisa_programs.py
runs it with `import luisa` standing for luisa_nb.luisa).

    python luisa_mandelbrot.py BACKEND WIDTH HEIGHT ITERATIONS REPEATS
"""

import sys
import time

import luisa
from luisa.mathtypes import *

backend, width, height, iterations, repeats = sys.argv[1], *map(int, sys.argv[2:6])
luisa.init(backend, support_gui=False)
escape = luisa.Buffer(width * height, float)


@luisa.func
def draw(max_iter):
    p = dispatch_id().xy
    z, c = float2(0), 2 * float2(p) / height - float2(2, 1)
    steps = 0
    for _ in range(max_iter):
        z = float2(z.x * z.x - z.y * z.y, 2 * z.x * z.y) + c
        steps += 1
        if length(z) > 20:
            break
    escape.write(p.y * width + p.x, 1 - steps / max_iter)


start = time.perf_counter()
draw(iterations, dispatch_size=(width, height))
first_call = time.perf_counter() - start
luisa.synchronize()
first = time.perf_counter() - start
times, calls, cpu_times = [], [], []
for _ in range(repeats):
    start, cpu_start = time.perf_counter(), time.process_time()
    draw(iterations, dispatch_size=(width, height))
    calls.append(time.perf_counter() - start)
    luisa.synchronize()
    times.append(time.perf_counter() - start)
    cpu_times.append(time.process_time() - cpu_start)
compile_time = first_call - min(calls)
checksum = escape.numpy().sum()
print(
    f"first {first:.6f} compile {compile_time:.6f} best {min(times):.6f} "
    f"cpu {min(cpu_times):.6f} checksum {checksum:.3f}"
)
