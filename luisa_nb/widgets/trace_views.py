"""Views of a whole trace: the timeline, the command table and the hazard list.

Each is an anywidget (a Python class plus one ES module in ``static/``). The view data
comes from :mod:`luisa_nb.views.timeline`: the packed columns travel as one binary
buffer (``data``), the hazards as another (``hazard_data``, laid out as ``hazard_layout``
says; ``hazards`` keeps them as a list in Python), the rest as JSON (``summary``,
``findings``). Selection is validated in
Python (:class:`~luisa_nb.widgets.selection.SelectionMixin`); the browser reports clicks.
"""

from __future__ import annotations

import json
from typing import Any

from traitlets import Bytes, Dict, List, Unicode, observe

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.recording import Trace
from luisa_nb.views.fallbacks import hazards_fallback, timeline_fallback
from luisa_nb.views.html import command_table
from luisa_nb.views.timeline import Analysis, TimelineData, build_timeline, record_details
from luisa_nb.widgets.base import StaticFallbackWidget
from luisa_nb.widgets.html_page import module_source
from luisa_nb.widgets.pages import timeline_state, view_fragment
from luisa_nb.widgets.selection import SelectionMixin, selection_traits


class TraceView(SelectionMixin, StaticFallbackWidget):
    """A view of ``trace``. ``analysis`` and ``timeline_data`` let several views share one
    computation (``TraceViewer`` does)."""

    selected_command, selected_hazard, selected_commands = selection_traits(sync=True)
    summary = Dict(help="lanes, kinds, colours, texts, hazards and the buffer layout").tag(
        sync=True
    )
    data = Bytes(help="the packed columns of every record (see luisa_nb.views.timeline)").tag(
        sync=True
    )
    hazards = List(help="every hazard: kind, command ids, upload, arrow, group")
    hazard_layout = Dict(help="where each column of hazard_data sits").tag(sync=True)
    hazard_data = Bytes(help="the hazards as packed columns (luisa_nb.views.packed_hazards)").tag(
        sync=True
    )
    findings = List(help="the hazards grouped by place: kind, count, message, fix").tag(sync=True)

    _view = "timeline"

    def __init__(
        self,
        trace: Trace,
        *,
        analysis: Analysis | None = None,
        timeline_data: TimelineData | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(trace, Trace):
            raise InvalidArgumentError(
                f"{type(self).__name__} shows a luisa_nb Trace, not {type(trace).__name__}; "
                "record one with `with lnb.trace() as t:` or load one with lnb.load_trace(path)"
            )
        self.trace = trace
        self.analysis = analysis if analysis is not None else Analysis.of(trace)
        self.timeline_data = (
            timeline_data if timeline_data is not None else build_timeline(trace, self.analysis)
        )
        self._set_selectable(*self.timeline_data.selectable)
        state, buffers = self._state()
        super().__init__(**state, **buffers, **kwargs)

    def _view_state(self) -> tuple[dict[str, Any], dict[str, bytes]]:
        """The view's state as a static page holds it (hazards as a JSON list)."""
        return timeline_state(self.timeline_data)

    def _state(self) -> tuple[dict[str, Any], dict[str, bytes]]:
        """The traits: the view's state, and the hazards packed for the browser."""
        state, buffers = self._view_state()
        layout, packed = self.timeline_data.packed_hazards
        return {**state, "hazard_layout": layout}, {**buffers, "hazard_data": packed}

    @property
    def payload_bytes(self) -> int:
        """Bytes of trait values this widget sends to the browser when displayed."""
        state, buffers = self._state()
        synced = {name: value for name, value in state.items() if self.trait_metadata(name, "sync")}
        return len(json.dumps(synced, separators=(",", ":"))) + sum(map(len, buffers.values()))

    def _fallback(self) -> str:
        return timeline_fallback(self.timeline_data)

    def _repr_html_(self) -> str:
        state, buffers = self._view_state()
        return view_fragment(self._view, state, buffers, self._fallback())


class TimelineWidget(TraceView):
    """A lane per stream and a host lane; each record a bar coloured by kind; host reads
    (▼) and writes (▲) on the host lane; each hazard a red arrow from the download's host
    write to the stale upload's host read. Opens on the first hazard; Ctrl+wheel or W/S
    zoom, drag or A/D pan, hover shows the record, click selects (a bar:
    ``selected_command``; an arrow: ``selected_hazard``)."""

    _esm = module_source("timeline")
    _view = "timeline"


class CommandTableWidget(TraceView):
    """Every command and sync point in issue order; click a row to select it. The details
    panel shows the selected record; a large trace's summary leaves out the device and
    host ranges of its commands, which ``record_details`` brings for the selected one."""

    _esm = module_source("table")
    _view = "table"
    record_details = Dict(help="the selected record's device and host ranges").tag(sync=True)

    @observe("selected_command")
    def _send_record_details(self, change: dict[str, Any]) -> None:
        selected = change["new"]
        self.record_details = {} if selected is None else record_details(self.trace, selected)

    def _fallback(self) -> str:
        return command_table(self.timeline_data)


class HazardList(TraceView):
    """The hazards grouped by place: kind, count, both commands, the explanation and the
    fix; a group expands to its occurrences. Click a group or an occurrence to select it
    (a group: its first occurrence)."""

    _esm = module_source("hazards")
    _view = "hazards"
    anchor = Unicode("", help="the element id the list takes (where links to it point)").tag(
        sync=True
    )

    def _view_state(self) -> tuple[dict[str, Any], dict[str, bytes]]:
        data = self.timeline_data
        return {"summary": {}, "hazards": data.hazards, "findings": data.findings}, {"data": b""}

    def _fallback(self) -> str:
        return hazards_fallback(self.timeline_data.findings)
