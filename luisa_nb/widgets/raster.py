"""A PNG picture of a timeline drawn with numpy alone: the fallback picture of static
pages where matplotlib is not installed (:mod:`luisa_nb.widgets.figure` draws the one
with axes, lane labels and a legend), and :func:`pixel_kinds`, the per-pixel summary of
the bars that both pictures draw.

Like ``static/timeline.js`` zoomed out to the whole trace: one colour per pixel column
per lane, host reads and writes as ticks on the host lane, and each hazard as a red arc
from the host write to the stale host read.
"""

from __future__ import annotations

import numpy as np

from luisa_nb.png import encode_png
from luisa_nb.widgets.model import HAZARD_COLOR, KINDS, TimelineModel

HOST_LANE_HEIGHT = 46
LANE_HEIGHT = 26
#: Which kind a pixel column shows when records of several kinds share it (higher wins).
PRIORITY = np.array([9, 9, 6, 5, 7, 2, 3, 3, 2, 1])
ARROW_LIMIT = 2000


def _rgb(color: str) -> np.ndarray:
    return np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)], np.uint8)


def padded_extent(model: TimelineModel) -> tuple[float, float]:
    """The trace's time span in µs with 2 % to spare on each side."""
    t0, t1 = model.meta["extent"]
    span = max(t1 - t0, 1e-3)
    return t0 - span * 0.02, t1 + span * 0.02


def pixel_kinds(model: TimelineModel, width: int, t0: float, t1: float) -> np.ndarray:
    """``(lanes, width)`` kind codes: per lane, the highest-priority kind of the records
    that cover each of ``width`` columns spanning ``t0..t1`` µs; -1 where none does.
    Vectorised (one pass per kind), so 100 000 records take milliseconds."""
    columns = model.columns
    lanes = len(model.lanes)
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


def timeline_png(model: TimelineModel, width: int = 960) -> bytes:
    """The whole timeline of ``model`` as a PNG, ``width`` pixels wide."""
    columns = model.columns
    lanes = len(model.lanes)
    height = HOST_LANE_HEIGHT + (lanes - 1) * LANE_HEIGHT + 2
    image = np.full((height, width, 3), 255, np.uint8)
    for lane in range(2, lanes, 2):
        top = HOST_LANE_HEIGHT + (lane - 1) * LANE_HEIGHT
        image[top : top + LANE_HEIGHT] = 246
    t0, t1 = padded_extent(model)
    scale = (width - 1) / (t1 - t0)
    colors = np.array([_rgb(color) for _, color in KINDS])

    best = pixel_kinds(model, width, t0, t1)
    for lane in range(lanes):
        top, bar = _bar_box(lane)
        painted = best[lane] >= 0
        image[top : top + bar, painted] = colors[best[lane][painted]]

    hosts = columns["start"] + columns["host"].astype(np.float64)
    with_host = ~np.isnan(hosts)
    marker_top = HOST_LANE_HEIGHT - 26
    for kind, offset in ((0, 0), (1, 5)):
        chosen = with_host & (columns["kind"] == kind)
        x = np.clip(((hosts[chosen] - t0) * scale).astype(np.int64), 0, width - 1)
        image[marker_top + offset : marker_top + offset + 6, x] = colors[kind]

    arrows = [h["arrow"] for h in model.hazards if h.get("arrow")][:ARROW_LIMIT]
    if arrows:
        ends = np.array(
            [
                [
                    (a["from"]["time"] - t0) * scale,
                    (a["to"]["time"] - t0) * scale,
                    _point_y(a["from"]["lane"], marker_top),
                    _point_y(a["to"]["lane"], marker_top),
                    a["from"]["lane"] == a["to"]["lane"] == 0,
                ]
                for a in arrows
            ]
        )
        x1, x2, y1, y2, same = (ends[:, k : k + 1] for k in range(5))
        cy = np.where(same > 0, 2.0, np.minimum(y1, y2) - 14)
        t = np.linspace(0, 1, 400)[None, :]
        xs = (1 - t) ** 2 * x1 + 2 * (1 - t) * t * (x1 + x2) / 2 + t**2 * x2
        ys = (1 - t) ** 2 * y1 + 2 * (1 - t) * t * cy + t**2 * y2
        red = _rgb(HAZARD_COLOR)
        for dx in (0, 1):
            for dy in (0, 1):
                px = np.clip(xs.astype(np.int64) + dx, 0, width - 1)
                py = np.clip(ys.astype(np.int64) + dy, 0, height - 1)
                image[py, px] = red
    return encode_png(image)


def _bar_box(lane: int) -> tuple[int, int]:
    if lane == 0:
        return HOST_LANE_HEIGHT - 12, 9
    return HOST_LANE_HEIGHT + (lane - 1) * LANE_HEIGHT + 4, LANE_HEIGHT - 8


def _point_y(lane: int, marker_top: int) -> float:
    return marker_top + 5 if lane == 0 else _bar_box(lane)[0] + 4
