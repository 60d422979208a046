"""The ray tracing functions of the kernel language (:mod:`luisa_nb.kernels.lang.rays`)
made callables: importing this module (the ``kernels`` package does) gives each its
:class:`KernelDefinition`, which the language stage cannot import itself (the compiler
imports the language)."""

from __future__ import annotations

from luisa_nb.kernels.definition import KernelDefinition
from luisa_nb.kernels.lang import rays
from luisa_nb.kernels.lang.rays import RAY, TRIANGLE_HIT, inf_ray, make_ray

for _callable in rays.CALLABLES:
    _callable.definition = KernelDefinition(_callable.function)

Ray = RAY
TriangleHit = TRIANGLE_HIT

__all__ = ["Ray", "TriangleHit", "inf_ray", "make_ray"]
