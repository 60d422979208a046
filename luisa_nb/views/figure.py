"""The timeline as a matplotlib figure: the one static picture of a trace, which static
pages, exports, the report and every widget's ``text/html`` fallback show where scripts
do not run (GitHub, a notebook reopened untrusted, a browser with scripts off).

A time axis with its unit, one row per lane with its name, bars coloured by kind, host
reads (▼) and writes (▲) on the host lane, each hazard as a red arrow from the host write
to the stale host read, and a legend. Bars are drawn per column of pixels
(:func:`pixel_kinds`) as one collection, so the cost does not grow with the number of
records. Importing this module imports matplotlib; callers import it lazily.
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle
from matplotlib.path import Path

from luisa_nb.recording.records import TIMES_NOT_REPORTED
from luisa_nb.views.html import shown_text
from luisa_nb.views.theme import HAZARD, KIND_COLOURS, PICTURE_GRID, PICTURE_STRIPE
from luisa_nb.views.timeline import HOST_LANE, TimelineData

WIDTH_PX = 960
DPI = 100
COLUMNS = 1000
"""Time columns the bars are summarised into (about one per pixel of the axes)."""
ARROW_LIMIT = 200
MARKER_Y = -0.22
"""Where host read and write markers sit, relative to the host lane's centre."""
ARC_TOP = -1.3
"""The control point of an arrow between two host moments (the arc peaks halfway)."""
CURVE = [Path.MOVETO, Path.CURVE3, Path.CURVE3]
UNTIMED_FILL = "#d9d9d9"
UNTIMED_EDGE = "#555555"
"""A command list whose times were not reported: a neutral block, not kind-coloured bars."""
UNITS = ((1e6, "s"), (1e3, "ms"), (1.0, "µs"))
#: Which kind a pixel column shows when records of several kinds share it (higher wins):
#: transfers over dispatches over sync points, as in the browser's timeline.
PRIORITY = np.array([9, 9, 6, 5, 7, 2, 3, 3, 2, 1])


def _unit(span_us: float) -> tuple[float, str]:
    for size, name in UNITS:
        if span_us >= size:
            return size, name
    return UNITS[-1]


def padded_extent(data: TimelineData) -> tuple[float, float]:
    """The trace's time span in µs with 2 % to spare on each side."""
    t0, t1 = data.meta["extent"]
    span = max(t1 - t0, 1e-3)
    return t0 - span * 0.02, t1 + span * 0.02


def opening_view(data: TimelineData) -> tuple[float, float]:
    """The span in µs the timeline opens on, as the live view does: the first hazard's
    arrow and commands with 15 % to spare on each side, else the whole trace."""
    for hazard in data.hazards:
        times = []
        if hazard.get("arrow"):
            times += [hazard["arrow"]["from"]["time"], hazard["arrow"]["to"]["time"]]
        rows = np.flatnonzero(np.isin(data.columns["id"], hazard["command_ids"]))
        starts = data.columns["start"][rows]
        times += [*starts.tolist(), *(starts + data.columns["duration"][rows]).tolist()]
        if times:
            low, high = min(times), max(times)
            pad = max(high - low, 1e-3) * 0.15
            return low - pad, high + pad
    return padded_extent(data)


def pixel_kinds(data: TimelineData, width: int, t0: float, t1: float) -> np.ndarray:
    """``(lanes, width)`` kind codes: per lane, the highest-priority kind of the records
    that cover each of ``width`` columns spanning ``t0..t1`` µs; -1 where none does.
    Vectorised (one pass per kind), so 100 000 records take milliseconds."""
    columns = data.columns
    lanes = len(data.lanes)
    scale = (width - 1) / max(t1 - t0, 1e-9)
    start = columns["start"]
    first = np.clip(((start - t0) * scale).astype(np.int64), 0, width - 1)
    last = np.clip(((start + columns["duration"] - t0) * scale).astype(np.int64), 0, width - 1)
    cell = columns["lane"].astype(np.int64) * (width + 1)
    kinds = np.full((lanes, width), -1, np.int64)
    for kind in np.argsort(PRIORITY, kind="stable"):
        rows = columns["kind"] == kind
        if not rows.any():
            continue
        edges = np.zeros(lanes * (width + 1), np.int64)
        np.add.at(edges, cell[rows] + first[rows], 1)
        np.add.at(edges, cell[rows] + last[rows] + 1, -1)
        covered = np.cumsum(edges.reshape(lanes, width + 1), axis=1)[:, :width] > 0
        kinds[covered] = kind
    return kinds


def timeline_figure(data: TimelineData) -> Figure:
    """The timeline of ``data`` as it opens (:func:`opening_view`: on the first hazard,
    else whole), :data:`WIDTH_PX` pixels wide at :data:`DPI`."""
    lanes = len(data.lanes)
    figure = Figure(figsize=(WIDTH_PX / DPI, 1.7 + 0.42 * lanes), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    t0, t1 = opening_view(data)
    size, unit = _unit(t1 - t0)
    to_axis = 1.0 / size

    kinds = pixel_kinds(data, COLUMNS, t0, t1)
    step = (t1 - t0) / (COLUMNS - 1)
    boxes, colours = [], []
    palette = [colour for _, colour in KIND_COLOURS]
    for lane in range(lanes):
        row = kinds[lane]
        starts = np.flatnonzero(np.diff(row, prepend=-2) != 0)
        ends = np.append(starts[1:], COLUMNS)
        top, bottom = (-0.05, 0.3) if lane == HOST_LANE else (lane - 0.32, lane + 0.32)
        for first, end in zip(starts, ends, strict=True):
            if row[first] < 0:
                continue
            x0 = (t0 + first * step) * to_axis
            x1 = (t0 + end * step) * to_axis
            boxes.append([(x0, top), (x1, top), (x1, bottom), (x0, bottom)])
            colours.append(palette[row[first]])
    if boxes:
        axes.add_collection(PolyCollection(boxes, facecolors=colours, linewidths=0))

    handles = [
        Patch(color=palette[code], label=name)
        for code, (name, _) in enumerate(KIND_COLOURS)
        if (data.columns["kind"] == code).any()
    ]
    if _draw_untimed(axes, data, t0, t1, to_axis):
        handles.append(
            Patch(facecolor=UNTIMED_FILL, edgecolor=UNTIMED_EDGE, label=TIMES_NOT_REPORTED)
        )
    columns = data.columns
    hosts = columns["start"] + columns["host"].astype(np.float64)
    for code, marker, label in ((0, "v", "host read"), (1, "^", "host write")):
        chosen = ~np.isnan(hosts) & (columns["kind"] == code)
        if not chosen.any():
            continue
        cells = np.unique(np.round((hosts[chosen] - t0) / step))
        cells = cells[(cells >= 0) & (cells < COLUMNS)]  # the moments in view
        axes.scatter(
            (t0 + cells * step) * to_axis,
            np.full(cells.size, MARKER_Y),
            s=28,
            marker=marker,
            color=palette[code],
            linewidths=0,
            zorder=3,
        )
        handles.append(
            Line2D([], [], marker=marker, linestyle="", color=palette[code], label=label)
        )

    arrows = [h["arrow"] for h in data.hazards if h.get("arrow")][:ARROW_LIMIT]
    for arrow in arrows:
        (x1, y1), (x2, y2) = (
            (point["time"] * to_axis, MARKER_Y if point["lane"] == HOST_LANE else point["lane"])
            for point in (arrow["from"], arrow["to"])
        )
        bend = ARC_TOP if y1 == y2 == MARKER_Y else min(y1, y2) - 0.45
        curve = Path([(x1, y1), ((x1 + x2) / 2, bend), (x2, y2)], CURVE)
        axes.add_patch(
            FancyArrowPatch(
                path=curve,
                arrowstyle="-|>",
                mutation_scale=14,
                linewidth=2,
                color=HAZARD.light,
                zorder=4,
            )
        )
    if arrows:
        handles.append(Line2D([], [], color=HAZARD.light, linewidth=2, label="hazard"))

    for lane in range(1, lanes, 2):
        axes.axhspan(lane - 0.5, lane + 0.5, color=PICTURE_STRIPE, linewidth=0, zorder=0)
    axes.set_xlim(t0 * to_axis, t1 * to_axis)
    axes.set_ylim(lanes - 0.5, -0.85)
    names = [shown_text(lane["name"]) for lane in data.lanes]  # never mathtext: "$x$" stays
    axes.set_yticks(range(lanes), names, fontsize=8, parse_math=False)
    axes.set_xlabel(f"time since the trace started ({unit})", fontsize=8)
    axes.tick_params(axis="x", labelsize=8)
    axes.grid(axis="x", color=PICTURE_GRID, linewidth=0.6)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(len(handles), 8) or 1,
        frameon=False,
        fontsize=8,
    )
    return figure


def _draw_untimed(axes, data: TimelineData, t0: float, t1: float, to_axis: float) -> int:
    """One outlined block per command list whose times its runtime did not report, over
    its commands' bars, labelled where it is wide enough; how many are in view."""
    drawn = 0
    for block in data.overlays.get("untimed", []):
        start, end = max(block["start"], t0), min(block["end"], t1)
        if end < start:
            continue
        lane = block["lane"]
        top = -0.05 if lane == HOST_LANE else lane - 0.32
        width = max(end - start, (t1 - t0) * 2 / COLUMNS)
        axes.add_patch(
            Rectangle(
                (start * to_axis, top),
                width * to_axis,
                0.64,
                facecolor=UNTIMED_FILL,
                edgecolor=UNTIMED_EDGE,
                linewidth=0.8,
                zorder=2,
            )
        )
        if width / (t1 - t0) > 0.3:
            count = block["commands"]
            text = f"{count} command{'s' if count != 1 else ''}: {TIMES_NOT_REPORTED}"
            axes.text(
                (start + width / 2) * to_axis, lane, text, ha="center", va="center",
                fontsize=7, color=UNTIMED_EDGE, zorder=3, parse_math=False,
            )  # fmt: skip
        drawn += 1
    return drawn


def timeline_figure_png(data: TimelineData) -> bytes:
    """:func:`timeline_figure` as PNG bytes; the same view data gives the same bytes (the
    file carries no software version or time)."""
    buffer = io.BytesIO()
    timeline_figure(data).savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
