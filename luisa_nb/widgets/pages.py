"""Static pages of a trace and of comparisons, built from the same view data and ES
modules as the live widgets: the report, and every widget's ``_repr_html_``."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from luisa_nb.analysis.formatting import duration
from luisa_nb.recording import Trace
from luisa_nb.widgets.array_diff import (
    FIRST_INDICES,
    ArrayDiff,
    unavailable,
    upload_array_diff,
)
from luisa_nb.widgets.html_page import StaticPage, escape, kind_colour
from luisa_nb.widgets.model import UPLOAD_HAZARDS, Analysis, TimelineModel, build_timeline

#: Uploads whose staged-vs-expected values a static trace page embeds, at most.
STATIC_UPLOAD_LIMIT = 200
FALLBACK_ROWS = 100
IDLE_INSPECTOR = (
    "Select a hazard or an upload (in the timeline or the table) to compare the bytes it "
    "staged with the bytes stream order says it should send."
)


# -- model state, as the widgets hold it in traits -----------------------------------------


def timeline_state(model: TimelineModel) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Traits of the trace views (timeline, table, hazard list): JSON and binary."""
    return {"summary": model.summary(), "hazards": model.hazards}, {"data": model.pack()}


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
    by_id = {command.id: command for command in trace.commands}
    for command_id in candidates:
        check = analysis.uploads.get(command_id)
        if check is None or command_id not in by_id:
            continue
        comparison = upload_array_diff(
            trace, check, by_id[command_id], early=command_id in analysis.stale
        )
        if comparison is not None:
            out[command_id] = comparison
    return out


# -- plain-HTML fallbacks (shown where scripts do not run) ---------------------------------


def timeline_png(model: TimelineModel) -> bytes:
    """The fallback picture of a timeline: the matplotlib figure (axis, lane labels,
    legend) where matplotlib is installed, else the numpy raster."""
    try:
        from luisa_nb.widgets.figure import timeline_figure_png
    except ImportError:
        from luisa_nb.widgets.raster import timeline_png as raster_png

        return raster_png(model)
    return timeline_figure_png(model)


def timeline_fallback(model: TimelineModel) -> str:
    picture = base64.b64encode(timeline_png(model)).decode("ascii")
    lanes = ", ".join(escape(lane["name"]) for lane in model.lanes)
    return (
        f'<img class="lnb-fallback-image" alt="timeline of {model.count} records" '
        f'src="data:image/png;base64,{picture}">'
        f'<p class="lnb-note">Lanes from the top: {lanes}. Run the page with scripts for '
        "zoom, hover and selection.</p>"
    )


def hazards_fallback(hazards: list[dict[str, Any]], limit: int = FALLBACK_ROWS) -> str:
    if not hazards:
        return '<p class="lnb-good">No hazards found in this trace.</p>'
    more = len(hazards) - limit
    items = "".join(
        f'<li><b style="color:{kind_colour(h["kind"])}">{escape(h["kind"])}</b> '
        f"{escape(' → '.join(h['descriptions']))}<br>{escape(h['message'])}"
        f"<br><i>fix: {escape(h['fix'])}</i></li>"
        for h in hazards[:limit]
    )
    tail = f"<p class='lnb-note'>and {more} more</p>" if more > 0 else ""
    return f"<ol>{items}</ol>{tail}"


def table_fallback(model: TimelineModel, limit: int = FALLBACK_ROWS) -> str:
    columns = model.columns
    order = np.argsort(columns["id"], kind="stable")[:limit]
    rows = "".join(
        f"<tr><td>#{int(columns['id'][row])}</td><td>{escape(model.lanes[columns['lane'][row]]['name'])}"
        f"</td><td>{columns['start'][row]:.2f} µs</td><td>{columns['duration'][row]:.2f} µs</td>"
        f"<td>{escape(model.texts[columns['text'][row]])}</td></tr>"
        for row in order
    )
    more = f"<p class='lnb-note'>first {limit} of {model.count}</p>" if model.count > limit else ""
    return (
        '<table class="lnb-fallback-table"><tr><th>id</th><th>lane</th><th>start</th>'
        f"<th>took</th><th>what</th></tr>{rows}</table>{more}"
    )


def diff_fallback(comparison: ArrayDiff | None, title: str = "", reason: str = "") -> str:
    if comparison is None:
        return f"<p><b>{escape(title)}</b></p><p class='lnb-note'>{escape(reason)}</p>"
    summary = comparison.summary()
    lines = [f"<p><b>{escape(summary['title'])}</b></p>"] if summary["title"] else []
    lines.append(
        f"<p>{comparison.count} of {comparison.size} elements differ; shape "
        f"{tuple(comparison.shape)}</p>"
    )
    if comparison.verdict:
        lines.append(f'<p class="lnb-bad">{escape(comparison.verdict)}</p>')
    if summary["errors"]:
        errors = summary["errors"]
        lines.append(
            f"<p>max abs error {escape(errors['max_abs'])} at {tuple(errors['max_abs_index'])}; "
            f"max rel error {escape(errors['max_rel'])} at {tuple(errors['max_rel_index'])}</p>"
        )
    names = comparison.names
    rows = "".join(
        f"<tr><td>{tuple(comparison.unravel(i))}</td><td>{escape(comparison.expected[i])}</td>"
        f"<td>{escape(comparison.actual[i])}</td></tr>"
        for i in comparison.differing[:FIRST_INDICES]
    )
    if rows:
        lines.append(
            f'<table class="lnb-fallback-table"><tr><th>index</th><th>{escape(names[0])}</th>'
            f"<th>{escape(names[1])}</th></tr>{rows}</table>"
        )
    return "".join(lines)


# -- pages ---------------------------------------------------------------------------------


def trace_header(trace: Trace, model: TimelineModel, title: str) -> str:
    meta = model.meta
    span = meta["extent"][1] - meta["extent"][0]
    staging = ", ".join(meta["staging"]) or "—"
    devices = ", ".join(meta["devices"]) or "—"
    verdict = (
        f'<span class="lnb-bad">{meta["hazards"]} hazard(s)</span>'
        if meta["hazards"]
        else '<span class="lnb-good">no hazards</span>'
    )
    return (
        f"<h1>{escape(title)}</h1>"
        f'<p class="lnb-info">device: {escape(devices)} · staging: {escape(staging)} · '
        f"capture: {escape(meta['capture'])} · {meta['commands']} commands, "
        f"{meta['syncs']} sync points on {meta['streams']} stream(s) over "
        f"{duration(span * 1000)} · "
        f"{verdict}</p>"
    )


def trace_body(
    page: StaticPage,
    trace: Trace,
    analysis: Analysis | None = None,
    *,
    title: str = "luisa_nb trace",
    stale_sections: bool = True,
) -> str:
    """Header, timeline, hazard list, command table and inspector of ``trace`` (and, with
    ``stale_sections``, the staged-vs-expected diff of every stale upload)."""
    analysis = analysis if analysis is not None else Analysis.of(trace)
    model = build_timeline(trace, analysis)
    state, buffers = timeline_state(model)
    trace_model = page.add_model(state, buffers)
    page.hazards = model.hazards
    comparisons = upload_array_diffs(trace, analysis)
    uploads = {}
    for command_id, comparison in comparisons.items():
        state, buffers = array_diff_state(comparison, embed=True)
        uploads[command_id] = page.add_model(state, buffers)
    page.uploads_note = (
        "no staged-vs-expected values for this command in this page (it embeds uploads "
        "that are stale or part of a hazard)"
    )
    parts = [
        trace_header(trace, model, title),
        "<h2>Timeline</h2>",
        page.mount("timeline", trace_model, timeline_fallback(model)),
        '<div class="lnb-grid"><div class="lnb-panel">',
        f"<h2>Hazards ({len(model.hazards)})</h2>",
        page.mount("hazards", trace_model, hazards_fallback(model.hazards)),
        '</div><div class="lnb-panel">',
        f"<h2>Commands ({model.meta['commands']}) and sync points ({model.meta['syncs']})</h2>",
        page.mount("table", trace_model, table_fallback(model)),
        "</div></div>",
        "<h2>Inspector</h2>",
        page.inspector(uploads, escape(IDLE_INSPECTOR)),
    ]
    stale = [i for i in model.meta["stale_uploads"] if i in uploads]
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


def trace_fragment(trace: Trace, analysis: Analysis | None = None) -> str:
    """The report's content as an HTML fragment (a notebook's ``text/html``)."""
    page = StaticPage()
    return page.fragment(trace_body(page, trace, analysis, title="luisa_nb trace"))


def view_fragment(
    view: str, state: dict[str, Any], buffers: dict[str, bytes], fallback: str
) -> str:
    """One renderer over one model, as an HTML fragment (a single widget's fallback)."""
    page = StaticPage()
    page.hazards = state.get("hazards", [])
    model_id = page.add_model(state, buffers)
    return page.fragment(page.mount(view, model_id, fallback))
