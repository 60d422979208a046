"""Readable names of records, streams, buffers and host ranges, shared by the Chrome
export and the analysis messages: ``#3 download z -> z_data``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from luisa_nb.recording.records import (
    CommandKind,
    DeviceRange,
    HostRange,
    Record,
    SyncKind,
    SyncRecord,
)

if TYPE_CHECKING:
    from luisa_nb.recording.trace import Trace


def stream_name(trace: Trace, stream: int | None) -> str:
    info = trace.streams.get(stream) if stream is not None else None
    return info.name if info is not None and info.name else f"stream {stream}"


def host_name(host: HostRange) -> str:
    return host.name or f"host@0x{host.address:x}"


def device_name(trace: Trace, device: DeviceRange) -> str:
    """The buffer's name, with an element slice when ``device`` is not the whole buffer."""
    info = trace.buffers.get(device.buffer)
    name = info.name if info is not None and info.name else f"buffer{device.buffer}"
    if info is None or (device.offset == 0 and device.nbytes == info.nbytes):
        return name
    itemsize = np.dtype(info.dtype).itemsize
    start = device.offset // itemsize
    stop = -(-(device.offset + device.nbytes) // itemsize)
    return f"{name}[{start}:{stop}]"


def describe(trace: Trace, record: Record) -> str:
    """A one-line description such as ``#3 download z -> z_data``."""
    if isinstance(record, SyncRecord):
        return describe_sync(trace, record)
    reads = [device_name(trace, r) for r in record.device_ranges if not r.access.writes]
    writes = [device_name(trace, r) for r in record.device_ranges if r.access.writes]
    host = host_name(record.host) if record.host is not None else "host"
    kind = record.kind
    if kind is CommandKind.UPLOAD:
        text = f"upload {_names(writes)} <- {host}"
    elif kind is CommandKind.DOWNLOAD:
        text = f"download {_names(reads)} -> {host}"
    elif kind is CommandKind.COPY:
        text = f"copy {_names(reads)} -> {_names(writes)}"
    elif kind is CommandKind.FILL:
        text = f"fill {_names(writes)}"
    else:
        arguments = dict.fromkeys(device_name(trace, r) for r in record.device_ranges)
        kernel = record.label or "kernel"
        text = f"dispatch {kernel}({', '.join(arguments)})"
    return f"#{record.id} {text}"


def _names(names: list[str]) -> str:
    return ", ".join(dict.fromkeys(names)) or "?"


def describe_sync(trace: Trace, record: SyncRecord) -> str:
    stream = stream_name(trace, record.stream)
    if record.kind is SyncKind.SYNCHRONIZE:
        return f"synchronize {stream}" if record.stream is not None else "synchronize device"
    if record.kind is SyncKind.SIGNAL:
        return f"signal event {record.event} on {stream}"
    if record.kind is SyncKind.WAIT:
        return f"wait event {record.event} on {stream}"
    if record.kind is SyncKind.EVENT_SYNCHRONIZE:
        return f"synchronize event {record.event}"
    return f"callback on {stream}"
