"""``ContentsPanel``: the buffers the selected command touched, right before and right
after it, replayed from the trace (:mod:`luisa_nb.views.contents`), each through the diff
view.

Traits: ``selected_command`` (validated here), ``steps`` (the command ids the arrow keys
step through, as int32 bytes: a trace of 100,000 commands sends 400 KB, not a JSON
list), ``summary`` (the command and, per buffer, the diff view's summary) and ``heatmaps``
(one per buffer). Pages of values travel as the diff view's do, with the
buffer's index and the command id added to the request and echoed in the reply:
``{"type": "page", "buffer": k, "command_id": n, "mode": ..., "page": ..., "request": ...}``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from traitlets import Bytes, Dict, Int, List, TraitError, observe, validate

from luisa_nb.analysis.replay import ReplayEngine
from luisa_nb.errors import InvalidArgumentError
from luisa_nb.recording import Trace
from luisa_nb.recording.records import Record
from luisa_nb.views.array_diff import DEFAULT_PAGE_SIZE
from luisa_nb.views.contents import CommandContents, command_contents
from luisa_nb.views.fallbacks import diff_fallback
from luisa_nb.views.html import escape
from luisa_nb.widgets.base import StaticFallbackWidget
from luisa_nb.widgets.diff import page_reply
from luisa_nb.widgets.html_page import module_source
from luisa_nb.widgets.pages import array_diff_state

NOTHING_SELECTED = "Select a command to see the buffers it touched, before and after it."


class ContentsPanel(StaticFallbackWidget):
    """What every buffer a command touched held right before and right after it, as
    replay knows them; ArrowLeft/ArrowRight step from command to command (issue order)."""

    _esm = module_source("contents")
    selected_command = Int(None, allow_none=True, help="id of the record shown, or None").tag(
        sync=True
    )
    steps = Bytes(
        help="the command ids in increasing order, int32 little-endian (the arrow keys' steps)"
    ).tag(sync=True)
    summary = Dict(help="the command, and each buffer's diff view summary").tag(sync=True)
    heatmaps = List(Bytes(), help="each buffer's heatmap cells").tag(sync=True)

    contents: CommandContents | None = None

    def __init__(
        self,
        trace: Trace,
        command_id: int | None = None,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        **kwargs: Any,
    ) -> None:
        if not isinstance(trace, Trace):
            raise InvalidArgumentError(
                f"ContentsPanel replays a luisa_nb Trace, not {type(trace).__name__}"
            )
        self.trace = trace
        self.page_size = page_size
        self._syncs = {record.id: record for record in trace.syncs}
        self._engine: ReplayEngine | None = None
        super().__init__(**kwargs)
        self.steps = np.sort(trace.table.numbers["id"]).astype("<i4").tobytes()
        self._show(None)
        self.on_msg(self._on_message)
        if command_id is not None:
            self.selected_command = command_id

    @property
    def engine(self) -> ReplayEngine:
        """The replay of the trace, made on the first selection."""
        if self._engine is None:
            self._engine = ReplayEngine(self.trace)
        return self._engine

    @validate("selected_command")
    def _check_record(self, proposal: dict[str, Any]) -> int | None:
        value = proposal["value"]
        if value is None or (not isinstance(value, bool) and self._record(value) is not None):
            return value
        ids = [*self.trace.table.numbers["id"].tolist(), *self._syncs]
        known = (
            f"its record ids run from #{min(ids)} to #{max(ids)}" if ids else "it has no records"
        )
        raise TraitError(f"selected_command={value!r}: this trace has no record #{value}; {known}")

    def _record(self, record_id: int) -> Record | None:
        """The command or sync point ``record_id`` of the trace (``None``: it has none)."""
        table = self.trace.table
        row = table.row_of(record_id) if isinstance(record_id, int) else None
        return self._syncs.get(record_id) if row is None else table.record(row)

    @observe("selected_command")
    def _command_changed(self, change: dict[str, Any]) -> None:
        self._show(change["new"])

    def _show(self, record_id: int | None) -> None:
        if record_id is None:
            self.contents = None
            summary = {"record_id": None, "title": "", "note": NOTHING_SELECTED, "buffers": []}
            with self.hold_sync():
                self.heatmaps, self.summary = [], summary
            return
        contents = command_contents(
            self.trace, self.engine, self._record(record_id), self.page_size
        )
        self.contents = contents
        buffers, heatmaps = [], []
        for entry in contents.buffers:
            state, binary = array_diff_state(entry.comparison, entry.name, entry.reason)
            buffers.append({"buffer": entry.buffer, "name": entry.name, **state})
            heatmaps.append(binary["heatmap"])
        summary = {
            "record_id": record_id,
            "title": contents.title,
            "before": contents.before,
            "note": contents.note,
            "buffers": buffers,
        }
        with self.hold_sync():
            self.heatmaps, self.summary = heatmaps, summary

    def page_message(self, content: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
        """The reply to a page request for buffer ``content["buffer"]`` of the command
        shown: a message and its buffers (an ``error`` message for a stale or bad one)."""
        request, buffer = content.get("request"), content.get("buffer")
        echo = {"request": request, "buffer": buffer, "command_id": content.get("command_id")}
        contents = self.contents
        if contents is None or content.get("command_id") != contents.record_id:
            return {"type": "error", **echo, "message": "that command is no longer shown"}, []
        if isinstance(buffer, bool) or not isinstance(buffer, int):
            return {"type": "error", **echo, "message": f"buffer must be an index: {buffer!r}"}, []
        if not 0 <= buffer < len(contents.buffers):
            message = f"buffer {buffer}: the command touched {len(contents.buffers)} buffer(s)"
            return {"type": "error", **echo, "message": message}, []
        entry = contents.buffers[buffer]
        if entry.comparison is None:
            return {"type": "error", **echo, "message": entry.reason}, []
        message, buffers = page_reply(entry.comparison, content)
        return {**message, **echo}, buffers

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "page":
            reply, buffers = self.page_message(content)
            self.send(reply, buffers)

    def _repr_html_(self) -> str:
        """Plain HTML: the command and the first values of each buffer's diff (stepping
        needs the kernel)."""
        contents = self.contents
        if contents is None:
            return f"<div class='lnb-root'><p class='lnb-note'>{escape(NOTHING_SELECTED)}</p></div>"
        parts = [f"<p><b>{escape(contents.title)}</b></p>"]
        if contents.note:
            parts.append(f"<p class='lnb-note'>{escape(contents.note)}</p>")
        for entry in contents.buffers:
            parts.append(diff_fallback(entry.comparison, entry.name, entry.reason))
        return f"<div class='lnb-root lnb-contents'>{''.join(parts)}</div>"

    def _display_text(self) -> str:
        if self.contents is None:
            return "<ContentsPanel: nothing selected>"
        return f"<ContentsPanel: {self.contents.title}, {len(self.contents.buffers)} buffer(s)>"
