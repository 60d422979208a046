"""luisa_nb: a traced LuisaCompute-style runtime that makes host-memory staging bugs visible.

Quick start::

    import numpy as np, luisa_nb as lnb

    dev = lnb.create_device("cpu", staging="submit")
    with lnb.trace() as t:
        ...                       # submit commands
    print(t.hazards)
"""

from __future__ import annotations

from pathlib import Path

from luisa_nb.analysis import AnalyzedTrace, Hazard, HazardKind
from luisa_nb.errors import LuisaNbError, LuisaNbWarning
from luisa_nb.kernels import (
    abs as abs,
)
from luisa_nb.kernels import (
    ceil,
    clamp,
    cos,
    dispatch_id,
    dispatch_size,
    exp,
    floor,
    log,
    sin,
    sqrt,
    tan,
)
from luisa_nb.kernels import (
    max as max,
)
from luisa_nb.kernels import (
    min as min,
)
from luisa_nb.kernels import (
    pow as pow,
)
from luisa_nb.runtime import (
    Buffer,
    BufferView,
    Device,
    Event,
    Kernel,
    Stream,
    create_device,
    default_device,
    kernel,
    set_default_device,
)
from luisa_nb.trace.trace import DEFAULT_CAPTURE_BYTES

__version__ = "0.1.0"


def trace(capture: str = "head", capture_bytes: int = DEFAULT_CAPTURE_BYTES) -> AnalyzedTrace:
    """A trace to use as ``with lnb.trace() as t:``; every command submitted and every sync
    point inside the block is recorded. ``capture``: ``"none"``, ``"head"`` (the first
    ``capture_bytes`` of each transfer) or ``"full"``."""
    return AnalyzedTrace(capture=capture, capture_bytes=capture_bytes)


def load_trace(path: str | Path) -> AnalyzedTrace:
    """A trace saved with ``trace.save(path)``."""
    return AnalyzedTrace.load(path)


# abs, min, max and pow stay out of __all__ so a star import keeps the builtins.
__all__ = [
    "AnalyzedTrace",
    "Buffer",
    "BufferView",
    "Device",
    "Event",
    "Hazard",
    "HazardKind",
    "Kernel",
    "LuisaNbError",
    "LuisaNbWarning",
    "Stream",
    "ceil",
    "clamp",
    "cos",
    "create_device",
    "default_device",
    "dispatch_id",
    "dispatch_size",
    "exp",
    "floor",
    "kernel",
    "load_trace",
    "log",
    "set_default_device",
    "sin",
    "sqrt",
    "tan",
    "trace",
]
