"""A trace as one table: a row per command and a row per sync point, as Apache Arrow
(and from it pandas), for analyses past one notebook. docs/data.md lists the columns.

pyarrow and pandas are the optional extra ``luisa_nb[data]``; asking for a table
without them raises :class:`~luisa_nb.errors.MissingDependencyError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.errors import MissingDependencyError
from luisa_nb.recording.ranges import NO_RANGE, innermost_ranges
from luisa_nb.recording.recorder import MISSING, STATUSES
from luisa_nb.recording.records import DeviceRange, RangeRecord, SyncRecord
from luisa_nb.recording.table import KINDS, POLICIES

if TYPE_CHECKING:
    import pandas
    import pyarrow

    from luisa_nb.recording.trace import Trace

TIME_COLUMNS = (
    "enqueued",
    "submitted",
    "started",
    "finished",
    "host_read",
    "host_write",
    "issued",
    "completed",
)
"""Nanoseconds from the trace's start; null where the moment is not known or not part
of that kind of row (``issued``/``completed`` belong to sync points)."""


def needed(module: str, feature: str) -> ModuleType:
    """Import an optional module of the ``data`` extra, or say how to install it."""
    try:
        return import_module(module)
    except ImportError as error:
        raise MissingDependencyError(
            f"{feature} needs {module} ({error}); install it with pip install 'luisa_nb[data]'"
        ) from None


def trace_arrow(trace: Trace) -> pyarrow.Table:
    """The commands and sync points of ``trace`` as one Arrow table, commands first (in
    submission order), then sync points (in the order the host issued them)."""
    pa = needed("pyarrow", "a trace as an Arrow table")
    commands = _command_columns(trace)
    sync_records = trace.syncs
    issued = np.array([sync.issued for sync in sync_records], np.int64)
    moments = np.concatenate([trace.table.numbers["enqueued"], issued])
    paths = _range_paths(trace, trace.ranges, moments)
    syncs = _sync_columns(trace, sync_records)
    command_count = len(commands["id"])
    commands["range_path"], syncs["range_path"] = paths[:command_count], paths[command_count:]
    columns = {
        name: pa.array([*commands[name], *syncs[name]], type=_COLUMN_TYPES[name](pa))
        for name in commands
    }
    return pa.table(columns)


def trace_pandas(trace: Trace) -> pandas.DataFrame:
    """:func:`trace_arrow` as a pandas DataFrame (times as nullable ``Int64``)."""
    needed("pandas", "a trace as a DataFrame")
    return trace_arrow(trace).to_pandas(types_mapper=nullable_pandas_types)


def nullable_pandas_types(arrow_type: Any) -> Any:
    import pandas
    import pyarrow

    if arrow_type == pyarrow.int64():
        return pandas.Int64Dtype()
    return None


def _command_columns(trace: Trace) -> dict[str, list[Any]]:
    table = trace.table
    numbers = table.numbers
    count = len(table)
    origin = trace.metadata.started

    def times(name: str) -> list[int | None]:
        column = numbers[name]
        shifted = (column - origin).tolist()
        return [
            None if raw == MISSING else value
            for raw, value in zip(column.tolist(), shifted, strict=True)
        ]

    devices = _device_range_columns(trace, table.objects["device_ranges"])
    hosts = table.objects["host"]
    nothing = [None] * count
    return {
        "record": ["command"] * count,
        "id": numbers["id"].tolist(),
        "seq": numbers["seq"].tolist(),
        "kind": [KINDS[code].value for code in numbers["kind"].tolist()],
        "stream": numbers["stream"].tolist(),
        "stream_name": _stream_names(trace, numbers["stream"].tolist()),
        "backend": _stream_devices(trace, numbers["stream"].tolist()),
        "submission": numbers["submission"].tolist(),
        "index": numbers["index"].tolist(),
        "label": list(table.objects["label"]),
        "policy": [POLICIES[code] for code in numbers["staging"].tolist()],
        "status": [STATUSES[code].value for code in numbers["status"].tolist()],
        "error": list(table.objects["error"]),
        **{name: times(name) for name in TIME_COLUMNS[:6]},
        "issued": nothing,
        "completed": nothing,
        **devices,
        "host_name": [None if host is None else host.name for host in hosts],
        "host_address": [None if host is None else host.address for host in hosts],
        "host_nbytes": [None if host is None else host.nbytes for host in hosts],
        "host_dtype": [None if host is None else host.dtype for host in hosts],
        "host_shape": [None if host is None else list(host.shape) for host in hosts],
        "event": nothing,
        "covers": nothing,
    }


def _sync_columns(trace: Trace, syncs: Sequence[SyncRecord]) -> dict[str, list[Any]]:
    count = len(syncs)
    origin = trace.metadata.started
    nothing = [None] * count
    streams = [sync.stream for sync in syncs]
    return {
        "record": ["sync"] * count,
        "id": [sync.id for sync in syncs],
        "seq": [sync.seq for sync in syncs],
        "kind": [sync.kind.value for sync in syncs],
        "stream": streams,
        "stream_name": _stream_names(trace, streams),
        "backend": _stream_devices(trace, streams),
        "submission": nothing,
        "index": nothing,
        "label": nothing,
        "policy": nothing,
        "status": [sync.status.value for sync in syncs],
        "error": [sync.error for sync in syncs],
        **{name: nothing for name in TIME_COLUMNS[:6]},
        "issued": [sync.issued - origin for sync in syncs],
        "completed": [None if s.completed is None else s.completed - origin for s in syncs],
        **{name: nothing for name in _DEVICE_COLUMNS},
        **{name: nothing for name in _HOST_COLUMNS},
        "event": [sync.event for sync in syncs],
        "covers": [sync.covers for sync in syncs],
    }


_DEVICE_COLUMNS = ("buffers", "buffer_names", "offsets", "nbytes", "accesses")
_HOST_COLUMNS = ("host_name", "host_address", "host_nbytes", "host_dtype", "host_shape")


def _device_range_columns(
    trace: Trace, device_ranges: Sequence[tuple[DeviceRange, ...]]
) -> dict[str, list[Any]]:
    """One list per row for each device-range field; rows share their range tuples, so
    each distinct tuple is converted once."""
    names = {buffer: info.name for buffer, info in trace.buffers.items()}
    converted: dict[int, tuple[list, ...]] = {}
    rows = []
    for ranges in device_ranges:
        found = converted.get(id(ranges))
        if found is None:
            found = converted[id(ranges)] = (
                [r.buffer for r in ranges],
                [names.get(r.buffer) for r in ranges],
                [r.offset for r in ranges],
                [r.nbytes for r in ranges],
                [r.access.value for r in ranges],
            )
        rows.append(found)
    return {name: [row[field] for row in rows] for field, name in enumerate(_DEVICE_COLUMNS)}


def _stream_names(trace: Trace, streams: Sequence[int | None]) -> list[str | None]:
    names = {stream: info.name for stream, info in trace.streams.items()}
    return [None if stream is None else names.get(stream) for stream in streams]


def _stream_devices(trace: Trace, streams: Sequence[int | None]) -> list[str | None]:
    devices = {stream: info.device for stream, info in trace.streams.items()}
    return [None if stream is None else devices.get(stream) for stream in streams]


def _range_paths(trace: Trace, ranges: list[RangeRecord], moments: np.ndarray) -> list[str | None]:
    """Each moment's open ranges, outermost first, joined by ``/``."""
    if not ranges:
        return [None] * len(moments)
    stop = trace.metadata.stopped if trace.metadata.stopped is not None else int(moments.max())
    paths: dict[int, str] = {}
    for position, record in enumerate(ranges):
        parent = paths.get(record.parent) if record.parent is not None else None
        paths[position] = record.name if parent is None else f"{parent}/{record.name}"
    found = innermost_ranges(ranges, moments, stop).tolist()
    return [None if position == NO_RANGE else paths[position] for position in found]


def _list_of(element: str):
    return lambda pa: pa.list_(getattr(pa, element)())


_COLUMN_TYPES = {
    "record": lambda pa: pa.string(),
    "id": lambda pa: pa.int64(),
    "seq": lambda pa: pa.int64(),
    "kind": lambda pa: pa.string(),
    "stream": lambda pa: pa.int64(),
    "stream_name": lambda pa: pa.string(),
    "backend": lambda pa: pa.string(),
    "submission": lambda pa: pa.int64(),
    "index": lambda pa: pa.int64(),
    "label": lambda pa: pa.string(),
    "policy": lambda pa: pa.string(),
    "status": lambda pa: pa.string(),
    "error": lambda pa: pa.string(),
    **dict.fromkeys(TIME_COLUMNS, lambda pa: pa.int64()),
    "range_path": lambda pa: pa.string(),
    "buffers": _list_of("int64"),
    "buffer_names": _list_of("string"),
    "offsets": _list_of("int64"),
    "nbytes": _list_of("int64"),
    "accesses": _list_of("string"),
    "host_name": lambda pa: pa.string(),
    "host_address": lambda pa: pa.int64(),
    "host_nbytes": lambda pa: pa.int64(),
    "host_dtype": lambda pa: pa.string(),
    "host_shape": _list_of("int64"),
    "event": lambda pa: pa.int64(),
    "covers": lambda pa: pa.int64(),
}
