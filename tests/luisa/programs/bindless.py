"""A luisa-python program with a bindless array of two buffers and two float images,
read by a kernel argument and by a captured array. Prints one row per thread: buffer
reads, a texel read, a 1-channel texel read and a bilinear sample (away from the
image's seams, where LuisaCompute's CPU backend weights the wrapped texels the other
way round)."""

import sys

import numpy as np

import luisa
from luisa.mathtypes import *

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
THREADS = 16
ramp = luisa.Buffer.from_array(np.arange(8, dtype=np.float32) * 1.5)
offsets = luisa.Buffer.from_array(np.arange(5, dtype=np.float32) + 100)
texels = np.zeros((4, 8, 4), np.float32)
texels[..., 0] = np.arange(8)[None, :]
texels[..., 1] = np.arange(4)[:, None] * 10
texels[..., 2] = 0.25
texels[..., 3] = 1
image = luisa.Image2D(8, 4, 4, float)
image.copy_from(texels)
gray = luisa.Image2D(8, 4, 1, float)
gray.copy_from(np.ascontiguousarray(texels[..., :1]))
heap = luisa.BindlessArray()
heap.emplace(0, ramp)
heap.emplace(3, offsets)
heap.emplace(1, image)
heap.emplace(2, gray)
heap.update()
out = luisa.Buffer(THREADS * 4, float)


@luisa.func
def read_all(table, out):
    i = dispatch_id().x
    v = table.buffer_read(float, 0, i % 8) + table.buffer_read(float, 3, i % 5)
    t = table.texture2d_read(1, make_uint2(i % 8, i // 8))
    g = table.texture2d_read(2, make_uint2(i % 8, 1))
    uv = make_float2(float(i) * 0.05 + 0.1, float(i) * 0.03 + 0.2)
    s = heap.texture2d_sample(1, uv)
    out.write(4 * i, v)
    out.write(4 * i + 1, t.x + t.y)
    out.write(4 * i + 2, g.x + g.y + g.z + g.w)
    out.write(4 * i + 3, s.x + s.y * 0.01)


read_all(heap, out, dispatch_size=THREADS)
for row in out.numpy().reshape(THREADS, 4):
    print("row", " ".join(f"{value:.6f}" for value in row))
