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
from luisa_nb.recording.trace import Trace

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
