"""Kernels for the checks and cancellation tests."""

import numpy as np

import luisa_nb as lnb
from luisa_nb.kernels import SharedArrayType, set_block_size, sync_block, thread_id

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


def mark_origin(out):
    p = lnb.dispatch_id()
    if p.x == 0 and p.y == 0 and p.z == 0:
        out.write(0, 1.0)


def mark_origin_looping(out):
    p = lnb.dispatch_id()
    n = 0
    while n < 4:
        n += 1
    if p.x == 0 and p.y == 0 and p.z == 0:
        out.write(0, n / 4.0)


Cells = SharedArrayType(64, float)


def mark_origin_in_blocks(out):
    set_block_size(64, 1, 1)
    cells = Cells()
    cells[thread_id().x] = 1.0
    sync_block()
    p = lnb.dispatch_id()
    if p.x == 0 and p.y == 0 and p.z == 0:
        out.write(0, cells[63])


FAULT_STRIDE = np.int64(2**40)  # elements: 4 TiB of float32, past any memory mapped


def scatter_far(out):
    i = lnb.dispatch_id().x
    out.write(i * FAULT_STRIDE, 1.0)


def gather_far(source, out):
    i = lnb.dispatch_id().x
    out.write(i, source.read(i * FAULT_STRIDE))


def scatter_far_looping(out, count):
    i = lnb.dispatch_id().x
    for k in range(count):
        out.write(i * FAULT_STRIDE + k, 1.0)


def scatter_far_in_blocks(out):
    set_block_size(64, 1, 1)
    cells = Cells()
    cells[thread_id().x] = 1.0
    sync_block()
    i = lnb.dispatch_id().x
    out.write(i * FAULT_STRIDE, cells[0])
