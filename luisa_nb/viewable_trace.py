"""``lnb.trace()`` and ``lnb.load_trace()``: traces that analyse and display themselves.

The trace layer holds records, the analysis layer adds hazards; this top layer adds the
notebook view, so that a trace shown as the last expression of a cell opens the trace
viewer (or its static page where widgets are not installed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from luisa_nb.analysis import AnalyzedTrace, Hazard
from luisa_nb.analysis.reproducer_text import Reproducer
from luisa_nb.recording.trace import DEFAULT_CAPTURE_BYTES, DEFAULT_CAPTURE_LIMIT


class ViewableTrace(AnalyzedTrace):
    """An :class:`AnalyzedTrace` with a Jupyter view."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        from luisa_nb.widgets import trace_mimebundle

        return trace_mimebundle(self, include, exclude)

    def _ipython_display_(self) -> None:
        from luisa_nb.widgets import show

        show(self)

    def reproducer(self, finding: Hazard | int | None = None, api: str = "luisa") -> Reproducer:
        """The smallest program that shows ``finding`` (a hazard of this trace, its number
        from 1, or None: the first stale upload), shrunk by running candidates on luisa_nb.
        Its ``text`` is ready to copy into a bug report (docs/reproducers.md)."""
        from luisa_nb.analysis.reproducer import choose_finding
        from luisa_nb.testing.reproducers import reproducer

        if not isinstance(finding, Hazard):
            finding = choose_finding(self.hazards, finding)
        return reproducer(self, finding, api)


def trace(
    capture: str = "head",
    capture_bytes: int = DEFAULT_CAPTURE_BYTES,
    capture_limit: int | None = DEFAULT_CAPTURE_LIMIT,
) -> ViewableTrace:
    """A trace to use as ``with lnb.trace() as t:``; every command submitted and every sync
    point inside the block is recorded. ``capture``: ``"none"``, ``"head"`` (the first
    ``capture_bytes`` of each transfer) or ``"full"``; the captured bytes stop at
    ``capture_limit`` in all (1 GiB; ``None``: no limit), digests go on."""
    return ViewableTrace(capture=capture, capture_bytes=capture_bytes, capture_limit=capture_limit)


def load_trace(path: str | Path) -> ViewableTrace:
    """A trace saved with ``trace.save(path)``."""
    return ViewableTrace.load(path)
