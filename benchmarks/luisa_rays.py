"""A luisa-python program that builds an acceleration structure over a soup of random
triangles and traces one ray per pixel at it, timed: wall time, and the CPU time of the
process's threads (process_time), which a machine shared with other work inflates less.
Runs on real luisa-python (`python luisa_rays.py cpu ...`) or on luisa_nb (bench_rays.py
runs it with `import luisa` standing for luisa_nb.luisa).

    python luisa_rays.py BACKEND TRIANGLES WIDTH HEIGHT REPEATS
"""

import sys
import time

import numpy as np

import luisa
from luisa.mathtypes import *

backend, triangles, width, height, repeats = sys.argv[1], *map(int, sys.argv[2:6])
luisa.init(backend, support_gui=False)
rng = np.random.default_rng(1)
corners = rng.uniform(-1, 1, (triangles, 1, 3)) + rng.normal(0, 0.03, (triangles, 3, 3))
vertices = luisa.Buffer(3 * triangles, float3)
padded = np.zeros((3 * triangles, 4), np.float32)
padded[:, :3] = corners.reshape(-1, 3)
vertices.copy_from(padded)
indices = luisa.Buffer(3 * triangles, int)
indices.copy_from(np.arange(3 * triangles, dtype=np.int32))
distances = luisa.Buffer(width * height, float)
accel = luisa.Accel()
accel.add(vertices, indices)
luisa.synchronize()
start, start_cpu = time.perf_counter(), time.process_time()
accel.update()
luisa.synchronize()
build, build_cpu = time.perf_counter() - start, time.process_time() - start_cpu


@luisa.func
def shoot(accel):
    p = dispatch_id().xy
    u = (float(p.x) + 0.5) / width * 2.0 - 1.0
    v = (float(p.y) + 0.5) / height * 2.0 - 1.0
    ray = luisa.make_ray(float3(u, v, 3.0), normalize(float3(u * 0.2, v * 0.2, -1.0)), 0.0, 10.0)
    hit = accel.trace_closest(ray, -1)
    t = -1.0
    if hit.hitted():
        t = hit.ray_t
    distances.write(p.y * width + p.x, t)


start = time.perf_counter()
shoot(accel, dispatch_size=(width, height))
luisa.synchronize()
first = time.perf_counter() - start
times, cpu_times = [], []
for _ in range(repeats):
    start, start_cpu = time.perf_counter(), time.process_time()
    shoot(accel, dispatch_size=(width, height))
    luisa.synchronize()
    times.append(time.perf_counter() - start)
    cpu_times.append(time.process_time() - start_cpu)
result = np.zeros(width * height, np.float32)
distances.copy_to(result)
luisa.synchronize()
hits = int((result > 0).sum())
print(
    f"build {build:.6f} first {first:.6f} best {min(times):.6f} checksum {hits} "
    f"build_cpu {build_cpu:.6f} best_cpu {min(cpu_times):.6f}"
)
