"""The fixed kernels conformance programs dispatch, written for the runtime; the oracle's
numpy twins are in :data:`luisa_nb.conformance.oracle.KERNELS`."""

from __future__ import annotations

from luisa_nb.kernels import dispatch_id
from luisa_nb.runtime import Kernel, kernel

TRAP_OFFSET = 1 << 30
"""How far past each thread's own element ``trap`` reads: beyond any conformance buffer."""


@kernel
def vecadd(out, a, b):
    i = dispatch_id().x
    out.write(i, a.read(i) + b.read(i))


@kernel
def scale(values):
    i = dispatch_id().x
    values.write(i, values.read(i) * 2.0 + 1.0)


@kernel
def trap(values):
    i = dispatch_id().x
    values.read(i + TRAP_OFFSET)


KERNELS: dict[str, Kernel] = {"vecadd": vecadd, "scale": scale, "trap": trap}
