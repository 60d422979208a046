"""Static pages of a trace and of comparisons, built from the same widget state and ES
modules as the live widgets, with the plain-HTML views of :mod:`luisa_nb.views.fallbacks`
inside their mounts: the report, and every widget's ``_repr_html_``."""

from __future__ import annotations

from typing import Any

from luisa_nb.recording import Trace
from luisa_nb.views.array_diff import ArrayDiff, unavailable, upload_array_diff
from luisa_nb.views.fallbacks import diff_fallback, hazards_fallback, timeline_fallback
from luisa_nb.views.html import command_table, escape, trace_facts
from luisa_nb.views.timeline import UPLOAD_HAZARDS, Analysis, TimelineData, build_timeline
from luisa_nb.widgets.html_page import StaticPage

#: Uploads whose staged-vs-expected values a static trace page embeds, at most.
STATIC_UPLOAD_LIMIT = 200
#: The same for a window of a large trace (a notebook's static twin).
WINDOW_UPLOAD_LIMIT = 20
TWIN_RECORDS = 2000
"""How many records the static twin of a trace viewer holds at most (a window around
the first hazard), so that a notebook does not carry megabytes the widget holds too."""
IDLE_INSPECTOR = (
    "Select a hazard or an upload (in the timeline or the table) to compare the bytes it "
    "staged with the bytes stream order says it should send."
)


# -- widget state, as the widgets hold it in traits ----------------------------------------


def timeline_state(data: TimelineData) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Traits of the trace views (timeline, table, hazard list): JSON and binary."""
    state = {"summary": data.summary(), "hazards": data.hazards, "findings": data.findings}
    return state, {"data": data.pack()}


def array_diff_state(
    comparison: ArrayDiff | None, title: str = "", reason: str = "", embed: bool = False
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Traits of a diff view; ``embed`` adds the values a static page pages through."""
    if comparison is None:
        return {"summary": unavailable(title, reason)}, {"heatmap": b""}
    buffers = {"heatmap": comparison.heatmap().tobytes()}
    if embed:
        buffers.update(comparison.embedded())
    return {"summary": comparison.summary()}, buffers


def upload_array_diffs(
    trace: Trace, analysis: Analysis, limit: int = STATIC_UPLOAD_LIMIT
) -> dict[int, ArrayDiff]:
    """Array diffs of the uploads a trace page embeds: those in hazards, then stale ones."""
    wanted = [h.command_ids[-1] for h in analysis.hazards if h.kind in UPLOAD_HAZARDS]
    wanted += sorted(analysis.stale)
    out: dict[int, ArrayDiff] = {}
    candidates = list(dict.fromkeys(wanted))[:limit]
    if not candidates:
        return out
    table = trace.table
    for command_id in candidates:
        check = analysis.uploads.get(command_id)
        row = table.row_of(command_id)
        if check is None or row is None:
            continue
        comparison = upload_array_diff(
            trace, check, table.record(row), early=command_id in analysis.stale
        )
        if comparison is not None:
            out[command_id] = comparison
    return out


# -- pages ---------------------------------------------------------------------------------


def findings_heading(data: TimelineData) -> str:
    """``Hazards (5000 at 1 place)``, or ``Hazards (2)`` where each is its own place."""
    hazards, places = len(data.hazards), len(data.findings)
    return (
        f"Hazards ({hazards})" if hazards == places else f"Hazards ({hazards} at {places} place(s))"
    )


def trace_header(data: TimelineData, title: str) -> str:
    header = f"<h1>{escape(title)}</h1><p class='lnb-info'>{trace_facts(data.meta)}</p>"
    window = data.meta.get("window")
    if window is None:
        return header
    first = window["first"]
    return header + (
        f"<p class='lnb-note lnb-window'>This copy shows {window['shown']:,} of the "
        f"{window['of']:,} records (numbers {first + 1:,} to {first + window['shown']:,} in "
        "time order), around the first hazard; the findings list every place. The live "
        "viewer, a report (<code>luisa-nb report</code>) and a saved trace hold them all.</p>"
    )


def trace_body(
    page: StaticPage,
    trace: Trace,
    analysis: Analysis | None = None,
    *,
    title: str = "luisa_nb trace",
    stale_sections: bool = True,
    anchor: str = "",
    data: TimelineData | None = None,
) -> str:
    """Header, timeline, hazard list, command table and inspector of ``trace`` (and, with
    ``stale_sections``, the staged-vs-expected diff of every stale upload). ``data`` is
    the trace's view data where it was built already (or a window of it)."""
    analysis = analysis if analysis is not None else Analysis.of(trace)
    data = data if data is not None else build_timeline(trace, analysis)
    state, buffers = timeline_state(data)
    trace_model_id = page.add_model(state, buffers)
    page.hazards = data.hazards
    limit = STATIC_UPLOAD_LIMIT if "window" not in data.meta else WINDOW_UPLOAD_LIMIT
    comparisons = upload_array_diffs(trace, analysis, limit)
    uploads = {}
    for command_id, comparison in comparisons.items():
        state, buffers = array_diff_state(comparison, embed=True)
        uploads[command_id] = page.add_model(state, buffers)
    page.uploads_note = (
        "no staged-vs-expected values for this command in this page (it embeds uploads "
        "that are stale or part of a hazard)"
    )
    parts = [
        trace_header(data, title),
        "<h2>Timeline</h2>",
        page.mount("timeline", trace_model_id, timeline_fallback(data)),
        '<div class="lnb-grid"><div class="lnb-panel">',
        f"<h2>{escape(findings_heading(data))}</h2>",
        page.mount("hazards", trace_model_id, hazards_fallback(data.findings), element_id=anchor),
        '</div><div class="lnb-panel">',
        f"<h2>Commands ({data.meta['commands']}) and sync points ({data.meta['syncs']})</h2>",
        page.mount("table", trace_model_id, command_table(data)),
        "</div></div>",
        "<h2>Inspector</h2>",
        page.inspector(uploads, escape(IDLE_INSPECTOR)),
    ]
    stale = [i for i in data.meta["stale_uploads"] if i in uploads]
    if stale_sections and stale:
        parts.append(f"<h2>Stale uploads ({len(stale)})</h2>")
        for command_id in stale:
            parts.append(
                page.mount(
                    "diff",
                    uploads[command_id],
                    diff_fallback(comparisons[command_id]),
                    "lnb-stale-upload",
                )
            )
    return "".join(parts)


def trace_page(trace: Trace, analysis: Analysis | None = None, *, title: str | None = None) -> str:
    """The report: one self-contained HTML document."""
    page = StaticPage()
    title = title or "luisa_nb trace report"
    return page.document(trace_body(page, trace, analysis, title=title), title)


def trace_fragment(
    trace: Trace,
    analysis: Analysis | None = None,
    *,
    anchor: str = "",
    data: TimelineData | None = None,
) -> str:
    """The report's content as an HTML fragment (a notebook's ``text/html``); ``anchor``
    is the id of its finding list, ``data`` the view data to show (a window of a large
    trace: :func:`~luisa_nb.views.timeline.windowed`)."""
    page = StaticPage()
    body = trace_body(page, trace, analysis, title="luisa_nb trace", anchor=anchor, data=data)
    return page.fragment(body)


def view_fragment(
    view: str, state: dict[str, Any], buffers: dict[str, bytes], fallback: str
) -> str:
    """One renderer over one widget state, as an HTML fragment (a single widget's fallback)."""
    page = StaticPage()
    page.hazards = state.get("hazards", [])
    model_id = page.add_model(state, buffers)
    return page.fragment(page.mount(view, model_id, fallback))
