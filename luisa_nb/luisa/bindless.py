"""luisa-python's ``BindlessArray`` on luisa_nb: buffers and float 2D images by slot.

``emplace`` and the ``remove_*`` methods change the array's pending table, ``update()``
makes it the one later dispatches see. In kernels: ``heap.buffer_read(dtype, slot,
index)``, ``heap.buffer_size(slot)``, ``heap.texture2d_read(slot, coord)``,
``heap.texture2d_sample(slot, uv)`` and ``heap.texture2d_size(slot)``.
"""

from __future__ import annotations

from typing import Any

from luisa_nb import runtime
from luisa_nb.errors import InvalidArgumentError, UnsupportedFeatureError
from luisa_nb.luisa import session
from luisa_nb.runtime import Stream

DEFAULT_SLOTS = 65536


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
        """Put a buffer or a float image in slot ``idx``. Images are sampled bilinearly
        with repeat addressing (luisa-python's default); other samplers and byte
        offsets are not supported."""
        if filter is not None or address is not None or byte_offset:
            raise UnsupportedFeatureError(
                "BindlessArray.emplace with a filter, an address mode or a byte offset: "
                "luisa_nb samples images bilinearly with repeat addressing and binds whole "
                "buffers; leave those arguments out"
            )
        if isinstance(res, runtime.Image):
            if res.kind != "float":
                raise InvalidArgumentError(
                    f"a bindless array holds float images, not {res.kind} ones (as in luisa)"
                )
            if res.depth is not None:
                raise UnsupportedFeatureError(
                    "3D images in bindless arrays are not supported by luisa_nb"
                )
        super().emplace(idx, res)

    def remove_buffer(self, idx: int) -> None:
        self.remove(idx)

    def remove_texture2d(self, idx: int) -> None:
        self.remove(idx)

    def remove_texture3d(self, idx: int) -> None:
        self.remove(idx)

    def update(self, sync: bool = False, stream: Stream | None = None) -> None:
        """Make the emplaced resources those later dispatches see; ``sync`` then waits
        for the stream's earlier work."""
        super().update()
        if sync:
            session.stream(stream).synchronize()


bindless_array = BindlessArray.bindless_array
