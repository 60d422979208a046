"""Visual debugger widgets: a trace's timeline, command table, hazard list, the staged
bytes of an upload against stream order, and expected-vs-actual diffs of any arrays.

Widgets read a :class:`~luisa_nb.recording.Trace` plus analysis results only, never the
runtime, so a saved trace opens with no device. Each widget is an anywidget (a Python
class plus one ES module in ``static/``) with a self-contained ``text/html`` fallback.
The widget classes load on first use, so ``luisa_nb.report`` works without ipywidgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from luisa_nb.errors import InvalidArgumentError

if TYPE_CHECKING:
    from luisa_nb.recording import Trace
    from luisa_nb.widgets.contents import ContentsPanel
    from luisa_nb.widgets.diff import DiffView, StagingInspector
    from luisa_nb.widgets.trace_views import CommandTableWidget, HazardList, TimelineWidget
    from luisa_nb.widgets.viewer import TraceViewer

_LAZY = {
    "TimelineWidget": "luisa_nb.widgets.trace_views",
    "CommandTableWidget": "luisa_nb.widgets.trace_views",
    "HazardList": "luisa_nb.widgets.trace_views",
    "DiffView": "luisa_nb.widgets.diff",
    "StagingInspector": "luisa_nb.widgets.diff",
    "TraceViewer": "luisa_nb.widgets.viewer",
    "ContentsPanel": "luisa_nb.widgets.contents",
}

__all__ = [
    "CommandTableWidget",
    "ContentsPanel",
    "DiffView",
    "HazardList",
    "StagingInspector",
    "TimelineWidget",
    "TraceViewer",
    "show",
    "trace_mimebundle",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'luisa_nb.widgets' has no attribute {name!r}")


def show(obj: Any, actual: Any = None, **options: Any) -> None:
    """Display a :class:`TraceViewer` of a trace, or a :class:`DiffView` of
    ``show(expected, actual)``; without ipywidgets, the same views as a static HTML page.

    Returns ``None``, so the view appears once whether or not ``show(...)`` is the last
    line of a cell. To keep the widget (to read or set its selection), create it and
    display it: ``viewer = TraceViewer(trace)``, then ``viewer`` on the last line."""
    from IPython.display import HTML, display

    from luisa_nb.recording import Trace

    if actual is None and not isinstance(obj, Trace):
        raise InvalidArgumentError(
            f"show() takes a Trace, or two arrays as show(expected, actual); got "
            f"{type(obj).__name__} alone"
        )
    try:
        if actual is None:
            from luisa_nb.widgets.viewer import TraceViewer

            widget = TraceViewer(obj, **options)
        else:
            from luisa_nb.widgets.diff import DiffView

            widget = DiffView(obj, actual, **options)
    except ImportError:
        display(HTML(_static_html(obj, actual, **options)))
        return
    display(widget)


def _static_html(obj: Any, actual: Any, **options: Any) -> str:
    from luisa_nb.views.array_diff import ArrayDiff
    from luisa_nb.views.fallbacks import diff_fallback
    from luisa_nb.widgets.pages import array_diff_state, trace_fragment, view_fragment

    if actual is None:
        return trace_fragment(obj, anchor=options.get("anchor", ""))
    comparison = ArrayDiff(obj, actual, **options)
    state, buffers = array_diff_state(comparison, embed=True)
    return view_fragment("diff", state, buffers, diff_fallback(comparison))


def trace_mimebundle(trace: Trace, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
    """A trace's MIME bundle: the :class:`TraceViewer` widget view, the report's content
    as ``text/html`` and ``repr`` as ``text/plain``; only the last two where ipywidgets
    is missing. Hook it as ``Trace._repr_mimebundle_`` for frontends that ask for one
    bundle; IPython displays a trace through :func:`show` (a widget view and its static
    twin, so that nbconvert with stored widget state shows the views too)."""
    try:
        from luisa_nb.widgets.viewer import TraceViewer
    except ImportError:
        from luisa_nb.widgets.pages import trace_fragment

        data = {"text/plain": repr(trace), "text/html": trace_fragment(trace)}
        return data, {}
    data, metadata = TraceViewer(trace)._repr_mimebundle_(include=include, exclude=exclude)
    return {**data, "text/plain": repr(trace)}, metadata
