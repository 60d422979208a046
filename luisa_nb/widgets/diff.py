"""Expected against actual values: :class:`DiffView` for any two arrays or buffers, and
:class:`StagingInspector` for an upload's staged bytes against stream order.

Statistics and the heatmap travel as traits; pages of values are sent on request (the
browser sends ``{"type": "page", "mode": "all" | "differing", "page": n, "request": k}``;
the reply carries three binary buffers: flat indices as f8, expected and actual values).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from traitlets import Bytes, Dict, Int, TraitError, observe, validate

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.recording import Trace
from luisa_nb.recording.naming import describe
from luisa_nb.views.array_diff import DEFAULT_PAGE_SIZE, ArrayDiff, upload_array_diff
from luisa_nb.views.fallbacks import diff_fallback
from luisa_nb.views.timeline import Analysis
from luisa_nb.widgets.base import StaticFallbackWidget
from luisa_nb.widgets.html_page import module_source
from luisa_nb.widgets.pages import array_diff_state, view_fragment


class ArrayDiffWidget(StaticFallbackWidget):
    """Shared by :class:`DiffView` and :class:`StagingInspector`."""

    _esm = module_source("diff")
    summary = Dict(help="statistics, first differing indices, page counts, heatmap layout").tag(
        sync=True
    )
    heatmap = Bytes(help="uint8 heatmap cells of where values differ").tag(sync=True)

    comparison: ArrayDiff | None = None
    _title = ""
    _reason = ""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.on_msg(self._on_message)

    def _show(self, comparison: ArrayDiff | None, title: str = "", reason: str = "") -> None:
        self.comparison = comparison
        self._title, self._reason = title, reason
        state, buffers = array_diff_state(comparison, title, reason)
        with self.hold_sync():
            self.heatmap = buffers["heatmap"]
            self.summary = state["summary"]

    # -- statistics, for code and tests --------------------------------------------------

    @property
    def count(self) -> int:
        """How many elements differ (0 when there is nothing to compare)."""
        return 0 if self.comparison is None else self.comparison.count

    @property
    def differing_indices(self) -> np.ndarray:
        return np.zeros(0, np.intp) if self.comparison is None else self.comparison.differing

    @property
    def first_indices(self) -> list[list[int]]:
        return [] if self.comparison is None else self.comparison.first_indices()

    @property
    def max_abs_error(self) -> float | None:
        return None if self.comparison is None else self.comparison.max_abs_error

    @property
    def max_rel_error(self) -> float | None:
        return None if self.comparison is None else self.comparison.max_rel_error

    # -- paging --------------------------------------------------------------------------

    def page_message(self, content: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
        """The reply to a page request from the browser: a message and its buffers."""
        request = content.get("request")
        if self.comparison is None:
            reason = self._reason or "nothing to compare"
            return {"type": "error", "request": request, "message": reason}, []
        message, buffers = page_reply(self.comparison, content)
        return {**message, "request": request}, buffers

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "page":
            reply, buffers = self.page_message(content)
            self.send(reply, buffers)

    def _repr_html_(self) -> str:
        state, buffers = array_diff_state(self.comparison, self._title, self._reason, embed=True)
        fallback = diff_fallback(self.comparison, self._title, self._reason)
        return view_fragment("diff", state, buffers, fallback)

    def _display_text(self) -> str:
        if self.comparison is None:
            return f"<{type(self).__name__}: {self._reason or 'nothing to compare'}>"
        differ = f"{self.comparison.count} of {self.comparison.size} elements differ"
        return f"<{type(self).__name__}: {differ}>"


def page_reply(
    comparison: ArrayDiff, content: dict[str, Any]
) -> tuple[dict[str, Any], list[bytes]]:
    """The page ``content`` asks for (``mode``, ``page``) of ``comparison`` and its buffers,
    or an ``error`` message saying what was wrong with the request."""
    number = content.get("page", 0)
    if isinstance(number, bool) or not isinstance(number, int):
        return {"type": "error", "message": f"page must be an integer, not {number!r}"}, []
    try:
        return comparison.page(content.get("mode", "all"), number)
    except ValueError as error:
        return {"type": "error", "message": str(error)}, []


class DiffView(ArrayDiffWidget):
    """``expected`` against ``actual`` (arrays, sequences, or buffers with ``.numpy()``):
    side by side with differing elements highlighted, a heatmap of differences (2-D data
    as rows x last axis), the count, the first differing indices, and the largest
    absolute and relative errors. Elements are equal when ``==`` says so (NaN equals NaN).
    """

    def __init__(
        self,
        expected: Any,
        actual: Any,
        *,
        names: tuple[str, str] = ("expected", "actual"),
        title: str = "",
        page_size: int = DEFAULT_PAGE_SIZE,
        **kwargs: Any,
    ) -> None:
        comparison = ArrayDiff(expected, actual, names=names, title=title, page_size=page_size)
        super().__init__(**kwargs)
        self._show(comparison, title)

    def update(self, expected: Any, actual: Any) -> None:
        """Compare new arrays (same names, title and page size)."""
        old = self.comparison
        self._show(
            ArrayDiff(expected, actual, names=old.names, title=old.title, page_size=old.page_size),
            old.title,
        )


class StagingInspector(ArrayDiffWidget):
    """The bytes upload ``command_id`` staged against the bytes stream order says it
    should send, as typed values in the host array's dtype and shape."""

    command_id = Int(None, allow_none=True, help="id of the upload shown, or None").tag(sync=True)

    def __init__(
        self,
        trace: Trace,
        command_id: int | None = None,
        *,
        analysis: Analysis | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        **kwargs: Any,
    ) -> None:
        if not isinstance(trace, Trace):
            raise InvalidArgumentError(
                f"StagingInspector inspects a luisa_nb Trace, not {type(trace).__name__}"
            )
        self.trace = trace
        self.analysis = analysis if analysis is not None else Analysis.of(trace)
        self.page_size = page_size
        super().__init__(**kwargs)
        self._show_upload(None)
        if command_id is not None:
            self.command_id = command_id

    @validate("command_id")
    def _check_upload(self, proposal: dict[str, Any]) -> int | None:
        value = proposal["value"]
        if value is None or (not isinstance(value, bool) and value in self.analysis.uploads):
            return value
        uploads = ", ".join(f"#{i}" for i in self.analysis.uploads) or "none"
        try:
            what = describe(self.trace, self.trace.command(value))
            problem = f"{what} is not an upload with a host array"
        except (KeyError, TypeError):
            problem = f"this trace has no command #{value}"
        raise TraitError(f"command_id={value!r}: {problem}; uploads in this trace: {uploads}")

    @observe("command_id")
    def _command_changed(self, change: dict[str, Any]) -> None:
        self._show_upload(change["new"])

    def _show_upload(self, command_id: int | None) -> None:
        if command_id is None:
            self._show(None, "", "Select an upload or a hazard to compare its staged bytes.")
            return
        command = self.trace.command(command_id)
        check = self.analysis.uploads[command_id]
        comparison = upload_array_diff(
            self.trace, check, command, self.page_size, early=command_id in self.analysis.stale
        )
        title = f"{describe(self.trace, command)}: staged bytes against stream order"
        reason = f"no bytes of #{command_id}: {self.trace.uncaptured_reason()}"
        self._show(comparison, title, reason if comparison is None else "")

    @property
    def check(self):
        """The :class:`~luisa_nb.analysis.UploadCheck` shown, or ``None``."""
        return None if self.command_id is None else self.analysis.uploads[self.command_id]
