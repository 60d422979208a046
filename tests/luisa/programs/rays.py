"""A luisa-python program that traces a grid of rays at a small scene: a cube and a
tilted quad, the quad instanced twice with transforms. Prints one row per ray: the
closest hit's instance, triangle, distance and barycentrics, whether any hit lies
nearer than half that distance, whether a short ray from inside the scene hits, and a
value interpolated over the hit triangle. (Visibility masks other than all bits are
left out: real luisa-python 0.3.7's CPU backend honours them differently from run to
run.)"""

import sys

import numpy as np

import luisa
from luisa.mathtypes import *

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
SIDE = 12

cube = [float3(x, y, z) for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]
cube_faces = [0, 1, 3, 0, 3, 2, 4, 6, 7, 4, 7, 5, 0, 4, 5, 0, 5, 1,
              2, 3, 7, 2, 7, 6, 0, 2, 6, 0, 6, 4, 1, 5, 7, 1, 7, 3]  # fmt: skip
quad = [float3(-1.0, -1.0, 0.0), float3(1.0, -1.0, 0.3), float3(1.0, 1.0, 0.0),
        float3(-1.0, 1.0, -0.3)]  # fmt: skip
cube_vertices = luisa.Buffer(len(cube), float3)
cube_vertices.copy_from(cube)
cube_triangles = luisa.Buffer(len(cube_faces), int)
cube_triangles.copy_from(np.array(cube_faces, dtype=np.int32))
quad_vertices = luisa.Buffer(4, float3)
quad_vertices.copy_from(quad)
quad_triangles = luisa.Buffer(6, int)
quad_triangles.copy_from(np.array([0, 1, 2, 0, 2, 3], dtype=np.int32))

accel = luisa.Accel()
accel.add(cube_vertices, cube_triangles)
accel.add(quad_vertices, quad_triangles,
          transform=float4x4(1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0,
                             0.0, 0.0, 1.0, 0.0, 0.4, -0.2, -1.5, 1.0))  # fmt: skip
accel.add(quad_vertices, quad_triangles,
          transform=float4x4(0.5, 0.0, 0.0, 0.0, 0.0, 0.35, 0.35, 0.0,
                             0.0, -0.35, 0.35, 0.0, -0.3, 0.6, 1.2, 1.0))  # fmt: skip
accel.update()

closest = luisa.Buffer(SIDE * SIDE * 8, float)


@luisa.func
def shoot(accel, closest):
    i = dispatch_id().x
    u = (float(i % SIDE) + 0.37) / SIDE * 3.0 - 1.5
    v = (float(i // SIDE) + 0.61) / SIDE * 3.0 - 1.5
    ray = luisa.make_ray(float3(u, v, 3.0), normalize(float3(u * 0.1, v * 0.05, -1.0)), 0.0, 100.0)
    hit = accel.trace_closest(ray, -1)
    row = i * 8
    for column in range(8):
        closest.write(row + column, 0.0)
    if hit.miss():
        closest.write(row, -1.0)
    else:
        closest.write(row, float(hit.inst))
        closest.write(row + 1, float(hit.prim))
        closest.write(row + 2, hit.ray_t)
        closest.write(row + 3, hit.bary.x)
        closest.write(row + 4, hit.bary.y)
        closest.write(row + 7, hit.interpolate(1.0, 2.0, 4.0))
    nearer = luisa.make_ray(ray.get_origin(), ray.get_dir(), 0.0, hit.ray_t * 0.5)
    if hit.hitted() and accel.trace_any(nearer, -1):
        closest.write(row + 5, 1.0)
    far = luisa.make_ray(ray.get_origin() + ray.get_dir() * 2.9, ray.get_dir(), 0.0, 1.0)
    if accel.trace_any(far, -1):
        closest.write(row + 6, 1.0)


shoot(accel, closest, dispatch_size=SIDE * SIDE)
values = np.zeros(SIDE * SIDE * 8, dtype=np.float32)
closest.copy_to(values)
luisa.synchronize()
for index, row in enumerate(values.reshape(-1, 8)):
    print("ray", index, " ".join(repr(float(x)) for x in row))
