"""Kernels used by the tests. ``x`` and ``y`` are captured buffers of this module."""

import math

import numpy as np

import luisa_nb as lnb
from luisa_nb.kernels.lang import math_builtins as kb
from luisa_nb.kernels.lang.builtins import dispatch_id

from .helpers import FakeBuffer

x = FakeBuffer(np.zeros(64, np.float32))
y = FakeBuffer(np.zeros(64, np.float32))
SCALE = 3
OFFSET = 0.25
LIMIT = np.int64(5_000_000_000)


def vecadd(buf_z):
    tid = lnb.dispatch_id().x
    buf_z.write(tid, x.read(tid) + y.read(tid))


def saxpy(a, x, y, out):
    i = lnb.dispatch_id().x
    out.write(i, a * x.read(i) + y.read(i))


def mandelbrot(image, width, height, max_iterations):
    px = lnb.dispatch_id().x
    py = lnb.dispatch_id().y
    cx = float(px) / float(width) * 3.0 - 2.0
    cy = float(py) / float(height) * 2.0 - 1.0
    zx = 0.0
    zy = 0.0
    iteration = 0
    while iteration < max_iterations and zx * zx + zy * zy <= 4.0:
        t = zx * zx - zy * zy + cx
        zy = 2.0 * zx * zy + cy
        zx = t
        iteration += 1
    image.write(py * width + px, iteration)


def control_flow(out, n):
    i = lnb.dispatch_id().x
    total = 0
    for j in range(n):
        if j % 3 == 0:
            continue
        if j > 2 * i + 5:
            break
        for k in range(j, 0, -2):
            total += k
    count = 0
    while True:
        count += 1
        if count >= i:
            break
    if i == 7:
        out.write(i, -1)
        return
    elif i == 8:
        pass
    else:
        total += 1
    out.write(i, total * 100 + count)


def nested_ranges(out):
    i = lnb.dispatch_id().x
    total = 0
    for a in range(i):
        for b in range(1, a, 2):
            for c in range(3):
                total += a * b + c
    out.write(i, total)


def division(a, b, quotient, remainder, float_quotient, float_remainder):
    i = lnb.dispatch_id().x
    quotient.write(i, a.read(i) // b.read(i))
    remainder.write(i, a.read(i) % b.read(i))
    fa = float(a.read(i)) * 0.5
    fb = float(b.read(i))
    float_quotient.write(i, fa // fb)
    float_remainder.write(i, fa % fb)


def casts(source, as_int, as_float, as_bool):
    i = lnb.dispatch_id().x
    value = source.read(i)
    as_int.write(i, int(value))
    as_float.write(i, float(int(value)) / 2)
    as_bool.write(i, bool(value) and not value > 2.0)


def constants(out):
    i = lnb.dispatch_id().x
    out.write(i, i * SCALE + OFFSET + math.pi + float(LIMIT > 4))


def math_functions(out_float, out_int, scale):
    i = dispatch_id().x
    v = float(i) * scale - 3.0
    out_float.write(i, kb.clamp(kb.sqrt(kb.abs(v)) + kb.sin(v) * kb.exp(-v * v), -1.0, 2.5))
    w = -i if i % 2 == 0 else i
    out_int.write(i, abs(w) + max(w, 3, -i) + min(i, 4) + (i**2 if 1 < i < 5 else -1))


def grid(out):
    ident = lnb.dispatch_id()
    size = lnb.dispatch_size()
    out.write(
        (ident.z * size.y + ident.y) * size.x + ident.x, ident.x + 10 * ident.y + 100 * ident.z
    )


def wide_types(out, big, count):
    i = lnb.dispatch_id().x
    total = big
    for _ in range(count):
        total += i
    out.write(i, total + 3_000_000_000)


def unused_and_read_write(accumulator, unused, scale):
    i = lnb.dispatch_id().x
    accumulator.write(i, accumulator.read(i) * scale)


def debug_print(out):
    i = lnb.dispatch_id().x
    if i == 1:
        print(f"thread {i} sees {out.read(i)}", "end")
    out.write(i, i)


ROW = lnb.kernels.SharedArrayType(64, float)


def bindless_gather(heap, out):
    i = lnb.dispatch_id().x
    texel = heap.texture2d_read(1, lnb.kernels.int2(i % 4, 0))
    out.write(i, heap.buffer_read(float, 0, i) + texel.x + float(heap.buffer_size(0)))


def shared_shift(values, out):
    lnb.kernels.set_block_size(64, 1, 1)
    row = ROW()
    t = lnb.kernels.thread_id().x
    row[t] = values.read(lnb.dispatch_id().x)
    lnb.kernels.sync_block()
    out.write(lnb.dispatch_id().x, row[(t + 1) % 64])
