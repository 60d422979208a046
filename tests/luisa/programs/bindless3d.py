"""A luisa-python program with a 3D image in a bindless array twice (point filtering with
edge addressing, and the default sampler: linear filtering, repeat addressing) and a 2D
image. Prints one row per thread: a texel read, the 3D size, two channels of the point
sample, the default sample and a 2D gradient sample (away from the image's seams)."""

import sys

import numpy as np

import luisa
from luisa.mathtypes import *

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
if luisa.__name__ == "luisa" and not hasattr(luisa.Image3D, "texture2DType"):
    # luisa-python 0.3.7's Image3D() reads a texture2DType it never sets: give it one
    luisa.Image3D.texture2DType = property(lambda image: image.texture3DType)
THREADS = 8
values = (np.arange(4 * 3 * 2 * 4, dtype=np.float32) / 10).reshape(2, 3, 4, 4)
volume = luisa.Image3D(4, 3, 2, 4, float)
volume.copy_from(values)
plane = luisa.Image2D(4, 3, 4, float)
plane.copy_from(np.ascontiguousarray(values[1]))
heap = luisa.BindlessArray()
heap.emplace(0, volume, filter=luisa.lcapi.Filter.POINT, address=luisa.lcapi.Address.EDGE)
heap.emplace(1, volume)
heap.emplace(2, plane)
heap.update()
out = luisa.Buffer(THREADS * 6, float)


@luisa.func
def read_all(out):
    i = dispatch_id().x
    t = heap.texture3d_read(0, make_uint3(i % 4, i % 3, i % 2))
    s = heap.texture3d_size(0)
    p = make_float3(float(i) * 0.15 - 0.17, float(i) * 0.1 + 0.05, float(i) * 0.13 + 0.3)
    a = heap.texture3d_sample(0, p)
    b = heap.texture3d_sample(1, p)
    uv = make_float2(0.4, 0.31 + float(i) * 0.05)
    g = heap.texture2d_sample_grad(2, uv, make_float2(0.1, 0.0), make_float2(0.0, 0.1))
    out.write(6 * i, t.x + t.w)
    out.write(6 * i + 1, float(s.x * 100 + s.y * 10 + s.z))
    out.write(6 * i + 2, a.x)
    out.write(6 * i + 3, a.z)
    out.write(6 * i + 4, b.x)
    out.write(6 * i + 5, g.y)


read_all(out, dispatch_size=THREADS)
for row in out.numpy().reshape(THREADS, 6):
    print("row", " ".join(f"{value:.6f}" for value in row))
