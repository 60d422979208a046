"""The sampler settings of luisa-python's ``lcapi``: ``luisa.lcapi.Filter`` and
``luisa.lcapi.Address``, which ``BindlessArray.emplace`` takes. The rest of ``lcapi``
(LuisaCompute's C++ API) is not part of luisa_nb; its other names raise
:class:`~luisa_nb.errors.UnsupportedFeatureError`."""

from __future__ import annotations

import enum
from typing import NoReturn

from luisa_nb.errors import UnsupportedFeatureError


class Filter(enum.Enum):
    """How a sampler filters. Images have one mip level, so the linear filters (and
    ``ANISOTROPIC``) all filter bilinearly in 2D and trilinearly in 3D."""

    POINT = 0
    LINEAR_POINT = 1
    LINEAR_LINEAR = 2
    ANISOTROPIC = 3


class Address(enum.Enum):
    """What a sampler reads outside ``[0, 1]``: the edge texel, the image repeated, the
    image mirrored, or zero."""

    EDGE = 0
    REPEAT = 1
    MIRROR = 2
    ZERO = 3


def __getattr__(name: str) -> NoReturn:
    if name.startswith("__"):
        raise AttributeError(name)
    raise UnsupportedFeatureError(
        f"luisa.lcapi.{name} (LuisaCompute's C++ API) is not supported by luisa_nb; only "
        f"lcapi.Filter and lcapi.Address (a bindless array's samplers) are"
    )
