"""Element ranges and durations as text, as they appear in finding messages."""

from __future__ import annotations

import numpy as np

from luisa_nb.recording import DeviceRange, HostRange, Trace
from luisa_nb.recording.naming import host_name


def host_slice(base: HostRange, part: HostRange) -> str:
    """``part`` as an element slice of ``base``'s array, e.g. ``z_data[0:1024]``."""
    itemsize = np.dtype(base.dtype).itemsize
    start = (part.address - base.address) // itemsize
    stop = -(-(part.end - base.address) // itemsize)
    return f"{host_name(base)}[{start}:{stop}]"


def device_slice(trace: Trace, device: DeviceRange) -> str:
    """``device`` as an element slice of its buffer, e.g. ``x[0:1024]`` (bytes if the
    buffer's dtype is unknown)."""
    info = trace.buffers.get(device.buffer)
    name = info.name if info is not None and info.name else f"buffer{device.buffer}"
    end = device.offset + device.nbytes
    if info is None:
        return f"{name} bytes [{device.offset}:{end}]"
    itemsize = np.dtype(info.dtype).itemsize
    return f"{name}[{device.offset // itemsize}:{-(-end // itemsize)}]"


def duration(nanoseconds: float) -> str:
    """``12.3 µs``, ``4.56 ms`` or ``1.23 s``."""
    if nanoseconds < 1_000_000:
        return f"{nanoseconds / 1000:.1f} µs"
    if nanoseconds < 1_000_000_000:
        return f"{nanoseconds / 1_000_000:.2f} ms"
    return f"{nanoseconds / 1_000_000_000:.2f} s"
