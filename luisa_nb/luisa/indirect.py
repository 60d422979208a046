"""luisa-python's ``IndirectDispatchBuffer`` on luisa_nb: kernels record dispatches in it
(``buf.set_dispatch_count(n)``, ``buf.set_kernel(offset, block_size, size,
kernel_id)``), and ``f(args, dispatch_size=buf)`` adds a dispatch that runs them to the
command list (see ``luisa_nb.runtime.indirect``)."""

from __future__ import annotations

from luisa_nb import runtime
from luisa_nb.luisa import session
from luisa_nb.runtime.indirect import ENTRY_DTYPE


class IndirectDispatchBuffer(runtime.IndirectDispatchBuffer):
    """Room for ``size`` dispatches on the device of ``luisa.init()``; ``size``,
    ``bytesize`` and ``stride`` (of an entry) as luisa-python has them."""

    def __init__(self, size: int) -> None:
        device = session.device()
        device.check_open()
        super().__init__(device, size)

    @property
    def size(self) -> int:
        return self.capacity

    @property
    def bytesize(self) -> int:
        return self.memory.nbytes

    @property
    def stride(self) -> int:
        return ENTRY_DTYPE.itemsize
