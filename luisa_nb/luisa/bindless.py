"""luisa-python's ``BindlessArray`` on luisa_nb: buffers and float 2D and 3D images by
slot, each image with a sampler (``lcapi.Filter``, ``lcapi.Address``). As in
LuisaCompute, a slot holds one buffer, one 2D image and one 3D image side by side.

``emplace`` (which replaces the slot's resource of the same kind) and the ``remove_*``
methods (each of which takes out only its kind) change the array's pending table,
``update()`` makes it the one later dispatches see. In kernels: ``heap.buffer_read(dtype, slot,
index)``, ``heap.buffer_size(slot)`` and the ``texture2d_*``/``texture3d_*`` methods
(``_read``, ``_sample``, ``_sample_mip``, ``_sample_grad``, ``_sample_grad_level``,
``_size``, ``_size_mip``; see ``kernels/typing/bindless.py``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from luisa_nb import runtime
from luisa_nb.errors import InvalidArgumentError, UnsupportedFeatureError
from luisa_nb.kernels.type_system import Sampler
from luisa_nb.luisa import session
from luisa_nb.luisa.lcapi import Address, Filter
from luisa_nb.runtime import Stream

DEFAULT_SLOTS = 65536
_FILTERS = {
    Filter.POINT.name: "point",
    Filter.LINEAR_POINT.name: "linear",
    Filter.LINEAR_LINEAR.name: "linear",
    Filter.ANISOTROPIC.name: "linear",
}


def _setting(value: Any, kind: type[enum.Enum], default: enum.Enum) -> str:
    """The name of a ``Filter`` or ``Address`` (luisa_nb's or real ``lcapi``'s)."""
    name = default.name if value is None else getattr(value, "name", None)
    if name not in kind.__members__:
        names = ", ".join(f"lcapi.{kind.__name__}.{member}" for member in kind.__members__)
        raise InvalidArgumentError(f"a sampler's {kind.__name__.lower()} is {names}; got {value!r}")
    return name


def sampler_of(filter: Any, address: Any) -> Sampler:
    """The sampler of ``emplace(..., filter, address)``; None means luisa-python's
    default, ``LINEAR_POINT`` and ``REPEAT``."""
    chosen = _FILTERS[_setting(filter, Filter, Filter.LINEAR_POINT)]
    return Sampler(chosen, _setting(address, Address, Address.REPEAT).lower())


class BindlessArray(runtime.BindlessArray):
    """``n_slots`` slots of buffers and float images, on the device of ``luisa.init()``."""

    def __init__(self, n_slots: int = DEFAULT_SLOTS) -> None:
        device = session.device()
        device.check_open()
        super().__init__(device, n_slots)

    @staticmethod
    def empty(n_slots: int = DEFAULT_SLOTS) -> BindlessArray:
        return BindlessArray(n_slots)

    @staticmethod
    def bindless_array(resources: dict[int, Any]) -> BindlessArray:
        """An updated array holding ``resources`` (slot -> buffer or image)."""
        if not isinstance(resources, Mapping):
            raise InvalidArgumentError(
                f"bindless_array takes a dict of slot -> buffer or image, got "
                f"{type(resources).__name__} {resources!r:.40}; for an empty array of n slots "
                f"use luisa.BindlessArray.empty(n)"
            )
        created = BindlessArray()
        for slot, resource in resources.items():
            created.emplace(slot, resource)
        created.update()
        return created

    def emplace(
        self,
        idx: int,
        res: Any,
        filter: Any = None,
        address: Any = None,
        byte_offset: int = 0,
    ) -> None:
        """Put a buffer or a float 2D or 3D image in slot ``idx``, beside the slot's
        resources of the other kinds. An image is sampled
        with ``filter`` and ``address`` (``lcapi.Filter``, ``lcapi.Address``; default
        ``LINEAR_POINT`` and ``REPEAT``, as in luisa-python). Byte offsets are not
        supported."""
        if byte_offset:
            raise UnsupportedFeatureError(
                "BindlessArray.emplace with a byte offset: luisa_nb binds whole buffers; "
                "leave byte_offset out"
            )
        if not isinstance(res, runtime.Image):
            if filter is not None or address is not None:
                raise InvalidArgumentError(
                    f"BindlessArray.emplace: filter and address are for images, not for "
                    f"{type(res).__name__}; leave them out"
                )
            super().emplace(idx, res)
            return
        if res.kind != "float":
            raise InvalidArgumentError(
                f"a bindless array holds float images, not {res.kind} ones (as in luisa)"
            )
        super().emplace(idx, res, sampler_of(filter, address))

    def remove_buffer(self, idx: int) -> None:
        """Take the buffer out of slot ``idx`` (its images stay), from the next update."""
        self.remove(idx, "buffer")

    def remove_texture2d(self, idx: int) -> None:
        """Take the 2D image out of slot ``idx`` (its other resources stay)."""
        self.remove(idx, "texture2d")

    def remove_texture3d(self, idx: int) -> None:
        """Take the 3D image out of slot ``idx`` (its other resources stay)."""
        self.remove(idx, "texture3d")

    def update(self, sync: bool = False, stream: Stream | None = None) -> None:
        """Make the emplaced resources those later dispatches see; ``sync`` then waits
        for the stream's earlier work."""
        super().update()
        if sync:
            session.stream(stream).synchronize()


bindless_array = BindlessArray.bindless_array
