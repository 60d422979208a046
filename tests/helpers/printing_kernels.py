"""Kernels with device prints, shared by the print tests of every backend."""

from luisa_nb.kernels import dispatch_id, float2


def squares(out):
    i = dispatch_id().x
    print("square of", i, "is", i * i, float(i) / 4.0, float2(i, 0.5), i > 1)
    out.write(i, i * i)


def bad_index(out):
    i = dispatch_id().x
    print("before", i)
    out.write(i + 2, i)
