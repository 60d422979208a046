"""The kernels the cases dispatch: a few, so that the on-disk cache of compiled kernels
serves most cases."""

from __future__ import annotations

import luisa_nb as lnb

captured = None
"""A buffer that :func:`add_captured` captures; a case sets it before dispatching."""


def add_one(a):
    i = lnb.dispatch_id().x
    a.write(i, a.read(i) + 1.0)


def scale(a, factor):
    i = lnb.dispatch_id().x
    a.write(i, a.read(i) * factor)


def mark(out, n):
    i = lnb.dispatch_id().x
    if i < n:
        out.write(i, 1.0)


def write_at(out, index):
    out.write(index, 1.0)


def stride_write(out, stride):
    i = lnb.dispatch_id().x
    out.write(i * stride, 1.0)


def ratio(a, b, out):
    i = lnb.dispatch_id().x
    out.write(i, a.read(i) / b.read(i))


def add_captured(a):
    i = lnb.dispatch_id().x
    a.write(i, a.read(i) + captured.read(i))


def squares(out):
    i = lnb.dispatch_id().x
    out.write(i, [k * k for k in range(4)][i % 4])


def recursive(out):
    recursive(out)


def imports_a_module(out):
    import os

    out.write(0, os.getpid())


def takes_varargs(*buffers):
    buffers[0].write(0, 1.0)


def yields(out):
    yield out


async def awaits(out):
    out.write(0, 1.0)


source_less = {}
exec(  # a function whose source inspect cannot find
    "def no_source(out):\n    out.write(0, 1.0)\n", {"lnb": lnb}, source_less
)
no_source = source_less["no_source"]

ADD_ONE = lnb.kernel(add_one)
SCALE = lnb.kernel(scale)
MARK = lnb.kernel(mark)
