"""The HTML kit every view is written with: escaping, JSON inside ``<script>``, tables,
the finding list and the command table.

Every name in every view goes through :func:`escape`, so that it shows as the text it
is. Styles are inline and read the theme's ``--lnb-*`` properties with their light
values (:mod:`luisa_nb.views.theme`), so a fragment reads well in JupyterLab, in
nbconvert output and on GitHub, which drops ``<style>`` elements.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from luisa_nb.analysis.formatting import duration
from luisa_nb.views.theme import BORDER, FLAGGED_STYLE, kind_colour, theme_css
from luisa_nb.views.timeline import KIND_CODES, STATUSES, TimelineData

FALLBACK_ROWS = 100
"""How many hazards or records a list or table shows before it says how many more."""

_RULE = f"border-top:1px solid {BORDER.css()}"
_CELL = f"padding:2px 8px;{_RULE};text-align:left;vertical-align:top"
_NUMBER = f"padding:2px 8px;{_RULE};text-align:right;font-family:monospace"
_SCRIPT_JSON_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def shown_text(value: Any) -> str:
    """``value`` as ``str`` with each lone surrogate (a name read from a file may hold
    one; no UTF-8 page and no font can) as U+FFFD."""
    return str(value).encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def escape(text: Any) -> str:
    """``text`` (any value, as :func:`shown_text`) as HTML text or a quoted attribute's
    value."""
    return html.escape(shown_text(text), quote=True)


def script_json(value: Any) -> str:
    """``value`` as JSON to put inside a ``<script>`` element. No string in it can end
    the element or open a comment (``</script>``, ``<!--``): ``<``, ``>`` and ``&`` are
    written as ``\\u`` escapes, as is every non-ASCII character (U+2028 and U+2029
    included), so the same text is valid JSON, JavaScript and HTML."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).translate(_SCRIPT_JSON_ESCAPES)


def theme_style() -> str:
    """A ``<style>`` element with the theme's properties, so that HTML outside the widgets
    follows JupyterLab's theme too."""
    return f"<style>{theme_css()}</style>"


def cell(content: str, *, numeric: bool = False, style: str = "") -> str:
    """A ``<td>``: ``content`` is HTML (escape text first); numbers right-aligned in
    monospace."""
    return (
        f"<td style='{_NUMBER if numeric else _CELL}{';' + style if style else ''}'>{content}</td>"
    )


def table(
    header: Sequence[str], rows: Iterable[str], numeric: Sequence[bool] = (), css_class: str = ""
) -> str:
    """A table of ``rows`` (each a ``<tr>`` of :func:`cell`) under ``header`` (text)."""
    heads = "".join(
        f"<th style='{_NUMBER if i < len(numeric) and numeric[i] else _CELL}'>{escape(h)}</th>"
        for i, h in enumerate(header)
    )
    classes = f" class='{css_class}'" if css_class else ""
    return (
        f"<table{classes} style='border-collapse:collapse;margin:4px 0'><tr>{heads}</tr>"
        f"{''.join(rows)}</table>"
    )


def hazard_kind(kind: str) -> str:
    """A hazard's kind in bold, in its colour (amber for a latent stale upload, else red)."""
    return f"<span style='color:{kind_colour(kind)};font-weight:bold'>{escape(kind)}</span>"


def finding_table(
    findings: Sequence[Mapping[str, Any]], limit: int = FALLBACK_ROWS, more_link: str = ""
) -> str:
    """The findings, one row per place in the program (:func:`~luisa_nb.views.timeline.
    finding_summary`): its kind and count, what its commands do and which commands, the
    first occurrence's explanation and fix. Past ``limit`` rows it says how many more,
    as a link to ``more_link`` (an ``href``) when given."""
    rows = [
        "<tr>"
        + cell(hazard_kind(f["kind"]) + _times(f["count"]))
        + cell(f"{escape(f['place'])}<br><small>{escape(f['occurrence_text'])}</small>")
        + cell(escape(f["message"]))
        + cell(f"<i>{escape(f['fix'])}</i>")
        + "</tr>"
        for f in findings[:limit]
    ]
    header = ["kind", "commands", "message", "fix"]
    return table(header, rows, css_class="lnb-findings") + _more(
        len(findings), limit, more_link, "finding"
    )


def command_table(
    data: TimelineData, limit: int = FALLBACK_ROWS, css_class: str = "lnb-fallback-table"
) -> str:
    """The command table: every command and sync point in issue order, the moments it ran
    and touched host memory (µs after the trace started) and its status; rows of the
    commands a hazard names are highlighted."""
    columns = data.columns
    order = np.argsort(columns["id"], kind="stable")[:limit]
    flagged = {command for hazard in data.hazards for command in hazard["command_ids"]}
    host_moment = {KIND_CODES["upload"]: "read", KIND_CODES["download"]: "written"}
    rows = []
    for row in order:
        record_id = int(columns["id"][row])
        start = float(columns["start"][row])
        host_offset = float(columns["host"][row])
        host = "" if math.isnan(host_offset) else host_moment.get(int(columns["kind"][row]), "")
        mark = FLAGGED_STYLE if record_id in flagged else ""
        rows.append(
            "<tr>"
            + cell(escape(f"#{record_id} {data.texts[columns['text'][row]]}"), style=mark)
            + cell(escape(data.lanes[columns["lane"][row]]["name"]))
            + cell(str(int(columns["submission"][row]) or ""), numeric=True)
            + cell(f"{start:.1f}", numeric=True)
            + cell(f"{float(columns['duration'][row]):.1f}", numeric=True)
            + cell(host)
            + cell(f"{start + host_offset:.1f}" if host else "", numeric=True)
            + cell(escape(STATUSES[columns["status"][row]]))
            + "</tr>"
        )
    header = ["record", "lane", "list", "start µs", "took µs", "host", "at µs", "status"]
    numeric = (False, False, True, True, True, False, True)
    return table(header, rows, numeric, css_class) + _more(data.count, limit)


def trace_facts(meta: Mapping[str, Any]) -> str:
    """One line about a trace (its :attr:`TimelineData.meta`): device, staging, capture,
    how many records on how many streams over how long, and whether it has hazards (how
    many, and at how many places in the program)."""
    span = meta["extent"][1] - meta["extent"][0]
    hazards = meta["hazards"]
    places = meta.get("findings", hazards)
    where = "" if places == hazards else f" at {places} place(s)"
    verdict = (
        f'<b class="lnb-bad">{hazards} hazard(s){where}</b>'
        if hazards
        else '<b class="lnb-good">no hazards</b>'
    )
    pending = meta.get("pending_note")
    warning = f'<br><b class="lnb-bad lnb-pending">{escape(pending)}</b>' if pending else ""
    return (
        f"device: {escape(', '.join(meta['devices']) or '—')} · staging: "
        f"{escape(', '.join(meta['staging']) or '—')} · capture: {escape(meta['capture'])} · "
        f"{meta['commands']} commands, {meta['syncs']} sync points on {meta['streams']} "
        f"stream(s) over {duration(span * 1000)} · {verdict}{warning}"
    )


def _times(count: int) -> str:
    """A finding's count in bold after its kind; nothing for one occurrence."""
    return f" <b>\N{MULTIPLICATION SIGN}{count}</b>" if count > 1 else ""


def _more(count: int, limit: int, link: str = "", noun: str = "") -> str:
    if count <= limit:
        return ""
    if link:
        nouns = f" {noun}s" if noun else ""
        return (
            f"<p class='lnb-note lnb-more'><a href='{escape(link)}'>and {count - limit} "
            f"more{nouns}</a> in the viewer below</p>"
        )
    return f"<p class='lnb-note'>the first {limit} of {count}</p>"
