"""The plain-HTML views of a trace and of a diff, shown where scripts do not run (GitHub,
a notebook reopened untrusted, a browser with scripts off): the static picture, the
hazard list, the command table and a diff's first differing values. Static pages put
them inside their mounts, where the renderers replace them."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from luisa_nb.views.array_diff import FIRST_INDICES, ArrayDiff
from luisa_nb.views.html import cell, escape, finding_table, table
from luisa_nb.views.timeline import TimelineData


def timeline_picture(data: TimelineData) -> str:
    """The timeline as an ``<img>`` of the matplotlib figure (a PNG data URL), or a note
    where matplotlib is not installed."""
    try:
        from luisa_nb.views.figure import timeline_figure_png
    except ImportError:
        return (
            "<p class='lnb-note'>The picture of the timeline needs matplotlib (the "
            "<code>notebook</code> extra).</p>"
        )
    picture = base64.b64encode(timeline_figure_png(data)).decode("ascii")
    return (
        f'<img class="lnb-fallback-image" alt="timeline of {data.count} records" '
        f'src="data:image/png;base64,{picture}">'
    )


def timeline_fallback(data: TimelineData) -> str:
    lanes = ", ".join(escape(lane["name"]) for lane in data.lanes)
    where = "around the first hazard, as the timeline opens; " if data.hazards else ""
    return (
        f"{timeline_picture(data)}"
        f'<p class="lnb-note">The picture shows the trace {where}lanes from the top: '
        f"{lanes}. Run the page with scripts for zoom, hover and selection.</p>"
    )


def findings_anchor() -> str:
    """A new element id for a trace's finding list, where "and N more" links point."""
    return f"lnb-findings-{uuid.uuid4().hex[:12]}"


def hazards_fallback(findings: list[dict[str, Any]]) -> str:
    """The finding list, one row per place (:attr:`TimelineData.findings`)."""
    if not findings:
        return '<p class="lnb-good">No hazards found in this trace.</p>'
    return finding_table(findings)


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
    rows = [
        "<tr>"
        + cell(str(tuple(comparison.unravel(i))), numeric=True)
        + cell(escape(comparison.expected[i]), numeric=True)
        + cell(escape(comparison.actual[i]), numeric=True)
        + "</tr>"
        for i in comparison.differing[:FIRST_INDICES]
    ]
    if rows:
        header = [summary["index_name"], *comparison.names]
        lines.append(table(header, rows, (True, True, True), "lnb-fallback-table"))
    return "".join(lines)
