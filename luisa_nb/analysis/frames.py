"""Findings as a table, a row per hazard, linked to the trace table
(:meth:`~luisa_nb.recording.trace.Trace.to_arrow`) by command id. docs/data.md lists
the columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from luisa_nb.analysis.hazards import Hazard
from luisa_nb.recording.frames import needed, nullable_pandas_types
from luisa_nb.recording.naming import describe

if TYPE_CHECKING:
    import pandas
    import pyarrow

    from luisa_nb.recording.trace import Trace


def findings_arrow(trace: Trace, hazards: Sequence[Hazard]) -> pyarrow.Table:
    """``hazards`` of ``trace`` as an Arrow table. ``earlier`` and ``later`` describe the
    two commands without their ids, so a finding can be matched across traces."""
    pa = needed("pyarrow", "findings as an Arrow table")
    origin = trace.metadata.started
    ids = {command for hazard in hazards for command in hazard.command_ids}
    described = {
        record.id: describe(trace, record).split(" ", 1)[1]
        for record in trace.commands
        if record.id in ids
    }
    moments = sorted({name for hazard in hazards for name in hazard.times})
    columns = {
        "finding": pa.array(range(len(hazards)), pa.int64()),
        "kind": pa.array([hazard.kind.value for hazard in hazards], pa.string()),
        "command_ids": pa.array([list(h.command_ids) for h in hazards], pa.list_(pa.int64())),
        "first_command": pa.array([h.command_ids[0] for h in hazards], pa.int64()),
        "last_command": pa.array([h.command_ids[-1] for h in hazards], pa.int64()),
        "earlier": pa.array([described[h.command_ids[0]] for h in hazards], pa.string()),
        "later": pa.array([described[h.command_ids[-1]] for h in hazards], pa.string()),
        "buffer": pa.array([None if h.device is None else h.device.buffer for h in hazards]),
        "buffer_offset": pa.array([None if h.device is None else h.device.offset for h in hazards]),
        "buffer_nbytes": pa.array([None if h.device is None else h.device.nbytes for h in hazards]),
        "host_name": pa.array(
            [None if h.host is None else h.host.name for h in hazards], pa.string()
        ),
        "host_address": pa.array([None if h.host is None else h.host.address for h in hazards]),
        "host_nbytes": pa.array([None if h.host is None else h.host.nbytes for h in hazards]),
        "message": pa.array([hazard.message for hazard in hazards], pa.string()),
        "fix": pa.array([hazard.fix for hazard in hazards], pa.string()),
        **{
            f"time_{name}": pa.array(
                [None if name not in h.times else h.times[name] - origin for h in hazards],
                pa.int64(),
            )
            for name in moments
        },
    }
    return pa.table(columns)


def findings_pandas(trace: Trace, hazards: Sequence[Hazard]) -> pandas.DataFrame:
    """:func:`findings_arrow` as a pandas DataFrame."""
    needed("pandas", "findings as a DataFrame")
    return findings_arrow(trace, hazards).to_pandas(types_mapper=nullable_pandas_types)
