"""luisa-python features luisa_nb does not have. Each name exists, so a program that
imports it loads; using it raises :class:`UnsupportedFeatureError` naming the feature."""

from __future__ import annotations

from typing import Any, NoReturn

from luisa_nb.errors import UnsupportedFeatureError


class Missing:
    """Stands for luisa-python's ``name``, part of ``feature``, which luisa_nb lacks."""

    __lnb_unsupported__ = True

    def __init__(self, name: str, feature: str) -> None:
        self.name = name
        self.feature = feature

    def fail(self) -> NoReturn:
        raise UnsupportedFeatureError(
            f"luisa.{self.name} ({self.feature}) is not supported by luisa_nb; the program "
            f"needs real LuisaCompute (luisa-python) for it"
        )

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        self.fail()

    def __getattr__(self, attribute: str) -> NoReturn:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        self.fail()

    def __repr__(self) -> str:
        return f"<luisa.{self.name}: {self.feature}, not supported by luisa_nb>"


_FEATURES = {
    "procedural primitives and ray queries": (
        "ProceduralPrimitive",
        "offset_ray_origin",
        "CommittedHit",
        "ProceduralHit",
        "RayQueryAllType",
        "RayQueryAnyType",
        "is_triangle",
        "is_procedural",
        "MeshFormat",
    ),
    "raster shaders": ("save_raster_shader",),
    "byte buffers": ("ByteBuffer", "ByteBufferType"),
    "16-bit types": (
        "half",
        "short",
        "ushort",
        "half2",
        "short2",
        "ushort2",
        "half3",
        "short3",
        "ushort3",
        "half4",
        "short4",
        "ushort4",
    ),
}

MISSING: dict[str, Missing] = {
    name: Missing(name, feature) for feature, names in _FEATURES.items() for name in names
}
