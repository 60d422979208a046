"""Bindless arrays: a table of buffers and images by slot that a kernel indexes at run
time, as LuisaCompute's ``BindlessArray``.

Each slot holds up to three resources, one of each kind (:data:`RESOURCE_KINDS`): a
buffer, a 2D image and a 3D image, as in LuisaCompute. Emplacing replaces the resource of
its kind only; ``buffer_read`` in a kernel reads the slot's buffer and
``texture2d_sample`` samples its 2D image. ``emplace`` and ``remove`` change a pending
table; ``update`` makes it the table that later dispatches see (at the time the dispatch
is made, so in program order). A dispatch with a bindless array passes every resource of
its table to the kernel, and its trace lists each one as read: a kernel may read any of
them, so the hazard analysis treats the dispatch as reading all. An image's entry also
holds the :class:`Sampler` that kernels' ``texture2d_sample``/``texture3d_sample`` use on
it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels.type_system import (
    RESOURCE_KINDS,
    SAMPLER_ADDRESSES,
    SAMPLER_FILTERS,
    Sampler,
)
from luisa_nb.runtime.buffer import BufferView

if TYPE_CHECKING:
    from luisa_nb.runtime.device import Device


Entry = tuple[int, str]  # (slot, resource kind)


def resource_kind(resource: BufferView) -> str:
    """The kind of entry ``resource`` takes in a slot: ``"buffer"``, ``"texture2d"`` or
    ``"texture3d"``."""
    if not getattr(resource, "__lnb_image__", False):
        return "buffer"
    return "texture2d" if resource.depth is None else "texture3d"


class BindlessArray:
    """``slots`` slots of ``device``, each holding up to one buffer, one 2D image and one
    3D image."""

    __lnb_bindless__ = True

    def __init__(self, device: Device, slots: int) -> None:
        if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
            raise InvalidArgumentError(f"a bindless array has 1 or more slots, got {slots!r}")
        self.device = device
        self.slots = slots
        self.version = 0  # counts updates that changed the table
        self._pending: dict[Entry, tuple[BufferView, Sampler | None]] = {}
        self._table: dict[Entry, tuple[BufferView, Sampler | None]] = {}

    def _check_slot(self, slot: int) -> int:
        if not isinstance(slot, int) or isinstance(slot, bool) or not 0 <= slot < self.slots:
            raise InvalidArgumentError(
                f"bindless array slot must be an int in 0 <= slot < {self.slots}, got {slot!r}"
            )
        return slot

    def emplace(self, slot: int, resource: BufferView, sampler: Sampler | None = None) -> None:
        """Put ``resource`` (a buffer or image of this array's device) in ``slot``, from
        the next :meth:`update` on, replacing the slot's resource of the same kind only.
        An image is sampled with ``sampler`` (default: linear filtering, repeat
        addressing); a buffer takes none."""
        if not isinstance(resource, BufferView):
            raise InvalidArgumentError(
                f"a bindless array holds buffers and images, not {type(resource).__name__}"
            )
        if resource.device is not self.device:
            raise InvalidArgumentError(
                f"{resource._name()} lives on {resource.device.name!r}, the bindless array on "
                f"{self.device.name!r}"
            )
        resource.buffer.check_alive()
        if getattr(resource, "__lnb_image__", False):
            sampler = sampler or Sampler()
            if sampler.filter not in SAMPLER_FILTERS or sampler.address not in SAMPLER_ADDRESSES:
                raise InvalidArgumentError(
                    f"a sampler filters {' or '.join(SAMPLER_FILTERS)} and addresses "
                    f"{', '.join(SAMPLER_ADDRESSES)}; got {sampler.filter!r}, {sampler.address!r}"
                )
        elif sampler is not None:
            raise InvalidArgumentError(
                f"{resource._name()} is a buffer: only images take a sampler; pass none"
            )
        self._pending[(self._check_slot(slot), resource_kind(resource))] = (resource, sampler)

    def remove(self, slot: int, kind: str | None = None) -> None:
        """From the next :meth:`update` on, take the resource of ``kind`` (``"buffer"``,
        ``"texture2d"`` or ``"texture3d"``) out of ``slot``; with no kind, take all of
        the slot's resources out. Removing what is not there does nothing."""
        self._check_slot(slot)
        if kind is not None and kind not in RESOURCE_KINDS:
            raise InvalidArgumentError(
                f"a bindless slot holds resources of kind {', '.join(map(repr, RESOURCE_KINDS))}"
                f"; got {kind!r}"
            )
        for each in RESOURCE_KINDS if kind is None else (kind,):
            self._pending.pop((slot, each), None)

    def update(self) -> None:
        """Make the emplaced resources those that later dispatches see."""
        if self._pending != self._table:
            self._table = dict(self._pending)
            self.version += 1

    def resources(self) -> dict[Entry, BufferView]:
        """The resources dispatches see now, by ``(slot, kind)`` in sorted order."""
        return {entry: self._table[entry][0] for entry in sorted(self._table)}

    def samplers(self) -> dict[Entry, Sampler]:
        """The samplers of the images dispatches see now, by ``(slot, kind)``."""
        return {entry: sampler for entry, (_, sampler) in self._table.items() if sampler}

    def views(self) -> list[BufferView]:
        """The resources dispatches see now, in ``(slot, kind)`` order (as
        :meth:`resources` lists them)."""
        return [self._table[entry][0] for entry in sorted(self._table)]

    def __repr__(self) -> str:
        held = ", ".join(
            f"{slot} {kind}: {view._name()}"
            for (slot, kind), (view, _) in sorted(self._table.items())
        )
        return f"<BindlessArray {self.slots} slots {{{held}}} on {self.device.name}>"
