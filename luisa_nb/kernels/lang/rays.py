"""Ray tracing in the kernel language: the ``Ray`` and ``TriangleHit`` structs as
luisa-python lays them out, ``make_ray``/``inf_ray``, and the BVH traversal that
``accel.trace_closest(ray, mask)`` and ``accel.trace_any(ray, mask)`` call.

The traversal is written in the kernel language itself, so that one source compiles to
C and runs in Python mode. Its functions are plain Python here; ``kernels/rays.py`` makes
them callables (the typing stage finds them in :data:`ACCEL_CALLABLES`) and adds the
structs' methods, so this module imports nothing of the compiler.

An acceleration structure, as kernels see it, is three buffers (see docs/kernels.md,
"Ray tracing"): its BVH nodes (:data:`BVH_NODE`), its triangles in world space in the
order the leaves list them (:data:`BVH_TRIANGLE`), and one record per instance
(:data:`ACCEL_INSTANCE`). A node with ``count >= 0`` is a leaf holding triangles
``child .. child + count - 1``; an inner node has ``count = -1 - axis`` (the axis it was
split on) and its two children at ``child`` and ``child + 1``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from luisa_nb.kernels.lang.aggregates import ArrayType, StructType
from luisa_nb.kernels.lang.math_builtins import abs, cross, dot, max, min, select
from luisa_nb.kernels.lang.vectors import float2, float3, float4
from luisa_nb.kernels.type_system import MATRIX_TYPES, ScalarType

FLOAT3_ARRAY = ArrayType(3, ScalarType.FLOAT32)
FLOAT4X4 = next(kind for kind in MATRIX_TYPES if kind.size == 4)

RAY = StructType(
    16, _origin=FLOAT3_ARRAY, t_min=ScalarType.FLOAT32, _dir=FLOAT3_ARRAY, t_max=ScalarType.FLOAT32
)
"""luisa-python's ``Ray``: origin, the start distance, direction and the end distance
(32 bytes, aligned to 16)."""

TRIANGLE_HIT = StructType(
    inst=ScalarType.UINT32, prim=ScalarType.UINT32, bary=float2, ray_t=ScalarType.FLOAT32
)
"""luisa-python's ``TriangleHit``: the instance and triangle hit (``inst`` is
``0xFFFFFFFF`` on a miss), the barycentrics of vertices 1 and 2, and the distance."""

BVH_NODE = StructType(
    lower=FLOAT3_ARRAY, child=ScalarType.INT32, upper=FLOAT3_ARRAY, count=ScalarType.INT32
)
BVH_TRIANGLE = StructType(
    a=FLOAT3_ARRAY,
    instance=ScalarType.UINT32,
    b=FLOAT3_ARRAY,
    primitive=ScalarType.UINT32,
    c=FLOAT3_ARRAY,
    mask=ScalarType.UINT32,
)
ACCEL_INSTANCE = StructType(transform=FLOAT4X4, user_id=ScalarType.UINT32, mask=ScalarType.UINT32)

TRAVERSAL_STACK = ArrayType(64, ScalarType.INT32)
"""Nodes waiting to be visited; a BVH is built at most 60 levels deep."""
MAX_BVH_DEPTH = 60
MISS = np.uint32(0xFFFFFFFF)
TINY_DIRECTION = 1e-30  # direction components smaller than this count as this
MISSED_BOX = 3.0e38  # the entry distance of a box a ray misses
EXIT_WIDENING = 1.0000004  # a box's exit distance is widened by this factor (a few ulps)


class RayCallable:
    """A function of this module that kernels call (and the host may call). Its
    definition is made when a kernel first calls it, by the maker that ``kernels/rays.py``
    sets (this stage cannot import the compiler); a program that traces no rays never
    parses these functions."""

    make_definition: ClassVar[Callable[[Any], Any] | None] = None

    def __init__(self, function: Any) -> None:
        self.function = function
        self._definition: Any = None
        self.__name__ = function.__name__
        self.__doc__ = function.__doc__

    @property
    def definition(self) -> Any:
        if self._definition is None:
            self._definition = RayCallable.make_definition(self.function)
        return self._definition

    @property
    def __lnb_kernel_definition__(self) -> Any:
        return self.definition

    def __call__(self, *arguments: Any) -> Any:
        return self.function(*arguments)

    def __repr__(self) -> str:
        return f"<ray tracing callable {self.__name__}>"


def ray_callable(function: Any) -> RayCallable:
    """``function`` as a :class:`RayCallable`."""
    return RayCallable(function)


ACCEL_METHODS = {
    "trace_closest": "trace_closest(ray, vis_mask)",
    "trace_any": "trace_any(ray, vis_mask)",
    "instance_transform": "instance_transform(index)",
    "instance_user_id": "instance_user_id(index)",
    "instance_visibility_mask": "instance_visibility_mask(index)",
}
"""What kernels call on an acceleration structure, with its usage."""
ACCEL_METHOD_ALIASES = {
    "user_id": "instance_user_id",
    "visibility_mask": "instance_visibility_mask",
}
"""luisa-python's other names for the same methods."""


# -- struct methods ----------------------------------------------------------------------


@ray_callable
def get_origin(self):
    return float3(self._origin[0], self._origin[1], self._origin[2])


@ray_callable
def get_dir(self):
    return float3(self._dir[0], self._dir[1], self._dir[2])


@ray_callable
def set_origin(self, value):
    self._origin[0] = value.x
    self._origin[1] = value.y
    self._origin[2] = value.z


@ray_callable
def set_dir(self, value):
    self._dir[0] = value.x
    self._dir[1] = value.y
    self._dir[2] = value.z


@ray_callable
def miss(self):
    return self.inst == MISS


@ray_callable
def hitted(self):
    return self.inst != MISS


@ray_callable
def interpolate(self, a, b, c):
    return (1.0 - self.bary.x - self.bary.y) * a + self.bary.x * b + self.bary.y * c


@ray_callable
def make_ray(origin, direction, t_min, t_max):
    """A ray from ``origin`` along ``direction`` over distances ``t_min .. t_max``."""
    ray = RAY()
    ray.set_origin(float3(origin))
    ray.set_dir(float3(direction))
    ray.t_min = t_min
    ray.t_max = t_max
    return ray


@ray_callable
def inf_ray(origin, direction):
    """A ray from ``origin`` along ``direction`` over distances 0 .. 1e38."""
    return make_ray(origin, direction, 0.0, 1e38)


# -- traversal ---------------------------------------------------------------------------


@ray_callable
def _inverse_direction(direction):
    """1 / direction, with components nearer zero than TINY_DIRECTION moved out to it
    (keeping their sign), so that slab distances stay finite and never NaN."""
    away = select(float3(-TINY_DIRECTION), float3(TINY_DIRECTION), direction >= 0.0)
    return 1.0 / select(direction, away, abs(direction) < TINY_DIRECTION)


@ray_callable
def _enters_box(node, origin, inverse, t_min, t_max):
    """Whether the ray's span ``t_min .. t_max`` meets the node's box. The exit distance
    is widened by a few ulps so that rounding never culls a box a ray grazes."""
    lower = float3(node.lower[0], node.lower[1], node.lower[2])
    upper = float3(node.upper[0], node.upper[1], node.upper[2])
    near = (lower - origin) * inverse
    far = (upper - origin) * inverse
    entry = min(near, far)
    leave = max(near, far)
    enter = max(max(entry.x, entry.y), max(entry.z, t_min))
    exit = min(min(leave.x, leave.y), min(leave.z, t_max)) * EXIT_WIDENING
    return enter <= exit


@ray_callable
def _box_entry(node, origin, inverse, t_min, t_max):
    """Where the ray's span ``t_min .. t_max`` enters the node's box, or MISSED_BOX
    where it misses it (see :func:`_enters_box`)."""
    lower = float3(node.lower[0], node.lower[1], node.lower[2])
    upper = float3(node.upper[0], node.upper[1], node.upper[2])
    near = (lower - origin) * inverse
    far = (upper - origin) * inverse
    entry = min(near, far)
    leave = max(near, far)
    enter = max(max(entry.x, entry.y), max(entry.z, t_min))
    exit = min(min(leave.x, leave.y), min(leave.z, t_max)) * EXIT_WIDENING
    result = MISSED_BOX
    if enter <= exit:
        result = enter
    return result


@ray_callable
def _intersect(triangle, origin, direction):
    """Moller-Trumbore: ``float4(t, u, v, 1)`` where the ray's line meets the triangle
    (edges and vertices included), else ``w == 0``."""
    a = float3(triangle.a[0], triangle.a[1], triangle.a[2])
    b = float3(triangle.b[0], triangle.b[1], triangle.b[2])
    c = float3(triangle.c[0], triangle.c[1], triangle.c[2])
    edge1 = b - a
    edge2 = c - a
    p = cross(direction, edge2)
    determinant = dot(edge1, p)
    result = float3(0.0)
    found = 0.0
    if determinant != 0.0:
        inverse = 1.0 / determinant
        s = origin - a
        u = dot(s, p) * inverse
        q = cross(s, edge1)
        v = dot(direction, q) * inverse
        if u >= 0.0 and v >= 0.0 and u + v <= 1.0:
            result = float3(dot(edge2, q) * inverse, u, v)
            found = 1.0
    return float4(result, found)


@ray_callable
def _traverse(nodes, triangles, ray, mask, first_hit):
    """The nearest hit of ``ray`` on triangles whose instance's mask shares a bit with
    ``mask``, in ``ray.t_min .. ray.t_max``; with ``first_hit``, the first one found.
    At an inner node both children's boxes are tested: the nearer entered one is
    visited next, the other waits on the stack, and a missed one is never read again."""
    origin = ray.get_origin()
    direction = ray.get_dir()
    inverse = _inverse_direction(direction)
    hit = TRIANGLE_HIT()
    hit.inst = MISS
    hit.prim = MISS
    best = ray.t_max
    stack = TRAVERSAL_STACK()
    top = 0
    node = nodes.read(0)
    visiting = _enters_box(node, origin, inverse, ray.t_min, best)
    while visiting:
        if node.count < 0:
            left = nodes.read(node.child)
            right = nodes.read(node.child + 1)
            enter_left = _box_entry(left, origin, inverse, ray.t_min, best)
            enter_right = _box_entry(right, origin, inverse, ray.t_min, best)
            if enter_left < MISSED_BOX and enter_right < MISSED_BOX:
                if enter_left <= enter_right:
                    stack[top] = node.child + 1
                    node = left
                else:
                    stack[top] = node.child
                    node = right
                top += 1
                continue
            if enter_left < MISSED_BOX:
                node = left
                continue
            if enter_right < MISSED_BOX:
                node = right
                continue
        else:
            for index in range(node.child, node.child + node.count):
                triangle = triangles.read(index)
                if (triangle.mask & mask) != 0:
                    found = _intersect(triangle, origin, direction)
                    if found.w != 0.0 and found.x >= ray.t_min and found.x <= best:
                        best = found.x
                        hit.inst = triangle.instance
                        hit.prim = triangle.primitive
                        hit.bary = found.yz
                        hit.ray_t = found.x
                        if first_hit:
                            break
        visiting = False
        if not (first_hit and hit.inst != MISS):
            while top > 0 and not visiting:
                top -= 1
                node = nodes.read(stack[top])
                visiting = _enters_box(node, origin, inverse, ray.t_min, best)
    return hit


@ray_callable
def trace_closest(nodes, triangles, instances, ray, mask):
    """The nearest hit of ``ray`` on triangles whose instance's mask shares a bit with
    ``mask``, in ``ray.t_min .. ray.t_max``."""
    return _traverse(nodes, triangles, ray, mask, False)


@ray_callable
def trace_any(nodes, triangles, instances, ray, mask):
    """Whether ``ray`` hits any triangle whose instance's mask shares a bit with
    ``mask`` in ``ray.t_min .. ray.t_max``; it stops at the first hit found."""
    return _traverse(nodes, triangles, ray, mask, True).inst != MISS


@ray_callable
def instance_transform(nodes, triangles, instances, index):
    """The object-to-world transform of instance ``index``."""
    return instances.read(index).transform


@ray_callable
def instance_user_id(nodes, triangles, instances, index):
    """The user id given to instance ``index``."""
    return instances.read(index).user_id


@ray_callable
def instance_visibility_mask(nodes, triangles, instances, index):
    """The visibility mask of instance ``index``."""
    return instances.read(index).mask


for _method in (get_origin, get_dir, set_origin, set_dir):
    RAY.add_method(_method, _method.__name__)
for _method in (miss, hitted, interpolate):
    TRIANGLE_HIT.add_method(_method, _method.__name__)
ACCEL_CALLABLES = {
    "trace_closest": trace_closest,
    "trace_any": trace_any,
    "instance_transform": instance_transform,
    "instance_user_id": instance_user_id,
    "instance_visibility_mask": instance_visibility_mask,
}
"""Method name -> the callable of each method kernels call on an acceleration structure;
each takes the structure's three buffers, then the method's arguments."""
