"""Bindless arrays: a table of buffers and images by slot that a kernel indexes at run
time, as LuisaCompute's ``BindlessArray``.

``emplace`` and ``remove`` change a pending table; ``update`` makes it the table that
later dispatches see (at the time the dispatch is made, so in program order). A dispatch
with a bindless array passes every resource of its table to the kernel, and its trace
lists each one as read: a kernel may read any of them, so the hazard analysis treats the
dispatch as reading all. An image's slot also holds the :class:`Sampler` that kernels'
``texture2d_sample``/``texture3d_sample`` use on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels.type_system import SAMPLER_ADDRESSES, SAMPLER_FILTERS, Sampler
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
        self._pending: dict[int, tuple[BufferView, Sampler | None]] = {}
        self._table: dict[int, tuple[BufferView, Sampler | None]] = {}

    def _check_slot(self, slot: int) -> int:
        if not isinstance(slot, int) or isinstance(slot, bool) or not 0 <= slot < self.slots:
            raise InvalidArgumentError(
                f"bindless array slot must be an int in 0 <= slot < {self.slots}, got {slot!r}"
            )
        return slot

    def emplace(self, slot: int, resource: BufferView, sampler: Sampler | None = None) -> None:
        """Put ``resource`` (a buffer or image of this array's device) in ``slot``, from
        the next :meth:`update` on. An image is sampled with ``sampler`` (default:
        linear filtering, repeat addressing); a buffer takes none."""
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
        self._pending[self._check_slot(slot)] = (resource, sampler)

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
        return {slot: view for slot, (view, _) in self._table.items()}

    def samplers(self) -> dict[int, Sampler]:
        """The samplers of the images dispatches see now, by slot."""
        return {slot: sampler for slot, (_, sampler) in self._table.items() if sampler}

    def views(self) -> list[BufferView]:
        """The resources dispatches see now, in slot order."""
        return [self._table[slot][0] for slot in sorted(self._table)]

    def __repr__(self) -> str:
        held = ", ".join(
            f"{slot}: {view._name()}" for slot, (view, _) in sorted(self._table.items())
        )
        return f"<BindlessArray {self.slots} slots {{{held}}} on {self.device.name}>"
