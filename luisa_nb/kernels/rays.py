"""The ray tracing functions of the kernel language (:mod:`luisa_nb.kernels.lang.rays`)
made callables: importing this module (the ``kernels`` package does) lets each make its
:class:`KernelDefinition` when first called, which the language stage cannot import itself
(the compiler imports the language)."""

from __future__ import annotations

from luisa_nb.kernels.definition import KernelDefinition
from luisa_nb.kernels.lang import rays
from luisa_nb.kernels.lang.rays import RAY, TRIANGLE_HIT, inf_ray, make_ray

rays.RayCallable.make_definition = KernelDefinition

Ray = RAY
TriangleHit = TRIANGLE_HIT

__all__ = ["Ray", "TriangleHit", "inf_ray", "make_ray"]
