"""luisa-python's ``Accel`` on luisa_nb, with ``make_ray``, ``inf_ray``,
``offset_ray_origin``, ``Ray`` and ``TriangleHit``.

``accel.add(vertex_buffer, triangle_buffer, transform=..., visibility_mask=...,
user_id=...)`` adds an instance; ``update()`` adds the build to the stream's command list
(a command in the trace, reading the vertex and triangle buffers when it runs). In
kernels: ``accel.trace_closest(ray, vis_mask)``, ``accel.trace_any(ray, vis_mask)``,
``accel.instance_transform(i)``, ``accel.user_id(i)`` and ``accel.visibility_mask(i)``.
Procedural primitives, ray queries and back-face culling raise
:class:`~luisa_nb.errors.UnsupportedFeatureError`.
"""

from __future__ import annotations

from typing import Any, NoReturn

from luisa_nb import runtime
from luisa_nb.errors import UnsupportedFeatureError
from luisa_nb.kernels.lang.rays import RAY, TRIANGLE_HIT, inf_ray, make_ray
from luisa_nb.luisa import session
from luisa_nb.luisa.buffers import add_to_list
from luisa_nb.runtime import Stream

Ray = RAY
TriangleHit = TRIANGLE_HIT


def _no_procedural(call: str) -> NoReturn:
    raise UnsupportedFeatureError(
        f"Accel.{call}: procedural primitives are not supported by luisa_nb; add triangle "
        f"meshes with Accel.add(vertex_buffer, triangle_buffer)"
    )


class Accel(runtime.Accel):
    """An acceleration structure on the device of ``luisa.init()``. The usage hint and
    compaction flags are accepted and change nothing: luisa_nb builds one BVH."""

    def __init__(self, hint: Any = None, allow_compact: bool = False, allow_update: bool = False):
        device = session.device()
        device.check_open()
        super().__init__(device)

    @staticmethod
    def empty() -> Accel:
        return Accel()

    def add(
        self,
        vertex_buffer: Any,
        triangle_buffer: Any,
        transform: Any = None,
        allow_compact: bool = True,
        allow_update: bool = False,
        visibility_mask: int = -1,
        opaque: bool = True,
        user_id: int = 0,
    ) -> None:
        """Add an instance of the mesh ``vertex_buffer`` (float3) indexed by
        ``triangle_buffer`` (int, three per triangle), placed by ``transform``."""
        mesh = runtime.Mesh(self.device, vertex_buffer, triangle_buffer)
        self.emplace_back(mesh, transform, visibility_mask, opaque, user_id)

    def set(
        self,
        index: int,
        vertex_buffer: Any,
        triangle_buffer: Any,
        transform: Any = None,
        allow_compact: bool = True,
        allow_update: bool = False,
        visibility_mask: int = -1,
        opaque: bool = True,
        user_id: int = 0,
    ) -> None:
        """Replace instance ``index`` (from the next ``update()``)."""
        mesh = runtime.Mesh(self.device, vertex_buffer, triangle_buffer)
        super().set(index, mesh, transform, visibility_mask, opaque, user_id)

    def pop(self) -> None:
        """Remove the last instance."""
        self.pop_back()

    def set_transform_on_update(self, index: int, transform: Any) -> None:
        """Give instance ``index`` a new transform from the next ``update()``."""
        self.set_transform(index, transform)

    def set_visibility_on_update(self, index: int, visibility_mask: int) -> None:
        """Give instance ``index`` a new visibility mask from the next ``update()``."""
        self.set_visibility(index, visibility_mask)

    def update(self, sync: bool = False, stream: Stream | None = None) -> None:
        """Add the build of the current instances to the stream's command list."""
        add_to_list(self.build_async(), sync, stream)

    def update_instance_buffer(self, sync: bool = False, stream: Stream | None = None) -> None:
        """As ``update()``: luisa_nb rebuilds the whole structure."""
        self.update(sync, stream)

    def add_procedural(self, *args: Any, **kwargs: Any) -> NoReturn:
        _no_procedural("add_procedural")

    def set_procedural(self, *args: Any, **kwargs: Any) -> NoReturn:
        _no_procedural("set_procedural")

    def add_buffer_view(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise UnsupportedFeatureError(
            "Accel.add_buffer_view and set_buffer_view (byte ranges of buffers) are not "
            "supported by luisa_nb; "
            "pass whole buffers to Accel.add"
        )

    set_buffer_view = add_buffer_view


__all__ = ["Accel", "Ray", "TriangleHit", "inf_ray", "make_ray"]
