"""The hazard summaries of :class:`~luisa_nb.views.timeline.TimelineData` as packed
columns, the form in which the live widgets receive them.

A loop with a bug yields thousands of hazards; as a JSON list of nested dicts they cost
1.7 MB per widget for 10,000 of them, and every dict is walked by ipywidgets looking for
buffers, serialised and parsed again. Packed they are about 40 bytes each, one buffer, and
``shared/columns.js`` (``decodeHazards``) turns them back into the same objects:
``{index, group, kind, command_ids, upload, arrow: {from, to} | null}``, each end of an
arrow ``{lane, time, command, label}``. Static pages keep the JSON list (they hold a
window of a trace, with few hazards).
"""

from __future__ import annotations

from typing import Any

import numpy as np

NONE = -1
"""A missing ``group`` or ``upload``."""
_ENDS = ("from", "to")
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("group", "<i4"),
    ("upload", "<i4"),
    ("ids_from", "<u4"),
    ("ids_count", "u1"),
    ("kind", "u1"),
    ("arrow", "u1"),
    *(
        (f"{end}_{name}", dtype)
        for end in _ENDS
        for name, dtype in (("time", "<f8"), ("command", "<i4"), ("lane", "<u2"), ("label", "u1"))
    ),
)


def pack_hazards(hazards: list[dict[str, Any]]) -> tuple[dict[str, Any], bytes]:
    """``hazards`` (the views' hazard summaries, in order) as a layout and one buffer:
    ``layout["columns"]`` gives each column's dtype, byte offset and length, ``kinds``
    and ``labels`` the texts that ``kind`` and the arrow labels index."""
    kinds: dict[str, int] = {}
    labels: dict[str, int] = {}
    values: dict[str, list[Any]] = {name: [] for name, _ in _COLUMNS}
    flat_ids: list[int] = []
    for hazard in hazards:
        ids = hazard["command_ids"]
        values["group"].append(NONE if hazard["group"] is None else hazard["group"])
        values["upload"].append(NONE if hazard["upload"] is None else hazard["upload"])
        values["ids_from"].append(len(flat_ids))
        values["ids_count"].append(len(ids))
        values["kind"].append(kinds.setdefault(hazard["kind"], len(kinds)))
        flat_ids.extend(ids)
        arrow = hazard["arrow"]
        values["arrow"].append(arrow is not None)
        for end in _ENDS:
            point = arrow[end] if arrow is not None else None
            values[f"{end}_time"].append(point["time"] if point else 0.0)
            values[f"{end}_command"].append(point["command"] if point else NONE)
            values[f"{end}_lane"].append(point["lane"] if point else 0)
            label = point["label"] if point else ""
            values[f"{end}_label"].append(labels.setdefault(label, len(labels)))
    columns = [(name, np.array(values[name], dtype)) for name, dtype in _COLUMNS]
    columns.append(("ids", np.array(flat_ids, "<i4")))
    layout: dict[str, dict[str, Any]] = {}
    parts, offset = [], 0
    for name, column in columns:
        raw = column.tobytes()
        layout[name] = {
            "dtype": column.dtype.str.lstrip("<|"),
            "offset": offset,
            "length": column.size,
        }
        parts.append(raw + b"\0" * (-len(raw) % 8))
        offset += len(parts[-1])
    return {
        "count": len(hazards),
        "kinds": list(kinds),
        "labels": list(labels),
        "columns": layout,
    }, b"".join(parts)
