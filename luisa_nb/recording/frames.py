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
from luisa_nb.recording.naming import times_reported
from luisa_nb.recording.ranges import NO_RANGE, innermost_ranges
from luisa_nb.recording.recorder import MISSING, STATUSES
from luisa_nb.recording.records import RangeRecord, SyncRecord
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

UNREPORTED_TIME_COLUMNS = ("started", "finished")
"""Null, with ``times_reported`` false, for the commands of a stream whose runtime reports
no command times (real luisa-python): the trace holds only their list's bounds there."""


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
    sync_records = trace.syncs
    issued = np.array([sync.issued for sync in sync_records], np.int64)
    moments = np.concatenate([trace.table.numbers["enqueued"], issued])
    paths = _range_paths(trace, trace.ranges, moments)
    commands = _command_columns(trace, pa)
    syncs = _sync_columns(trace, sync_records)
    command_count = len(trace.table)
    commands["range_path"] = pa.array(paths[:command_count], pa.string())
    syncs["range_path"] = paths[command_count:]
    columns = {
        name: pa.chunked_array(
            [column, pa.array(syncs[name], column.type)], type=_COLUMN_TYPES[name](pa)
        )
        for name, column in commands.items()
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


def _command_columns(trace: Trace, pa: ModuleType) -> dict[str, pyarrow.Array]:
    """The command rows, a column at a time from the table's numpy columns: rows share
    their description objects, so each distinct one is converted once."""
    table = trace.table
    numbers = table.numbers
    count = len(table)
    origin = trace.metadata.started
    streams, stream_rows = np.unique(numbers["stream"], return_inverse=True)
    stream_rows = stream_rows.reshape(-1)

    def coded(names: Sequence[Any], codes: np.ndarray) -> pyarrow.Array:
        return pa.array(np.array(names, object)[codes], pa.string())

    reported = np.array([times_reported(trace, stream) for stream in streams.tolist()], bool)[
        stream_rows
    ]

    def time(name: str) -> pyarrow.Array:
        column = numbers[name]
        unknown = column == MISSING
        if name in UNREPORTED_TIME_COLUMNS:
            unknown |= ~reported
        return pa.array(column - origin, pa.int64(), mask=unknown)

    nothing = pa.nulls(count, pa.int64())
    columns = {
        "record": pa.array(np.full(count, "command", object), pa.string()),
        **{name: pa.array(numbers[name]) for name in ("id", "seq")},
        "kind": coded([kind.value for kind in KINDS], numbers["kind"]),
        "stream": pa.array(numbers["stream"]),
        "stream_name": coded(_stream_names(trace, streams.tolist()), stream_rows),
        "backend": coded(_stream_devices(trace, streams.tolist()), stream_rows),
        **{name: pa.array(numbers[name]) for name in ("submission", "index")},
        "label": pa.array(table.objects["label"], pa.string()),
        "policy": coded(POLICIES, numbers["staging"]),
        "status": coded([status.value for status in STATUSES], numbers["status"]),
        "error": pa.array(table.objects["error"], pa.string()),
        **{name: time(name) for name in TIME_COLUMNS[:6]},
        "issued": nothing,
        "completed": nothing,
        "times_reported": pa.array(reported, pa.bool_()),
    }
    device_ranges, range_rows = _distinct(table.objects["device_ranges"])
    names = {buffer: info.name for buffer, info in trace.buffers.items()}
    for name, field in (
        ("buffers", lambda r: r.buffer),
        ("buffer_names", lambda r: names.get(r.buffer)),
        ("offsets", lambda r: r.offset),
        ("nbytes", lambda r: r.nbytes),
        ("accesses", lambda r: r.access.value),
    ):
        lists = [[field(r) for r in ranges] for ranges in device_ranges]
        columns[name] = _taken(pa.array(lists, _COLUMN_TYPES[name](pa)), range_rows, pa)
    hosts, host_rows = _distinct(table.objects["host"])
    for name, field in (
        ("host_name", lambda host: host.name),
        ("host_address", lambda host: host.address),
        ("host_nbytes", lambda host: host.nbytes),
        ("host_dtype", lambda host: host.dtype),
        ("host_shape", lambda host: list(host.shape)),
    ):
        values = [None if host is None else field(host) for host in hosts]
        columns[name] = _taken(pa.array(values, _COLUMN_TYPES[name](pa)), host_rows, pa)
    columns["event"] = columns["covers"] = nothing
    return columns


def _distinct(objects: Sequence[Any]) -> tuple[list[Any], np.ndarray]:
    """The distinct objects (by identity) and each row's position among them."""
    positions: dict[int, int] = {}
    distinct: list[Any] = []
    rows = np.empty(len(objects), np.int64)
    for row, value in enumerate(objects):
        position = positions.get(id(value))
        if position is None:
            position = positions[id(value)] = len(distinct)
            distinct.append(value)
        rows[row] = position
    return distinct, rows


def _taken(values: pyarrow.Array, rows: np.ndarray, pa: ModuleType) -> pyarrow.Array:
    return values.take(pa.array(rows)) if len(rows) else values.slice(0, 0)


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
        "times_reported": [True] * count,
        **{name: nothing for name in _DEVICE_COLUMNS},
        **{name: nothing for name in _HOST_COLUMNS},
        "event": [sync.event for sync in syncs],
        "covers": [sync.covers for sync in syncs],
    }


_DEVICE_COLUMNS = ("buffers", "buffer_names", "offsets", "nbytes", "accesses")
_HOST_COLUMNS = ("host_name", "host_address", "host_nbytes", "host_dtype", "host_shape")


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
    "times_reported": lambda pa: pa.bool_(),
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
