"""The one recorder slot the runtime reports to.

The runtime asks :func:`active_trace` once per submission or sync point; when it
returns ``None`` nothing else is done, so an untraced program pays one branch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

import numpy as np

from luisa_nb.errors import TraceError
from luisa_nb.trace.trace import Trace, now

Namer = Callable[[Trace, Mapping[str, object]], None]

_active: Trace | None = None
_sequence = itertools.count(1)
_namers: list[Namer] = []


def register_namer(namer: Namer) -> None:
    """Add a function that names a stopped trace's objects from the variables in scope
    where the trace ended (the runtime names its buffers this way)."""
    _namers.append(namer)


def active_trace() -> Trace | None:
    return _active


def next_seq() -> int:
    """The next host issue-order number (shared by command and sync records)."""
    return next(_sequence)


def start(trace: Trace) -> None:
    global _active
    if _active is not None:
        raise TraceError(
            "a trace is already recording; stop it (leave its `with` block) before starting another"
        )
    trace.metadata.started = now()
    _active = trace


def stop(trace: Trace, namespace: Mapping[str, object] | None = None) -> None:
    """Stop recording into ``trace``; name host arrays and buffers found in ``namespace``."""
    global _active
    if _active is trace:
        _active = None
    trace.metadata.stopped = now()
    if namespace:
        name_host_ranges(trace, namespace)
        for namer in _namers:
            namer(trace, namespace)


def name_host_ranges(trace: Trace, namespace: Mapping[str, object]) -> None:
    """Give each unnamed host range the name of the variable whose array holds it: the
    whole array (``z_data``), else the flat elements of it (``z_data[512:1024]``)."""
    arrays = [
        (value.__array_interface__["data"][0], value.nbytes, value.itemsize, name)
        for name, value in namespace.items()
        if isinstance(value, np.ndarray) and not name.startswith("_") and value.nbytes
    ]
    arrays.sort(key=lambda array: array[1])
    for record in trace.commands:
        host = record.host
        if host is None or host.name is not None:
            continue
        for address, nbytes, itemsize, name in arrays:
            if address <= host.address and host.end <= address + nbytes:
                if host.address == address and host.nbytes == nbytes:
                    host.name = name
                else:
                    start = (host.address - address) // itemsize
                    host.name = f"{name}[{start}:{start + host.nbytes // itemsize}]"
                break
