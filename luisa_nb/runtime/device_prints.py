"""A dispatch of a kernel that prints (see ``kernels/lang/device_print.py``): its lines go
to stdout as luisa-python sends them, and to the trace as the dispatch's printed lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from luisa_nb.kernels.lang.device_print import collecting, write_lines

if TYPE_CHECKING:
    from luisa_nb.backends.base import DeviceSpan
    from luisa_nb.runtime.commands import DispatchCommand
    from luisa_nb.runtime.staging import Transfers


def printing_dispatch(command: DispatchCommand, transfers: Transfers) -> DeviceSpan | None:
    """Run ``command`` collecting what it prints; the lines printed before a failure are
    written and recorded too."""
    arguments = command.arguments
    with collecting() as collector:
        try:
            return transfers.backend.dispatch(
                arguments.executable, command.dims, arguments.buffers, arguments.scalars
            )
        finally:
            write_lines(collector.lines, collector.dropped)
            transfers.recorder.device_printed(command.id, collector.lines, collector.dropped)
