"""Trace layer: records, captured bytes, save/load and Chrome export. Never imports the
runtime, so a saved trace opens with no device."""

from luisa_nb.trace.clock import now
from luisa_nb.trace.records import (
    Access,
    BufferInfo,
    Capture,
    CommandKind,
    CommandRecord,
    DeviceRange,
    HostRange,
    Status,
    StreamInfo,
    SyncKind,
    SyncRecord,
)
from luisa_nb.trace.trace import Trace

__all__ = [
    "Access",
    "BufferInfo",
    "Capture",
    "CommandKind",
    "CommandRecord",
    "DeviceRange",
    "HostRange",
    "Status",
    "StreamInfo",
    "SyncKind",
    "SyncRecord",
    "Trace",
    "now",
]
