"""The fixed kernels conformance programs dispatch, written for the runtime; the oracle's
numpy twins are in :data:`luisa_nb.conformance.oracle.KERNELS`. ``swizzle``, ``weigh``
and ``brighten`` take buffers of the ``float4``, ``struct`` and ``image`` layouts."""

from __future__ import annotations

import numpy as np

from luisa_nb.kernels import StructType, dispatch_id, dtype_of, float2, float4
from luisa_nb.runtime import Kernel, kernel

Particle = StructType(position=float2, weight=float, scale=float)
"""The element of a ``struct`` buffer: four floats, no padding."""
ELEMENT_DTYPES: dict[str, np.dtype] = {"float4": dtype_of(float4), "struct": dtype_of(Particle)}
"""The dtype of a buffer of the ``float4`` and ``struct`` layouts."""

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


@kernel
def swizzle(vectors):
    i = dispatch_id().x
    v = vectors.read(i)
    vectors.write(i, float4(v.y, v.x, v.w * 2.0, v.z + 1.0))


@kernel
def weigh(particles):
    i = dispatch_id().x
    p = particles.read(i)
    p.position = p.position * p.scale
    p.weight = p.weight + 1.0
    particles.write(i, p)


@kernel
def brighten(image):
    p = dispatch_id().xy
    image.write(p, image.read(p) * 2.0 + 0.5)


KERNELS: dict[str, Kernel] = {
    "vecadd": vecadd,
    "scale": scale,
    "trap": trap,
    "swizzle": swizzle,
    "weigh": weigh,
    "brighten": brighten,
}
