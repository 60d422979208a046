"""Trace layer: records, captured bytes, save/load and Chrome export. Never imports the
runtime, so a saved trace opens with no device."""

from luisa_nb.recording.clock import now
from luisa_nb.recording.records import (
    Access,
    BufferInfo,
    Capture,
    CommandKind,
    CommandRecord,
    CompileRecord,
    DeviceRange,
    HostRange,
    PendingCommand,
    RangeRecord,
    ReleaseRecord,
    Status,
    StreamInfo,
    SyncKind,
    SyncRecord,
)


def __getattr__(attribute: str) -> object:
    """``Trace``, loaded on first use: the runtime records through the recorder alone,
    so a program that opens no trace does not load the trace's tables."""
    if attribute != "Trace":
        raise AttributeError(f"module 'luisa_nb.recording' has no attribute {attribute!r}")
    from luisa_nb.recording.trace import Trace

    return Trace


__all__ = [
    "Access",
    "BufferInfo",
    "Capture",
    "CommandKind",
    "CommandRecord",
    "CompileRecord",
    "DeviceRange",
    "HostRange",
    "PendingCommand",
    "RangeRecord",
    "ReleaseRecord",
    "Status",
    "StreamInfo",
    "SyncKind",
    "SyncRecord",
    "Trace",
    "now",
]
