"""matplotlib figures of the whole-trace analyses in :mod:`luisa_nb.analysis.breakdown`:
where each stream's time went, its queue depth and the bytes uploads staged (stale ones
in the hazard red), and two traces compared by finding and by command. Each returns a
``Figure`` that a notebook shows as it is; importing this module imports matplotlib."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from luisa_nb.analysis.breakdown import (
    TraceComparison,
    queue_depth,
    staged_bytes,
    stream_breakdown,
)
from luisa_nb.views.theme import FG_MUTED, HAZARD, KIND_COLOURS, OK

if TYPE_CHECKING:
    from luisa_nb.analysis import AnalyzedTrace

_PARTS = (
    ("busy", "busy", dict(KIND_COLOURS)["dispatch"]),
    ("queued", "queued (submitted, not started)", dict(KIND_COLOURS)["wait"]),
    ("waiting_on_host", "waiting on the host", FG_MUTED.light),
)
MILLISECOND = 1e6


def breakdown_figure(trace: AnalyzedTrace) -> Figure:
    """Three panels: each stream's time split into busy, queued and waiting on the host;
    the queue depth over time; the bytes staged by uploads over time."""
    figure = Figure(figsize=(9.6, 7.2), layout="constrained")
    split, depth, staged = figure.subplots(3, 1)
    breakdown = stream_breakdown(trace)
    left = np.zeros(len(breakdown))
    for column, label, colour in _PARTS:
        values = breakdown[column].to_numpy(float) / MILLISECOND
        split.barh(breakdown["stream"], values, left=left, label=label, color=colour)
        left += values
    split.set_xlabel("ms")
    split.set_title("where each stream's time went")
    split.legend(loc="lower right", fontsize="small")
    for stream, rows in queue_depth(trace).groupby("stream", sort=True):
        depth.step(rows["time"] / MILLISECOND, rows["depth"], where="post", label=stream)
    depth.set_xlabel("ms from the trace's start")
    depth.set_ylabel("commands queued")
    depth.legend(loc="upper right", fontsize="small")
    bytes_staged = staged_bytes(trace)
    for stream, rows in bytes_staged.groupby("stream", sort=True):
        staged.step(rows["time"] / MILLISECOND, rows["total"] / 2**20, where="post", label=stream)
    stale = bytes_staged[bytes_staged["stale"]]
    staged.scatter(
        stale["time"] / MILLISECOND,
        stale["total"] / 2**20,
        color=HAZARD.light,
        zorder=3,
        label=f"stale upload ({len(stale)})",
    )
    staged.set_xlabel("ms from the trace's start")
    staged.set_ylabel("MiB staged")
    staged.legend(loc="upper left", fontsize="small")
    return figure


def comparison_figure(comparison: TraceComparison, commands: int = 10) -> Figure:
    """Two panels: each finding's count before and after; the ``commands`` kinds of
    command whose count changed most."""
    figure = Figure(figsize=(9.6, 6.4), layout="constrained")
    found, changed = figure.subplots(2, 1)
    findings = comparison.findings
    labels = [f"{row.kind}: {row.later}" for row in findings.itertuples()]
    positions = np.arange(len(findings))
    found.barh(positions - 0.2, findings["count_before"], 0.4, label="before", color=FG_MUTED.light)
    found.barh(positions + 0.2, findings["count_after"], 0.4, label="after", color=HAZARD.light)
    found.set_yticks(positions, labels, fontsize="small")
    found.set_title("findings")
    found.legend(loc="lower right", fontsize="small")
    rows = comparison.commands.reindex(
        comparison.commands["change"].abs().sort_values(ascending=False).index[:commands]
    )
    colours = [HAZARD.light if change > 0 else OK.light for change in rows["change"]]
    changed.barh(np.arange(len(rows)), rows["change"], color=colours)
    changed.set_yticks(np.arange(len(rows)), rows["command"], fontsize="small")
    changed.set_title("commands: count after minus before")
    return figure
