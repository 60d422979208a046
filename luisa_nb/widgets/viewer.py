"""``TraceViewer``: timeline, contents panel, command table, hazard list and inspector of
one trace, linked by selection. Choosing a hazard selects both of its commands and shows
the upload's staged bytes against stream order; choosing a command shows the buffers it
touched before and after it."""

from __future__ import annotations

from typing import Any

import ipywidgets
import traitlets
from traitlets import observe

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.recording import Trace
from luisa_nb.views.fallbacks import findings_anchor
from luisa_nb.views.html import escape, trace_facts
from luisa_nb.views.timeline import Analysis, build_timeline, windowed
from luisa_nb.widgets.base import display_with_static_twin
from luisa_nb.widgets.contents import ContentsPanel
from luisa_nb.widgets.diff import StagingInspector
from luisa_nb.widgets.pages import TWIN_RECORDS, findings_heading, trace_fragment
from luisa_nb.widgets.selection import SelectionMixin, link_selection
from luisa_nb.widgets.trace_views import CommandTableWidget, HazardList, TimelineWidget


class TraceViewer(SelectionMixin, ipywidgets.VBox):
    """The visual debugger of one trace. ``selected_command``, ``selected_hazard`` and
    ``selected_commands`` mirror those of every view; ``timeline``, ``contents``,
    ``table``, ``hazard_list`` and ``inspector`` are the views themselves. ``anchor`` is the element
    id of the finding list (live and in the static twin), where links may point."""

    def __init__(self, trace: Trace, *, anchor: str = "", **kwargs: Any) -> None:
        if not isinstance(trace, Trace):
            raise InvalidArgumentError(
                f"TraceViewer shows a luisa_nb Trace, not {type(trace).__name__}; load one "
                "with lnb.load_trace(path)"
            )
        self.trace = trace
        self.analysis = Analysis.of(trace)
        self.timeline_data = build_timeline(trace, self.analysis)
        self._set_selectable(*self.timeline_data.selectable)
        shared = {"analysis": self.analysis, "timeline_data": self.timeline_data}
        self.timeline = TimelineWidget(trace, **shared)
        self.table = CommandTableWidget(trace, **shared)
        self.hazard_list = HazardList(trace, **shared)
        self.hazard_list.anchor = self.anchor = anchor or findings_anchor()
        self.inspector = StagingInspector(trace, analysis=self.analysis)
        hazards = self.timeline_data.hazards
        if hazards and hazards[0]["upload"] is not None:
            # the timeline opens on the first hazard: so does the inspector
            self.inspector.command_id = hazards[0]["upload"]
        self.contents = ContentsPanel(trace)
        self._links = [
            traitlets.link((self, "selected_command"), (self.contents, "selected_command"))
        ]
        for view in (self.timeline, self.table, self.hazard_list):
            self._links += link_selection(self, view)
        # Side by side where the command table keeps a readable "what" column, one above
        # the other on a laptop-sized notebook.
        narrow = ipywidgets.Layout(flex="1 1 300px", min_width="0")
        wide = ipywidgets.Layout(flex="3 1 760px", min_width="0")
        # the contents panel beside the timeline, below it where the notebook is narrow
        self.timeline.layout = wide
        timeline_row = ipywidgets.HBox(
            [
                self.timeline,
                ipywidgets.VBox(
                    [_heading("Contents before and after"), self.contents],
                    layout=ipywidgets.Layout(flex="1 1 380px", min_width="0"),
                ),
            ],
            layout=ipywidgets.Layout(flex_flow="row wrap"),
        )
        panels = ipywidgets.HBox(
            [
                ipywidgets.VBox(
                    [_heading(findings_heading(self.timeline_data)), self.hazard_list],
                    layout=narrow,
                ),
                ipywidgets.VBox([_heading("Commands and sync points"), self.table], layout=wide),
            ],
            layout=ipywidgets.Layout(flex_flow="row wrap"),
        )
        children = [
            ipywidgets.HTML(trace_facts(self.timeline_data.meta)),
            timeline_row,
            panels,
            _heading("Inspector"),
            self.inspector,
        ]
        super().__init__(children, **kwargs)
        self.add_class("lnb-viewer")  # the stylesheet's theme colours apply to the header

    @observe("selected_hazard", "selected_command")
    def _inspect(self, _change: dict[str, Any]) -> None:
        upload = None
        if self.selected_hazard is not None:
            upload = self.timeline_data.hazards[self.selected_hazard]["upload"]
        elif self.selected_command in self.analysis.uploads:
            upload = self.selected_command
        self.inspector.command_id = upload

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | dict | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        return {**data, "text/html": self._repr_html_()}, metadata

    def _repr_html_(self) -> str:
        """The report's content: the same views, drawn by the same ES modules, over at
        most :data:`~luisa_nb.widgets.pages.TWIN_RECORDS` records around the first hazard
        (the widget holds them all, and so does a report)."""
        data = windowed(self.timeline_data, TWIN_RECORDS)
        return trace_fragment(self.trace, self.analysis, anchor=self.anchor, data=data)

    def _ipython_display_(self, **_kwargs: Any) -> None:
        """The widget view and its static twin, which any of the views hides when it
        renders live (see :mod:`luisa_nb.widgets.base`)."""
        views = (self.timeline, self.contents, self.table, self.hazard_list, self.inspector)
        for view in views:
            view.hides_twin(self.model_id)
        meta = self.timeline_data.meta
        text = (
            f"<TraceViewer: {meta['commands']} commands, {meta['syncs']} sync points, "
            f"{meta['hazards']} hazard(s)>"
        )
        display_with_static_twin(self, self._repr_html_, text)


def _heading(text: str) -> ipywidgets.HTML:
    return ipywidgets.HTML(f"<b>{escape(text)}</b>")
