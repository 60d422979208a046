"""Kernels for the checks and cancellation tests."""

import numpy as np

import luisa_nb as lnb

FAR = np.int64(3_000_000_000)  # captured with its dtype: indices with it are int64


def gather(source, indices, out):
    i = lnb.dispatch_id().x
    out.write(i, source.read(indices.read(i)))


def shifted_copy(source, out, shift):
    i = lnb.dispatch_id().x
    out.write(i + shift, source.read(i))


def grid_store(out, width):
    p = lnb.dispatch_id()
    index = p.y * width + p.x
    if p.x == 5 and p.y == 3:
        index = -1
    out.write(index, 1.0)


def looping_sum(source, out, count):
    i = lnb.dispatch_id().x
    total = 0.0
    for k in range(count):
        total += source.read(i + k)
    out.write(i, total)


def reciprocal(source, out):
    i = lnb.dispatch_id().x
    out.write(i, 1.0 / source.read(i))


def spin_forever(out):
    i = lnb.dispatch_id().x
    n = 0
    while True:
        n += 1
        if n == -1:
            break
    out.write(i, n)


def wide_index(source, out):
    i = lnb.dispatch_id().x
    out.write(i, source.read(i + FAR))


def overwrite_then_use(data, out):
    i = lnb.dispatch_id().x
    j = data.read(i)
    data.write(i, 0)
    out.write(j, 1.0)
