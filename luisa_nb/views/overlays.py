"""What the timeline draws over its bars, as JSON: user ranges, command-list brackets,
event arrows and what the host did between the records (compiles, the user's Python).

Times are µs from the view data's origin, lanes are indices into ``summary["lanes"]``.
Everything here is worked out with numpy over the view data's columns, so a trace of 100k
records costs milliseconds; the number of items follows the number of ranges, command
lists of several commands, waits and gaps, not of records.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from luisa_nb.analysis.formatting import duration
from luisa_nb.recording import SyncKind, SyncRecord, Trace
from luisa_nb.recording.ranges import NO_RANGE

HOST_LANE = 0
MIN_PYTHON_GAP_US = 10.0
PYTHON_GAP_SHARE = 0.005
"""A gap of the host is drawn as Python time when it is at least this share of the
trace's extent (and :data:`MIN_PYTHON_GAP_US`)."""


def range_summaries(
    trace: Trace, ranges: np.ndarray, lanes: np.ndarray, starts: np.ndarray, ends: np.ndarray,
    origin: int,
) -> list[dict[str, Any]]:  # fmt: skip
    """Per range of ``trace``: name, depth, parent, its host interval, and per stream lane
    the span from the first to the last of its records there (nested ranges' included).

    ``ranges``, ``lanes``, ``starts`` and ``ends`` are per-record columns: innermost range,
    lane, and drawn start and end (µs)."""
    records = trace.ranges
    if not records:
        return []
    lane_count = int(lanes.max()) + 1 if lanes.size else 1
    low = np.full((len(records), lane_count), np.inf)
    high = np.full((len(records), lane_count), -np.inf)
    parents = np.array([NO_RANGE if r.parent is None else r.parent for r in records], np.int64)
    on_streams = lanes != HOST_LANE
    current = np.where(on_streams, ranges, NO_RANGE)
    while True:
        inside = current >= 0
        if not inside.any():
            break
        np.minimum.at(low, (current[inside], lanes[inside]), starts[inside])
        np.maximum.at(high, (current[inside], lanes[inside]), ends[inside])
        current = np.where(inside, parents[np.maximum(current, 0)], NO_RANGE)
    stop = trace.metadata.stopped
    out = []
    for record in records:
        end = record.end if record.end is not None else stop or record.begin
        row_low, row_high = low[record.id], high[record.id]
        spans = [
            [lane, float(row_low[lane]), float(row_high[lane])]
            for lane in np.flatnonzero(np.isfinite(row_low)).tolist()
        ]
        out.append(
            {
                "id": record.id,
                "name": record.name,
                "depth": record.depth,
                "parent": record.parent,
                "host": [(record.begin - origin) / 1000.0, (end - origin) / 1000.0],
                "spans": spans,
            }
        )
    return out


def list_summaries(
    submissions: np.ndarray,
    lanes: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    rows: np.ndarray | None = None,
    *,
    single: bool = False,
) -> list[dict[str, Any]]:
    """A bracket per command list of two commands or more (of one or more with
    ``single``): its lane, submission number, the start of its first command and the end
    of its last, and how many it holds. ``rows`` (a mask) limits it to those rows.

    ``submissions`` is 0 for sync points, which belong to no list."""
    commands = submissions > 0
    if rows is not None:
        commands &= rows
    if not commands.any():
        return []
    numbers, inverse, counts = np.unique(
        submissions[commands], return_inverse=True, return_counts=True
    )
    low = np.full(numbers.size, np.inf)
    high = np.full(numbers.size, -np.inf)
    np.minimum.at(low, inverse, starts[commands])
    np.maximum.at(high, inverse, ends[commands])
    lane_of = np.zeros(numbers.size, np.int64)
    lane_of[inverse] = lanes[commands]
    several = np.flatnonzero(counts > (0 if single else 1))
    return [
        {
            "lane": int(lane_of[k]),
            "submission": int(numbers[k]),
            "start": float(low[k]),
            "end": float(high[k]),
            "commands": int(counts[k]),
        }
        for k in several.tolist()
    ]


def event_links(
    syncs: list[SyncRecord], lane_of: dict[int, int], origin: int
) -> list[dict[str, Any]]:
    """An arrow from each event signal to each wait on that event that follows it: the
    latest signal of the event issued before the wait."""
    latest: dict[int, SyncRecord] = {}
    links = []
    for record in sorted(syncs, key=lambda sync: sync.seq):
        if record.event is None or record.stream is None:
            continue
        if record.kind is SyncKind.SIGNAL:
            latest[record.event] = record
        elif record.kind is SyncKind.WAIT and record.event in latest:
            signal = latest[record.event]
            links.append(
                {
                    "event": record.event,
                    "from": _end_point(signal, lane_of, origin),
                    "to": _end_point(record, lane_of, origin),
                }
            )
    return links


def _end_point(record: SyncRecord, lane_of: dict[int, int], origin: int) -> dict[str, Any]:
    moment = record.completed if record.completed is not None else record.issued
    return {"lane": lane_of[record.stream], "time": (moment - origin) / 1000.0, "record": record.id}


def host_activity(
    trace: Trace, begins: np.ndarray, ends: np.ndarray, origin: int, extent: float
) -> list[dict[str, Any]]:
    """Blocks on the host lane: each kernel compile (or cached load), and each gap between
    what the host was recorded doing (from ``begins`` to ``ends``, host times; the
    compiles are added here) long enough to be the user's Python."""
    blocks = [
        {
            "start": (record.begin - origin) / 1000.0,
            "end": (record.end - origin) / 1000.0,
            "label": record.label,
            "kind": "compile",
        }
        for record in trace.compiles
    ]
    extra = [(r.begin, r.end) for r in trace.compiles]
    if trace.metadata.started:
        extra.append((trace.metadata.started, trace.metadata.started))
    extra_spans = np.array(extra, np.int64).reshape(-1, 2)
    starts = np.concatenate([np.asarray(begins, np.int64), extra_spans[:, 0]])
    stops = np.concatenate([np.asarray(ends, np.int64), extra_spans[:, 1]])
    if not starts.size:
        return blocks
    order = np.argsort(starts, kind="stable")
    reach = np.maximum.accumulate(stops[order])
    gaps_from, gaps_to = reach[:-1], starts[order][1:]
    shortest = max(MIN_PYTHON_GAP_US, PYTHON_GAP_SHARE * extent) * 1000.0
    for begin, end in zip(
        gaps_from[gaps_to - gaps_from >= shortest].tolist(),
        gaps_to[gaps_to - gaps_from >= shortest].tolist(),
        strict=True,
    ):
        blocks.append(
            {
                "start": (begin - origin) / 1000.0,
                "end": (end - origin) / 1000.0,
                "label": f"python {duration(end - begin)}",
                "kind": "python",
            }
        )
    blocks.sort(key=lambda block: block["start"])
    return blocks
