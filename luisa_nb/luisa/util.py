"""luisa-python's ``luisa.util`` (and its struct and array types): ``StructType``,
``ArrayType``, ``struct``, ``array``, the ``RandomSampler`` struct with its makers, and
``make_float2x2_eye(v)`` ... (diagonal matrices) and ``ite(condition, a, b)``.

Field and element types may be luisa-python's names (``int``, ``float``, ``uint``,
``float3``, another struct ...); they become the kernel types of
:mod:`luisa_nb.kernels.lang.aggregates`, whose dtypes are those of buffers of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from luisa_nb import kernels
from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels.lang.aggregates import Array, Struct
from luisa_nb.kernels.type_system import MatrixType, VectorType
from luisa_nb.luisa.functions import Func, func
from luisa_nb.luisa.types import element_dtype, element_type_of


def _kernel_type(kind: Any) -> Any:
    if kind is bool or kind is int or kind is float:  # a numpy dtype compares equal to int
        return kind
    if isinstance(kind, (kernels.StructType, kernels.ArrayType, VectorType, MatrixType)):
        return kind  # kernel types, as a vector or matrix value's type gives them
    if getattr(kind, "__lnb_type__", None) is not None:
        return kind
    return element_dtype(kind)


def StructType(alignment: int = 1, **fields: Any) -> kernels.StructType:
    """A struct type of named fields: ``StructType(my_v0=float3, my_v1=float4)``."""
    return kernels.StructType(alignment, **{n: _kernel_type(t) for n, t in fields.items()})


def ArrayType(size: int, dtype: Any) -> kernels.ArrayType:
    """An array type of ``size`` elements of ``dtype``."""
    return kernels.ArrayType(size, _kernel_type(dtype))


def struct(alignment: int = 1, **values: Any) -> Struct:
    """A struct value whose type follows from the values' types."""
    kinds = {name: _value_type(value) for name, value in values.items()}
    return StructType(alignment, **kinds)(**values)


def array(values: Any) -> Array:
    """An array value of ``values`` (all of the first one's type)."""
    values = list(values)
    if not values:
        raise InvalidArgumentError("array() needs at least one value")
    return ArrayType(len(values), _value_type(values[0]))(values)


def _value_type(value: Any) -> Any:
    declared = getattr(type(value), "__lnb_type__", None)
    return declared if declared is not None else element_type_of(value)


class _LibraryFunc:
    """A function of this module as a ``luisa.func``, made when first used, so that a
    program that never calls it does not parse it when it imports ``luisa``."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self._function = function
        self._func: Func | None = None
        functools.update_wrapper(self, function)

    def _built(self) -> Func:
        if self._func is None:
            self._func = func(self._function)
        return self._func

    @property
    def __lnb_kernel_definition__(self) -> Any:
        return self._built().__lnb_kernel_definition__

    def __call__(self, *arguments: Any, **keywords: Any) -> Any:
        return self._built()(*arguments, **keywords)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._built(), name)


RandomSampler = StructType(state=int)
"""A pseudo-random sampler: ``RandomSampler(seed)``, then ``s.next()`` (a float in
[0, 1)), ``s.next2f()``, ``s.next3f()``; a linear congruential generator on ``state``."""


@_LibraryFunc
def _start(self, state):
    self.state = state


@_LibraryFunc
def make_random_sampler(v0, v1):
    """A sampler seeded from two integers (4 rounds of the TEA hash)."""
    v = kernels.uint2(v0, v1)
    total = kernels.uint2(0).x
    for _ in range(4):
        total += 0x9E3779B9
        v.x += ((v.y << 4) + 0xA341316C) ^ (v.y + total) ^ ((v.y >> 5) + 0xC8013EA4)
        v.y += ((v.x << 4) + 0xAD90777D) ^ (v.x + total) ^ ((v.x >> 5) + 0x7E95761E)
    return RandomSampler(v.x)


@_LibraryFunc
def make_random_sampler3d(p):
    """A sampler seeded from an int3 or uint3 (an xxHash32-style mix)."""
    q = kernels.uint3(p)
    h = q.z + 374761393 + q.x * 3266489917
    h = 668265263 * ((h << 17) | (h >> 15))
    h += q.y * 3266489917
    h = 668265263 * ((h << 17) | (h >> 15))
    h = 2246822519 * (h ^ (h >> 15))
    h = 3266489917 * (h ^ (h >> 13))
    return RandomSampler(h ^ (h >> 16))


@_LibraryFunc
def _next(self):
    self.state = 1664525 * self.state + 1013904223
    return float(self.state & 0x00FFFFFF) * (1.0 / 16777216.0)


@_LibraryFunc
def _next2f(self):
    return kernels.float2(self.next(), self.next())


@_LibraryFunc
def _next3f(self):
    return kernels.float3(self.next(), self.next(), self.next())


@_LibraryFunc
def ite(condition, if_true, if_false):
    """``if_true`` where ``condition`` holds, else ``if_false``: ``select`` with the
    condition first."""
    return kernels.select(if_false, if_true, condition)


@_LibraryFunc
def make_float2x2_eye(v):
    """A float2x2 with ``v`` on its diagonal."""
    return kernels.float2x2(v, 0, 0, v)


@_LibraryFunc
def make_float3x3_eye(v):
    """A float3x3 with ``v`` on its diagonal."""
    return kernels.float3x3(v, 0, 0, 0, v, 0, 0, 0, v)


@_LibraryFunc
def make_float4x4_eye(v):
    """A float4x4 with ``v`` on its diagonal."""
    return kernels.float4x4(v, 0, 0, 0, 0, v, 0, 0, 0, 0, v, 0, 0, 0, 0, v)


RandomSampler.add_method(_start, "__init__")
RandomSampler.add_method(_next, "next")
RandomSampler.add_method(_next2f, "next2f")
RandomSampler.add_method(_next3f, "next3f")

__all__ = [
    "ArrayType",
    "RandomSampler",
    "StructType",
    "array",
    "ite",
    "make_float2x2_eye",
    "make_float3x3_eye",
    "make_float4x4_eye",
    "make_random_sampler",
    "make_random_sampler3d",
    "struct",
]
