"""Bindless arrays: a table of buffers and images by slot that a kernel indexes at run
time, as LuisaCompute's ``BindlessArray``.

``emplace`` and ``remove`` change a pending table; ``update`` makes it the table that
later dispatches see (at the time the dispatch is made, so in program order). A dispatch
with a bindless array passes every resource of its table to the kernel, and its trace
lists each one as read: a kernel may read any of them, so the hazard analysis treats the
dispatch as reading all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.runtime.buffer import BufferView

if TYPE_CHECKING:
    from luisa_nb.runtime.device import Device


class BindlessArray:
    """``slots`` slots, each empty or holding one buffer or image of ``device``."""

    __lnb_bindless__ = True

    def __init__(self, device: Device, slots: int) -> None:
        if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
            raise InvalidArgumentError(f"a bindless array has 1 or more slots, got {slots!r}")
        self.device = device
        self.slots = slots
        self.version = 0  # counts updates that changed the table
        self._pending: dict[int, BufferView] = {}
        self._table: dict[int, BufferView] = {}

    def _check_slot(self, slot: int) -> int:
        if not isinstance(slot, int) or isinstance(slot, bool) or not 0 <= slot < self.slots:
            raise InvalidArgumentError(
                f"bindless array slot must be an int in 0 <= slot < {self.slots}, got {slot!r}"
            )
        return slot

    def emplace(self, slot: int, resource: BufferView) -> None:
        """Put ``resource`` (a buffer or image of this array's device) in ``slot``, from
        the next :meth:`update` on."""
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
        self._pending[self._check_slot(slot)] = resource

    def remove(self, slot: int) -> None:
        """Empty ``slot`` from the next :meth:`update` on (an empty slot stays empty)."""
        self._pending.pop(self._check_slot(slot), None)

    def update(self) -> None:
        """Make the emplaced resources those that later dispatches see."""
        if self._pending != self._table:
            self._table = dict(self._pending)
            self.version += 1

    def resources(self) -> dict[int, BufferView]:
        """The resources dispatches see now, by slot."""
        return dict(self._table)

    def views(self) -> list[BufferView]:
        """The resources dispatches see now, in slot order."""
        return [self._table[slot] for slot in sorted(self._table)]

    def __repr__(self) -> str:
        held = ", ".join(f"{slot}: {view._name()}" for slot, view in sorted(self._table.items()))
        return f"<BindlessArray {self.slots} slots {{{held}}} on {self.device.name}>"
