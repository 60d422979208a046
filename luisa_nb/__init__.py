"""luisa_nb: a traced LuisaCompute-style runtime that makes host-memory staging bugs visible.

Quick start::

    import numpy as np, luisa_nb as lnb

    dev = lnb.create_device("cpu", staging="submit")
    with lnb.trace() as t:
        ...                       # submit commands
    print(t.hazards)
"""

from luisa_nb.analysis import AnalyzedTrace, Hazard, HazardKind
from luisa_nb.comparing import Comparison, compare
from luisa_nb.errors import LuisaNbError, LuisaNbWarning
from luisa_nb.ipython import last_trace, load_ipython_extension, unload_ipython_extension
from luisa_nb.kernels import (  # abs, min, max, pow: lnb.max(...) in kernels, not in __all__
    abs,  # noqa: F401
    ceil,
    clamp,
    cos,
    dispatch_id,
    dispatch_size,
    exp,
    floor,
    kernel_id,
    log,
    max,  # noqa: F401
    min,  # noqa: F401
    pow,  # noqa: F401
    sin,
    sqrt,
    tan,
)
from luisa_nb.recording.ranges import Range
from luisa_nb.runtime import (
    Buffer,
    BufferView,
    Device,
    Event,
    IndirectDispatchBuffer,
    Kernel,
    Stream,
    create_device,
    default_device,
    kernel,
    name,
    set_default_device,
)
from luisa_nb.runtime.real_luisa import instrument_luisa, uninstrument_luisa
from luisa_nb.viewable_trace import ViewableTrace, load_trace, trace

__version__ = "0.1.0"

range = Range
"""``with lnb.range("iteration 37"):`` (or ``@lnb.range("step")``): a named, nested range of
the program that traces record and the timeline brackets; out of ``__all__``, so a star
import keeps the builtin ``range``."""


def show(obj: object, actual: object = None, **options: object) -> None:
    """Display the trace viewer of a trace, or ``show(expected, actual)`` as a diff view;
    returns ``None``, so the view appears once even as a cell's last line."""
    from luisa_nb.widgets import show as show_widget

    show_widget(obj, actual, **options)


# abs, min, max, pow and range stay out of __all__ so that a star import keeps the builtins.
__all__ = [
    "AnalyzedTrace",
    "Buffer",
    "BufferView",
    "Comparison",
    "Device",
    "Event",
    "Hazard",
    "HazardKind",
    "IndirectDispatchBuffer",
    "Kernel",
    "LuisaNbError",
    "LuisaNbWarning",
    "Range",
    "Stream",
    "ViewableTrace",
    "ceil",
    "clamp",
    "compare",
    "cos",
    "create_device",
    "default_device",
    "dispatch_id",
    "dispatch_size",
    "exp",
    "floor",
    "instrument_luisa",
    "kernel",
    "kernel_id",
    "last_trace",
    "load_ipython_extension",
    "load_trace",
    "log",
    "name",
    "set_default_device",
    "show",
    "sin",
    "sqrt",
    "tan",
    "trace",
    "uninstrument_luisa",
    "unload_ipython_extension",
]


def __dir__() -> list[str]:
    """The public API: ``__all__``, ``__version__``, and the builtins' namesakes that
    ``__all__`` leaves out; not the submodules imported along the way."""
    return sorted([*__all__, "__version__", "abs", "max", "min", "pow", "range"])
