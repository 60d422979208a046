"""The HTML view of a :class:`~luisa_nb.analysis.comparison.Comparison`: one table,
arrays down, configurations across, differing values marked."""

from __future__ import annotations

import numpy as np

from luisa_nb.analysis.comparison import (
    FIRST_INDICES,
    ArrayDifference,
    Comparison,
    Run,
    index_text,
)
from luisa_nb.views.html import escape, hazard_kind, theme_style
from luisa_nb.views.theme import BORDER, HAZARD, MARK_STYLE, OK

_MARK = f"{MARK_STYLE};font-weight:bold"
_EQUAL = f"color:{OK.css()}"
_UNEQUAL = f"color:{HAZARD.css()};font-weight:bold"
_RULE = f"border-top:1px solid {BORDER.css()}"
_CELL = "padding:2px 8px;text-align:right;font-family:monospace"
SHOWN_ELEMENTS = 4
"""How many leading elements the HTML view shows of an array equal everywhere."""


def comparison_html(comparison: Comparison) -> str:
    """The configurations side by side, differing values marked, and each one's hazards."""
    configs = comparison.configs
    head = "".join(f"<th style='{_CELL}'>{escape(c)}</th>" for c in configs)
    rows = []
    for name in comparison.names:
        differences = [d for d in comparison.differences if d.name == name]
        indices = _shown_indices(comparison, name, differences)
        verdict = "<br>".join(_verdict_html(d) for d in differences)
        for position, index in enumerate(indices):
            cells = "".join(
                _value_cell(run.arrays.get(name), index, comparison.runs[0].arrays.get(name))
                for run in comparison.runs
            )
            lead = ""
            if position == 0:
                span = len(indices)
                lead = f"<td rowspan='{span}' style='padding:2px 8px'><b>{escape(name)}</b></td>"
                verdict_cell = f"<td rowspan='{span}' style='padding:2px 8px'>{verdict}</td>"
            else:
                verdict_cell = ""
            label = "" if index is None else index_text(index)
            border = f" style='{_RULE}'" if position == 0 else ""
            rows.append(
                f"<tr{border}>{lead}<td style='{_CELL}'>{label}</td>{cells}{verdict_cell}</tr>"
            )
    hazards = "".join(
        f"<li><code>{escape(run.config)}</code>: {_hazards_html(run)}</li>"
        for run in comparison.runs
    )
    summary = (
        "every array is equal under every configuration"
        if comparison.equal
        else "arrays differ; differing values are marked"
    )
    return (
        f"{theme_style()}<div class='lnb-compare'>"
        f"<p><b>luisa_nb comparison</b> of {', '.join(escape(c) for c in configs)} "
        f"(reference: <code>{escape(configs[0])}</code>): {summary}.</p>"
        f"<ul style='margin:0'>{hazards}</ul>"
        "<table style='border-collapse:collapse'>"
        f"<tr><th>array</th><th style='{_CELL}'>index</th>{head}"
        f"<th>against {escape(configs[0])}</th></tr>"
        f"{''.join(rows)}</table></div>"
    )


def _shown_indices(
    comparison: Comparison, name: str, differences: list[ArrayDifference]
) -> list[tuple[int, ...] | None]:
    """The differing indices of every configuration (first ones), else the first elements."""
    shown = list(dict.fromkeys(i for d in differences for i in d.first_indices))
    if shown:
        return sorted(shown)[:FIRST_INDICES]
    reference = next((r.arrays[name] for r in comparison.runs if name in r.arrays), None)
    if reference is None or reference.size == 0:
        return [None]
    count = min(SHOWN_ELEMENTS, reference.size)
    return [tuple(int(i) for i in np.unravel_index(flat, reference.shape)) for flat in range(count)]


def _value_cell(
    array: np.ndarray | None, index: tuple[int, ...] | None, reference: np.ndarray | None
) -> str:
    if array is None or index is None or array.shape != getattr(reference, "shape", None):
        text = "—" if array is None else f"{array.dtype}{list(array.shape)}"
        return f"<td style='{_CELL}'>{escape(text)}</td>"
    value = array[index]
    marked = reference is not None and not _same(value, reference[index])
    style = f"{_CELL};{_MARK}" if marked else _CELL
    return f"<td style='{style}'>{escape(_format(value))}</td>"


def _same(left: object, right: object) -> bool:
    if isinstance(left, np.floating) and np.isnan(left) and np.isnan(right):
        return True
    return bool(left == right)


def _format(value: object) -> str:
    if isinstance(value, np.floating):
        return f"{float(value):.7g}"
    return str(value.item() if isinstance(value, np.generic) else value)


def _verdict_html(difference: ArrayDifference) -> str:
    where = f"{escape(difference.config)}: "
    if difference.note:
        return f"{where}<span style='{_UNEQUAL}'>{escape(difference.note)}</span>"
    if difference.equal:
        return f"{where}<span style='{_EQUAL}'>equal</span>"
    return (
        f"{where}<span style='{_UNEQUAL}'>{difference.differing} of {difference.size} "
        f"differ</span>; max abs error {difference.max_abs_error:.6g}, max rel error "
        f"{difference.max_relative_error:.6g}"
    )


def _hazards_html(run: Run) -> str:
    if run.trace is None:
        return "not traced"
    hazards = run.trace.hazards
    if not hazards:
        return "no hazards"
    return ", ".join(
        f"{hazard_kind(h.kind.value)} (#{', #'.join(map(str, h.command_ids))})" for h in hazards
    )
