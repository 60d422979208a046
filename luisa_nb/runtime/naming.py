"""Names of host arrays and buffers in traces: :func:`name` gives one, and buffers held by
the variables of the code that records a trace are named after them when it stops."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.recording import recorder
from luisa_nb.recording.naming import give_name
from luisa_nb.runtime.buffer import Buffer
from luisa_nb.runtime.indirect import IndirectDispatchBuffer

if TYPE_CHECKING:
    from luisa_nb.recording.trace import Trace

Named = TypeVar("Named", np.ndarray, Buffer)


def name(obj: Named, label: str) -> Named:
    """Name a host array or a buffer in traces, wherever it is held; returns ``obj``.

    Without a name, an array is named after the variable that holds it in the code that
    makes a command with it (``z_data``, or ``z_data[512:1024]`` for a view of it)."""
    if not isinstance(label, str) or not label:
        raise InvalidArgumentError(f"a name is a non-empty str, got {label!r}")
    if isinstance(obj, Buffer):
        obj.name = label
    elif isinstance(obj, np.ndarray):
        give_name(obj, label)
    else:
        raise InvalidArgumentError(
            f"lnb.name names numpy arrays and buffers, not {type(obj).__name__}"
        )
    return obj


def name_buffers(trace: Trace, namespace: Mapping[str, object]) -> None:
    """Name the buffers of ``trace`` that have no name after the public variables of
    ``namespace`` that hold them."""
    for variable, value in namespace.items():
        if isinstance(value, IndirectDispatchBuffer):
            value = value.memory
        if isinstance(value, Buffer) and not variable.startswith("_"):
            info = trace.buffers.get(value.id)
            if info is not None and info.name is None:
                info.name = variable


recorder.register_namer(name_buffers)
