"""Kernels for the streaming-store tests: which buffers a block writes through a tile."""

import luisa_nb as lnb
from luisa_nb.kernels.lang.builtins import dispatch_id


def vecadd(a, b, out):
    i = dispatch_id().x
    out.write(i, a.read(i) + b.read(i))


def two_outputs(a, sums, squares):
    sums.write(lnb.dispatch_id().x, a.read(dispatch_id().x) * 2.0)
    j = dispatch_id().x
    squares.write(j, a.read(j) * a.read(j))


def scale_in_place(values, factor):
    i = dispatch_id().x
    values.write(i, values.read(i) * factor)


def shifted(a, out):
    i = dispatch_id().x
    out.write(i + 1, a.read(i))


def in_a_branch(a, out):
    i = dispatch_id().x
    if a.read(i) > 0.0:
        out.write(i, a.read(i))


def moved_index(a, out):
    i = dispatch_id().x
    out.write(i, a.read(i))
    i = 0
    out.write(i, 1.0)


def gather(a, indices, out):
    i = dispatch_id().x
    out.write(i, a.read(indices.read(i)))


def with_a_loop(a, out):
    i = dispatch_id().x
    total = 0.0
    for k in range(3):
        total += a.read(i) * k
    out.write(i, total)
