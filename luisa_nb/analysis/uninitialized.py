"""``UNINITIALIZED_READ``: a kernel or a download reads device bytes that no command wrote.

luisa_nb gives a new buffer zeros, as luisa-python's CPU backend does, so such a program
runs the same every time here; on a GPU the bytes are whatever the memory held before
(compute-sanitizer's initcheck reports the same reads). Only buffers the trace saw made
(``BufferInfo.created`` after the trace started) are checked: one made before may have
been written before the trace. Bytes are followed one by one through
:class:`~luisa_nb.analysis.device_writes.DeviceWrites`; a kernel's read-write range counts
as read before it is written, which is what a kernel that updates a buffer in place (an
accumulation, an atomic) does.
"""

from __future__ import annotations

from luisa_nb.analysis.device_writes import DeviceWrites, reads_of, walk
from luisa_nb.analysis.findings import Hazard, HazardKind
from luisa_nb.analysis.formatting import device_slice
from luisa_nb.recording import Access, CommandKind, DeviceRange, Trace
from luisa_nb.recording.naming import describe
from luisa_nb.recording.table import KIND_CODES

_COPY = KIND_CODES[CommandKind.COPY]
"""A copy is not a read that counts: like a ``memcpy`` under initcheck, it carries the
unwritten bytes to its target, where the read that finds them is reported."""
_SHOWN_RANGES = 3
"""Unwritten ranges of one buffer a message lists before it counts the rest."""


def fresh_buffers(trace: Trace) -> set[int]:
    """Ids of the buffers made while the trace ran: every write to them is in it."""
    started = trace.metadata.started
    return {
        info.id
        for info in trace.buffers.values()
        if info.created is not None and info.created >= started
    }


def find_uninitialized_reads(trace: Trace) -> list[Hazard]:
    """One finding per command and buffer whose read found bytes no command had written,
    in the order the commands ran."""
    fresh = fresh_buffers(trace)
    if not fresh:
        return []
    writes = DeviceWrites(
        (info.id, info.nbytes) for info in trace.buffers.values() if info.id not in fresh
    )
    complete: set[int] = set()
    """Fresh buffers every byte of which some command has written."""
    sizes = {buffer: trace.buffers[buffer].nbytes for buffer in fresh}
    hazards: list[Hazard] = []
    pending = fresh  # the fresh buffers some byte of which no command has written yet
    for row, command_id, kind, ranges in walk(trace):
        if not any(r.buffer in pending for r in ranges):
            continue  # writes to written buffers leave them written; a copy is seen below
        for device in () if kind == _COPY else reads_of(ranges):
            if device.buffer in fresh and device.buffer not in complete:
                gaps = writes.unwritten(device)
                if gaps:
                    hazards.append(_finding(trace, row, device, gaps))
        writes.apply(command_id, kind, ranges)
        for device in ranges:
            buffer = device.buffer
            if device.access.writes and buffer in fresh:
                whole = DeviceRange(buffer, 0, sizes[buffer], Access.READ)
                if writes.unwritten(whole):
                    complete.discard(buffer)
                else:
                    complete.add(buffer)
        pending = fresh - complete
    return hazards


def _finding(trace: Trace, row: int, device: DeviceRange, gaps: list[tuple[int, int]]) -> Hazard:
    command = trace.table.record(row)
    first = DeviceRange(device.buffer, gaps[0][0], gaps[0][1] - gaps[0][0], device.access)
    shown = [
        device_slice(trace, DeviceRange(device.buffer, start, end - start, device.access))
        for start, end in gaps[:_SHOWN_RANGES]
    ]
    if len(gaps) > _SHOWN_RANGES:
        shown.append(f"{len(gaps) - _SHOWN_RANGES} more ranges")
    unwritten = sum(end - start for start, end in gaps)
    verb = "updates" if device.access is Access.READ_WRITE else "reads"
    message = (
        f"{describe(trace, command)} {verb} {', '.join(shown)} ({unwritten} bytes), which no "
        "command wrote since the buffer was made: luisa_nb and luisa-python's CPU backend "
        "give zeros there, a GPU gives whatever the memory held"
    )
    info = trace.buffers.get(device.buffer)
    name = info.name if info is not None and info.name else f"buffer{device.buffer}"
    fix = (
        f"write {name} before #{command.id} reads it: upload it (copy_from), fill it "
        "(fill(0) for zeros), or run a kernel that writes it first"
    )
    times = {"started": command.started} if command.started is not None else {}
    return Hazard(HazardKind.UNINITIALIZED_READ, (command.id,), None, first, times, message, fix)
