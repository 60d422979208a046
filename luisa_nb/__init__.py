"""luisa_nb: a traced LuisaCompute-style runtime that makes host-memory staging bugs visible.

Quick start::

    import numpy as np, luisa_nb as lnb

    dev = lnb.create_device("cpu", staging="submit")
    with lnb.trace() as t:
        ...                       # submit commands
    print(t.hazards)
"""

import importlib
import typing

if typing.TYPE_CHECKING:  # the public names, for type checkers and editors
    from luisa_nb.analysis import AnalyzedTrace, Hazard, HazardKind
    from luisa_nb.comparing import Comparison, compare
    from luisa_nb.errors import LuisaNbError, LuisaNbWarning
    from luisa_nb.ipython import last_trace, load_ipython_extension, unload_ipython_extension
    from luisa_nb.kernels import (  # noqa: F401 - abs, max, min, pow: kernels' own
        abs,
        ceil,
        clamp,
        cos,
        dispatch_id,
        dispatch_size,
        exp,
        floor,
        kernel_id,
        log,
        max,
        min,
        pow,
        sin,
        sqrt,
        tan,
    )
    from luisa_nb.recording.ranges import Range
    from luisa_nb.recording.ranges import Range as range  # noqa: F401
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

# Where each public name lives. They load on first use (PEP 562), so that
# ``import luisa_nb.luisa`` (a luisa-python program) loads the runtime and the compiler
# but not the analysis, the views or IPython.
_LOCATIONS = {
    "AnalyzedTrace": "luisa_nb.analysis",
    "Hazard": "luisa_nb.analysis",
    "HazardKind": "luisa_nb.analysis",
    "Comparison": "luisa_nb.comparing",
    "compare": "luisa_nb.comparing",
    "LuisaNbError": "luisa_nb.errors",
    "LuisaNbWarning": "luisa_nb.errors",
    "last_trace": "luisa_nb.ipython",
    "load_ipython_extension": "luisa_nb.ipython",
    "unload_ipython_extension": "luisa_nb.ipython",
    **dict.fromkeys(
        # lnb.max(...) in kernels; abs, min, max and pow stay out of __all__
        [
            "abs",
            "ceil",
            "clamp",
            "cos",
            "dispatch_id",
            "dispatch_size",
            "exp",
            "floor",
            "kernel_id",
            "log",
            "max",
            "min",
            "pow",
            "sin",
            "sqrt",
            "tan",
        ],
        "luisa_nb.kernels",
    ),
    "Range": "luisa_nb.recording.ranges",
    **dict.fromkeys(
        [
            "Buffer",
            "BufferView",
            "Device",
            "Event",
            "IndirectDispatchBuffer",
            "Kernel",
            "Stream",
            "create_device",
            "default_device",
            "kernel",
            "name",
            "set_default_device",
        ],
        "luisa_nb.runtime",
    ),
    "instrument_luisa": "luisa_nb.runtime.real_luisa",
    "uninstrument_luisa": "luisa_nb.runtime.real_luisa",
    "ViewableTrace": "luisa_nb.viewable_trace",
    "load_trace": "luisa_nb.viewable_trace",
    "trace": "luisa_nb.viewable_trace",
}


def __getattr__(attribute: str) -> object:
    """A public name, loaded from its module on first use. ``lnb.range("iteration 37")``
    (or ``@lnb.range("step")``) is :class:`Range`: a named, nested range of the program
    that traces record and the timeline brackets; out of ``__all__``, so a star import
    keeps the builtin ``range``."""
    location = _LOCATIONS.get("Range" if attribute == "range" else attribute)
    if location is None:
        raise AttributeError(f"module 'luisa_nb' has no attribute {attribute!r}")
    source = "Range" if attribute == "range" else attribute
    value = getattr(importlib.import_module(location), source)
    globals()[attribute] = value
    return value


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
