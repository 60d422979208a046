"""The view data of a trace: columnar arrays packed into one binary buffer, plus small
JSON summaries (lanes, kinds, colours, hazards, command texts). The timeline, command
table and hazard list widgets hold it as their state (``summary``, ``data``, ``hazards``).

The live widgets, the static HTML page and the static picture read the same
:class:`TimelineData`, so a notebook, a saved report and a headless browser draw the
same picture. Reads a
:class:`~luisa_nb.recording.Trace` and analysis results only; never the runtime.

Per record the buffer holds 44 bytes, one column after another (each padded to 8 bytes):

==========  =====  ========================================================
column      dtype  meaning
==========  =====  ========================================================
start       f8     µs from the trace origin when the record started
id          u4     record id (``#id``)
duration    f4     µs from start to finish (0 for instants)
host        f4     µs from start to the upload's host read or the download's
                   host write (NaN: none)
enqueued    f4     µs from start to when the command was enqueued or the
                   sync point issued (negative or 0)
text        u4     index into ``summary["texts"]`` (the description minus
                   ``#id``)
detail      u4     index into ``summary["details"]``: the record's device
                   and host ranges, one per line ("" for sync points; all 0
                   past :data:`DETAILS_INLINE_LIMIT` records, where a view
                   asks :func:`record_details` for the selected record)
submission  u4     the command list a command was submitted in (0: a sync
                   point)
range       i4     index into ``summary["ranges"]`` of the innermost user
                   range open at enqueue (-1: none)
lane        u2     index into ``summary["lanes"]`` (0 is the host lane; a
                   stream has a lane only if a record is drawn on it)
kind        u1     index into ``summary["kinds"]``
status      u1     index into ``summary["statuses"]``
==========  =====  ========================================================

Rows are sorted by start time (then issue order). Over the bars the timeline draws
``summary["ranges"]``, ``["lists"]``, ``["untimed"]``, ``["links"]`` and
``["host_activity"]`` (:mod:`luisa_nb.views.overlays`); ``summary["errors"]`` maps the id
of each failed record to its error. On a stream whose runtime reports no command times
(its lane says ``"times": "times not reported by this runtime"``), every command of a list
spans the whole list, and ``["untimed"]`` holds one labelled block per list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from luisa_nb.analysis.finding_groups import FindingGroup, group_findings
from luisa_nb.analysis.hazards import Hazard, HazardKind, find_hazards
from luisa_nb.analysis.uploads import UploadCheck, check_uploads, stale_uploads
from luisa_nb.analysis.vocabulary import pending_note
from luisa_nb.errors import RecordNotFoundError
from luisa_nb.recording import (
    CommandKind,
    CommandRecord,
    DeviceRange,
    HostRange,
    Status,
    SyncKind,
    Trace,
)
from luisa_nb.recording.naming import (
    describe,
    device_name,
    drawn_streams,
    host_name,
    on_host,
    stream_name,
    times_reported,
)
from luisa_nb.recording.ranges import innermost_ranges
from luisa_nb.recording.records import TIMES_NOT_REPORTED
from luisa_nb.recording.table import KIND_CODES as TABLE_KIND_CODES
from luisa_nb.recording.table import KINDS as TABLE_KINDS
from luisa_nb.recording.table import MISSING, POLICIES, CommandTable
from luisa_nb.recording.table import STATUSES as TABLE_STATUSES
from luisa_nb.views.overlays import (
    event_links,
    host_activity,
    list_summaries,
    range_summaries,
)
from luisa_nb.views.packed_hazards import pack_hazards
from luisa_nb.views.theme import KIND_COLOURS

KIND_CODES = {name: code for code, (name, _) in enumerate(KIND_COLOURS)}
STATUSES = tuple(status.value for status in Status)
STATUS_CODES = {name: code for code, name in enumerate(STATUSES)}
HOST_LANE = 0
DETAILS_INLINE_LIMIT = 20_000
"""Up to this many records, the summary holds every command's device and host ranges."""

#: (name, dtype) in buffer order; 8-byte columns first keeps every column aligned.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("start", "<f8"),
    ("id", "<u4"),
    ("duration", "<f4"),
    ("host", "<f4"),
    ("enqueued", "<f4"),
    ("text", "<u4"),
    ("detail", "<u4"),
    ("submission", "<u4"),
    ("range", "<i4"),
    ("lane", "<u2"),
    ("kind", "u1"),
    ("status", "u1"),
)
BYTES_PER_RECORD = sum(np.dtype(dtype).itemsize for _, dtype in COLUMNS)

_HOST_WAITS = (SyncKind.SYNCHRONIZE, SyncKind.EVENT_SYNCHRONIZE)
UPLOAD_HAZARDS = (
    HazardKind.STALE_UPLOAD,
    HazardKind.LATENT_STALE_UPLOAD,
    HazardKind.HOST_WRITE_IN_FLIGHT,
)

_HOST_ARROWS = {
    HazardKind.STALE_UPLOAD: (("host_write", "host write"), ("host_read", "host read")),
    HazardKind.LATENT_STALE_UPLOAD: (("host_write", "host write"), ("host_read", "host read")),
    HazardKind.HOST_WRITE_IN_FLIGHT: (("enqueued", "enqueue"), ("host_read", "host read")),
    HazardKind.HOST_USE_AFTER_FREE: (("released", "released"), ("host_write", "host write")),
}
"""The host-lane arrow of each host finding: the moments (``Hazard.times`` keys) it
joins, from the first command's to the last command's, and their labels."""


@dataclass
class Analysis:
    """The analysis results a view needs: hazards, the same grouped by place, upload
    checks by command id, and the ids of the uploads that sent old bytes
    (:func:`~luisa_nb.analysis.stale_uploads`)."""

    hazards: list[Hazard]
    uploads: dict[int, UploadCheck]
    findings: list[FindingGroup] = field(default_factory=list)
    stale: frozenset[int] = field(init=False)

    def __post_init__(self) -> None:
        self.stale = stale_uploads(self.hazards, self.uploads.values())

    @classmethod
    def of(cls, trace: Trace) -> Analysis:
        """Cached results of an ``AnalyzedTrace``, else computed once from ``trace``."""
        hazards = getattr(trace, "hazards", None)
        uploads = getattr(trace, "uploads", None)
        findings = getattr(trace, "findings", None)
        if not isinstance(hazards, list):
            hazards = find_hazards(trace)
        if not isinstance(uploads, list):
            uploads = check_uploads(trace)
        if not isinstance(findings, list):
            findings = group_findings(trace, hazards)
        return cls(list(hazards), {check.command_id: check for check in uploads}, findings)


@dataclass
class TimelineData:
    """Columns and summaries of every record of a trace, ready to pack or draw."""

    columns: dict[str, np.ndarray]
    lanes: list[dict[str, Any]]
    texts: list[str]
    hazards: list[dict[str, Any]]
    meta: dict[str, Any]
    origin: int
    overlays: dict[str, Any] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    """The hazards grouped by place (:func:`finding_summary`); each hazard summary names
    its group."""

    @property
    def count(self) -> int:
        return int(self.columns["id"].size)

    @property
    def record_ids(self) -> np.ndarray:
        return self.columns["id"]

    @cached_property
    def selectable(self) -> tuple[frozenset[int], tuple[tuple[int, ...], ...]]:
        """The record ids and each hazard's command ids, made once for every view."""
        ids = frozenset(self.columns["id"].tolist())
        return ids, tuple(tuple(hazard["command_ids"]) for hazard in self.hazards)

    @cached_property
    def packed_hazards(self) -> tuple[dict[str, Any], bytes]:
        """:attr:`hazards` as packed columns (:func:`~.packed_hazards.pack_hazards`)."""
        return pack_hazards(self.hazards)

    def pack(self) -> bytes:
        """All columns in one little-endian buffer, laid out as :meth:`layout` says."""
        parts = []
        for name, dtype in COLUMNS:
            raw = np.ascontiguousarray(self.columns[name], dtype=dtype).tobytes()
            parts.append(raw + b"\0" * (-len(raw) % 8))
        return b"".join(parts)

    def layout(self) -> dict[str, dict[str, Any]]:
        """Where each column sits in :meth:`pack`'s buffer: dtype, byte offset, length."""
        out, offset = {}, 0
        for name, dtype in COLUMNS:
            size = np.dtype(dtype).itemsize * self.count
            out[name] = {"dtype": np.dtype(dtype).str.lstrip("<|"), "offset": offset}
            offset += size + (-size % 8)
        return out

    def summary(self) -> dict[str, Any]:
        """The JSON half of the view data (the binary half is :meth:`pack`; hazards
        travel apart, as :attr:`hazards`)."""
        return {
            "count": self.count,
            "layout": self.layout(),
            "lanes": self.lanes,
            "kinds": [{"name": name, "color": color} for name, color in KIND_COLOURS],
            "statuses": list(STATUSES),
            "texts": self.texts,
            "meta": self.meta,
            "ranges": self.overlays.get("ranges", []),
            "lists": self.overlays.get("lists", []),
            "untimed": self.overlays.get("untimed", []),
            "links": self.overlays.get("links", []),
            "host_activity": self.overlays.get("host_activity", []),
            "details": self.overlays.get("details", [""]),
            "errors": self.overlays.get("errors", {}),
        }

    def description(self, record_id: int) -> str:
        """``#3 download z -> z_data`` for any record in the view data."""
        rows = np.flatnonzero(self.columns["id"] == record_id)
        if not rows.size:
            raise RecordNotFoundError(f"no record #{record_id} in this trace")
        return f"#{record_id} {self.texts[int(self.columns['text'][rows[0]])]}"


def build_timeline(trace: Trace, analysis: Analysis | None = None) -> TimelineData:
    """The view data of ``trace`` (hazards from ``analysis``, computed when not given)."""
    analysis = analysis if analysis is not None else Analysis.of(trace)
    table = trace.table
    syncs = sorted(trace.syncs, key=lambda record: record.seq)
    numbers = table.numbers
    columnar = bool(
        ((numbers["started"] != MISSING) | (numbers["device_started"] != MISSING)).all()
    )
    # Commands that all ran are read from the table's columns, with no record made (the
    # loop below visits the sync points only); one that never ran stands where it would
    # have run, which needs the records in issue order.
    records = syncs if columnar else sorted(trace.records, key=lambda record: record.seq)
    origin = _origin(trace, records, table if columnar else None)
    streams = drawn_streams(records)
    if columnar:
        streams = sorted({*streams, *np.unique(numbers["stream"]).tolist()})
    lane_of = {stream: position + 1 for position, stream in enumerate(streams)}
    lanes: list[dict[str, Any]] = [{"name": "host", "stream": None, "device": None}]
    lanes += [
        {"name": stream_name(trace, stream), "stream": stream, "device": _device_of(trace, stream)}
        for stream in streams
    ]
    untimed_lanes = [lane_of[stream] for stream in streams if not times_reported(trace, stream)]
    for lane_number in untimed_lanes:
        lanes[lane_number]["times"] = TIMES_NOT_REPORTED

    commands = len(table) if columnar else 0
    count = len(records) + commands
    starts = np.empty(count, np.int64)
    ends = np.empty(count, np.int64)
    hosts = np.full(count, -1, np.int64)
    moments = np.empty(count, np.int64)
    ids = np.empty(count, np.int64)
    seqs = np.empty(count, np.int64)
    lane = np.empty(count, np.int64)
    kind = np.empty(count, np.int64)
    status = np.empty(count, np.int64)
    text = np.empty(count, np.int64)
    detail = np.zeros(count, np.int64)
    submission = np.zeros(count, np.int64)
    text_codes: dict[str, int] = {}
    command_texts: dict[tuple[Any, ...], int] = {}
    stream_ends: dict[int, int] = {}
    details = _Details(trace) if count <= DETAILS_INLINE_LIMIT else None
    busy_end = np.empty(count, np.int64)
    submitted = np.empty(count, np.int64)
    errors: dict[str, str] = {}
    if columnar:
        arrays = {
            "starts": starts, "ends": ends, "hosts": hosts, "lane": lane, "moments": moments,
            "busy_end": busy_end, "submitted": submitted, "submission": submission,
            "ids": ids, "seqs": seqs, "kind": kind, "status": status, "text": text,
            "detail": detail,
        }  # fmt: skip
        _command_columns(trace, table, lane_of, details, text_codes, errors, arrays)
    for row, record in enumerate(records, start=commands):
        if isinstance(record, CommandRecord):
            start, end = _command_span(record, stream_ends)
            host = record.host_read if record.kind is CommandKind.UPLOAD else record.host_write
            hosts[row] = -1 if host is None else host
            lane[row] = lane_of[record.stream]
            moments[row] = record.enqueued
            submission[row] = record.submission
            if details is not None:
                detail[row] = details.code(record.device_ranges, record.host)
            busy_end[row] = record.enqueued
            submitted[row] = record.submitted
        else:
            start = record.issued
            end = record.completed if record.completed is not None else start
            if record.kind not in _HOST_WAITS:
                start = end
            lane[row] = HOST_LANE if on_host(record) else lane_of[record.stream]
            moments[row] = record.issued
            busy_end[row] = end if record.kind in _HOST_WAITS else record.issued
            submitted[row] = record.issued
        if record.error:
            errors[str(record.id)] = record.error
        starts[row], ends[row] = start, max(end, start)
        ids[row], seqs[row] = record.id, record.seq
        kind[row] = KIND_CODES[record.kind.value]
        status[row] = STATUS_CODES[record.status.value]
        if isinstance(record, CommandRecord):
            # commands with the same fields share their objects: describe them once
            key = (record.kind, record.label, id(record.device_ranges), id(record.host))
            code = command_texts.get(key)
            if code is None:
                words = describe(trace, record).split(" ", 1)[1]
                code = command_texts[key] = text_codes.setdefault(words, len(text_codes))
            text[row] = code
        else:
            text[row] = text_codes.setdefault(describe(trace, record), len(text_codes))

    untimed = _as_list_blocks(starts, ends, submission, lane, untimed_lanes)
    stop = (
        trace.metadata.stopped if trace.metadata.stopped is not None else int(ends.max(initial=0))
    )
    ranges = innermost_ranges(trace.ranges, moments, stop)
    order = np.lexsort((seqs, starts))
    start_us = (starts[order] - origin) / 1000.0
    host_ns = hosts[order]
    host_us = np.where(host_ns >= 0, (host_ns - starts[order]) / 1000.0, np.nan)
    columns = {
        "start": start_us,
        "id": ids[order].astype(np.uint32),
        "duration": ((ends[order] - starts[order]) / 1000.0).astype(np.float32),
        "host": host_us.astype(np.float32),
        "enqueued": ((moments[order] - starts[order]) / 1000.0).astype(np.float32),
        "text": text[order].astype(np.uint32),
        "detail": detail[order].astype(np.uint32),
        "submission": submission[order].astype(np.uint32),
        "range": ranges[order].astype(np.int32),
        "lane": lane[order].astype(np.uint16),
        "kind": kind[order].astype(np.uint8),
        "status": status[order].astype(np.uint8),
    }
    by_id = _race_commands(table, analysis.hazards)
    group_of = {
        occurrence: group
        for group, finding in enumerate(analysis.findings)
        for occurrence in finding.occurrences
    }
    hazards = [
        _hazard_summary(by_id, index, hazard, origin, lane_of, group_of.get(index))
        for index, hazard in enumerate(analysis.hazards)
    ]
    findings = [finding_summary(index, group) for index, group in enumerate(analysis.findings)]
    stagings = (
        {POLICIES[code] for code in np.unique(numbers["staging"]).tolist()}
        if columnar
        else {r.staging for r in records if isinstance(r, CommandRecord)}
    )
    meta = _meta(trace, len(table), stagings, origin, columns, analysis)
    end_us = (ends[order] - origin) / 1000.0
    lanes_sorted = lane[order]
    range_items = range_summaries(trace, ranges[order], lanes_sorted, start_us, end_us, origin)
    if range_items:
        low, high = meta["extent"] if count else range_items[0]["host"]
        low = min(low, *(item["host"][0] for item in range_items))
        high = max(high, *(item["host"][1] for item in range_items))
        meta["extent"] = [low, high]
    extent = meta["extent"][1] - meta["extent"][0]
    overlays = {
        "ranges": range_items,
        "lists": list_summaries(submission[order], lanes_sorted, start_us, end_us),
        "untimed": list_summaries(
            submission[order], lanes_sorted, start_us, end_us, untimed[order], single=True
        ),
        "links": event_links(syncs, lane_of, origin),
        "host_activity": host_activity(
            trace,
            np.concatenate([moments, submitted]),
            np.concatenate([busy_end, submitted]),
            origin,
            extent,
        ),
        "details": details.texts if details is not None else [""],
        "errors": errors,
    }
    return TimelineData(columns, lanes, list(text_codes), hazards, meta, origin, overlays, findings)


def _as_list_blocks(
    starts: np.ndarray,
    ends: np.ndarray,
    submission: np.ndarray,
    lane: np.ndarray,
    untimed_lanes: list[int],
) -> np.ndarray:
    """Give every command on a lane whose runtime reports no command times the span of its
    whole list (its submission to the sync that waited for it), in place, so that a list is
    drawn as one block rather than as bars that look measured; which rows those are."""
    untimed = np.isin(lane, untimed_lanes) & (submission > 0)
    if not untimed.any():
        return untimed
    numbers, inverse = np.unique(submission[untimed], return_inverse=True)
    low = np.full(numbers.size, np.iinfo(np.int64).max, np.int64)
    high = np.full(numbers.size, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(low, inverse, starts[untimed])
    np.maximum.at(high, inverse, ends[untimed])
    starts[untimed], ends[untimed] = low[inverse], high[inverse]
    return untimed


class _Details:
    """The device and host ranges of commands as text, one line each, made once per set
    of ranges (commands share their ranges' objects)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.texts: list[str] = [""]
        self._codes: dict[tuple[int, int], int] = {}

    def code(self, device_ranges: tuple[DeviceRange, ...], host: HostRange | None) -> int:
        key = (id(device_ranges), id(host))
        found = self._codes.get(key)
        if found is None:
            found = self._codes[key] = len(self.texts)
            self.texts.append(self.text(device_ranges, host))
        return found

    def text(self, device_ranges: tuple[DeviceRange, ...], host: HostRange | None) -> str:
        lines = [
            f"{r.access.value.replace('_', '-')} {device_name(self.trace, r)} "
            f"({r.nbytes:,} B at byte {r.offset:,})"
            for r in device_ranges
        ]
        if host is not None:
            shape = "x".join(map(str, host.shape)) or "scalar"
            lines.append(f"host {host_name(host)}: {host.nbytes:,} B of {host.dtype} [{shape}]")
        return "\n".join(lines)


def _device_of(trace: Trace, stream: int) -> str | None:
    info = trace.streams.get(stream)
    return None if info is None else info.device


def record_details(trace: Trace, record_id: int) -> dict[str, Any]:
    """What the table's details panel shows of command ``record_id`` beyond the packed
    columns: ``{"id", "lines"}``, its device and host ranges one per line (none for a sync
    point or an id not in the trace)."""
    for record in trace.commands:
        if record.id == record_id:
            lines = _Details(trace).text(record.device_ranges, record.host)
            return {"id": record_id, "lines": lines}
    return {"id": record_id, "lines": ""}


def _command_columns(
    trace: Trace,
    table: CommandTable,
    lane_of: dict[int, int],
    details: _Details | None,
    text_codes: dict[str, int],
    errors: dict[str, str],
    arrays: dict[str, Any],
) -> None:
    """Fill the first ``len(table)`` rows of ``build_timeline``'s ``arrays`` with the
    table's commands, every one of which ran (worker or device times), from its columns;
    a command's text is made once per set of fields its commands share."""
    numbers, objects = table.numbers, table.objects
    count = len(table)
    worker = numbers["started"] != MISSING
    started = np.where(worker, numbers["started"], numbers["device_started"])
    finished = np.where(worker, numbers["finished"], numbers["device_finished"])
    finished = np.where(finished != MISSING, finished, started)
    upload = numbers["kind"] == TABLE_KIND_CODES[CommandKind.UPLOAD]
    streams, stream_rows = np.unique(numbers["stream"], return_inverse=True)
    lanes = np.array([lane_of[stream] for stream in streams.tolist()], np.int64)
    kinds = np.array([KIND_CODES[kind.value] for kind in TABLE_KINDS], np.int64)
    statuses = np.array([STATUS_CODES[status.value] for status in TABLE_STATUSES], np.int64)
    arrays["starts"][:count] = started
    arrays["ends"][:count] = np.maximum(finished, started)
    arrays["hosts"][:count] = np.where(upload, numbers["host_read"], numbers["host_write"])
    arrays["lane"][:count] = lanes[stream_rows.reshape(-1)]
    arrays["moments"][:count] = numbers["enqueued"]
    arrays["busy_end"][:count] = numbers["enqueued"]
    arrays["submitted"][:count] = numbers["submitted"]
    arrays["submission"][:count] = numbers["submission"]
    arrays["ids"][:count] = numbers["id"]
    arrays["seqs"][:count] = numbers["seq"]
    arrays["kind"][:count] = kinds[numbers["kind"]]
    arrays["status"][:count] = statuses[numbers["status"]]
    ids = numbers["id"].tolist()
    for row, error in enumerate(objects["error"]):
        if error:
            errors[str(ids[row])] = error
    texts: dict[tuple[Any, ...], int] = {}
    text, detail = arrays["text"], arrays["detail"]
    keys = zip(
        numbers["kind"].tolist(),
        objects["label"],
        objects["device_ranges"],
        objects["host"],
        strict=True,
    )
    for row, (kind, label, ranges, host) in enumerate(keys):
        key = (kind, label, id(ranges), id(host))
        code = texts.get(key)
        if code is None:
            words = describe(trace, table.record(row)).split(" ", 1)[1]
            code = texts[key] = text_codes.setdefault(words, len(text_codes))
        text[row] = code
        if details is not None:
            detail[row] = details.code(ranges, host)


def _race_commands(table: CommandTable, hazards: list[Hazard]) -> dict[int, CommandRecord]:
    """The records of the commands of device races (their hazard arrows need their
    streams), by id."""
    wanted = {i for h in hazards if h.kind is HazardKind.DEVICE_RACE for i in h.command_ids}
    if not wanted:
        return {}
    rows = np.flatnonzero(np.isin(table.numbers["id"], list(wanted)))
    return {record.id: record for record in (table.record(row) for row in rows.tolist())}


def _command_span(record: CommandRecord, stream_ends: dict[int, int]) -> tuple[int, int]:
    """When the command ran: worker times, else device times. A command that never ran
    (skipped, pending) stands where it would have run: after the previous command of its
    stream finished, and not before it was submitted. ``stream_ends`` holds when each
    stream's latest command so far ended (records come in issue order) and is updated."""
    for start, end in (
        (record.started, record.finished),
        (record.device_started, record.device_finished),
    ):
        if start is not None:
            end = end if end is not None else start
            break
    else:
        start = max(record.submitted or record.enqueued, stream_ends.get(record.stream, 0))
        end = start
    stream_ends[record.stream] = max(end, stream_ends.get(record.stream, 0))
    return start, end


def _origin(trace: Trace, records: list, table: CommandTable | None = None) -> int:
    """The earliest time of any record (of ``records``, and of ``table``'s commands), or
    the trace start if that is earlier."""
    earliest = None
    if table is not None and len(table):
        moments = np.concatenate(
            [table.numbers[name] for name in ("enqueued", "submitted", "started", "host_read")]
        )
        moments = moments[moments > 0]
        earliest = int(moments.min()) if moments.size else None
    for record in records:
        if isinstance(record, CommandRecord):
            moments = (record.enqueued, record.submitted, record.started, record.host_read)
        else:
            moments = (record.issued,)
        for moment in moments:
            if moment and (earliest is None or moment < earliest):
                earliest = moment
    started = trace.metadata.started
    if earliest is None:
        return started
    return min(started, earliest) if started else earliest


def finding_summary(index: int, group: FindingGroup) -> dict[str, Any]:
    """What the views show of a group of findings: kind, count, what its commands do,
    the first occurrence's message and fix, and the positions of its occurrences in the
    flat hazard list."""
    return {
        "index": index,
        "kind": getattr(group.kind, "value", str(group.kind)),
        "count": group.count,
        "descriptions": list(group.descriptions),
        "place": group.place(),
        "occurrences": list(group.occurrences),
        "occurrence_text": group.occurrence_text(),
        "message": group.message,
        "fix": group.fix,
    }


def _hazard_summary(
    by_id: dict[int, CommandRecord],
    index: int,
    hazard: Hazard,
    origin: int,
    lane_of: dict[int, int],
    group: int | None,
) -> dict[str, Any]:
    def point(command_id: int, moment: int | None, label: str, lane: int = HOST_LANE):
        if moment is None:
            return None
        time = (moment - origin) / 1000.0
        return {"lane": lane, "time": time, "command": command_id, "label": label}

    ids = hazard.command_ids
    times = hazard.times
    arrow = None
    if hazard.kind in _HOST_ARROWS:
        (start_time, start_label), (end_time, end_label) = _HOST_ARROWS[hazard.kind]
        start = point(ids[0], times.get(start_time), start_label)
        end = point(ids[-1], times.get(end_time), end_label)
        arrow = {"from": start, "to": end} if start and end else None
    elif hazard.kind is HazardKind.DEVICE_RACE:
        first, second = (by_id[i] for i in ids[:2])
        start = point(
            first.id,
            times.get("first_finished", times.get("first_started")),
            "first access",
            lane_of[first.stream],
        )
        end = point(
            second.id,
            times.get("second_started", times.get("second_finished")),
            "second access",
            lane_of[second.stream],
        )
        arrow = {"from": start, "to": end} if start and end else None
    upload = ids[-1] if hazard.kind in UPLOAD_HAZARDS else None
    return {
        "index": index,
        "group": group,
        "kind": hazard.kind.value,
        "command_ids": list(ids),
        "upload": upload,
        "arrow": arrow,
    }


def _meta(
    trace: Trace,
    commands: int,
    stagings: set[str],
    origin: int,
    columns: dict[str, np.ndarray],
    analysis: Analysis,
) -> dict[str, Any]:
    devices = sorted({info.device for info in trace.streams.values()})
    devices += [d.get("name", str(d)) for d in trace.metadata.devices if isinstance(d, dict)]
    starts = columns["start"]
    hosts = starts + columns["host"].astype(np.float64)
    hosts = hosts[~np.isnan(hosts)]
    ends = starts + columns["duration"]
    lows, highs = np.concatenate([starts, hosts]), np.concatenate([ends, hosts])
    extent = [float(lows.min()), float(highs.max())] if lows.size else [0.0, 0.0]
    return {
        "commands": commands,
        "syncs": len(columns["id"]) - commands,
        "streams": len(trace.streams),
        "devices": list(dict.fromkeys(devices)),
        "staging": sorted(stagings),
        "capture": trace.metadata.capture,
        "hazards": len(analysis.hazards),
        "findings": len(analysis.findings),
        "pending": len(trace.metadata.pending),
        "pending_note": pending_note(trace) or "",
        "stale_uploads": sorted(analysis.stale),
        "extent": extent,
        "bytes_per_record": BYTES_PER_RECORD,
    }


def windowed(data: TimelineData, limit: int) -> TimelineData:
    """``data`` cut to at most ``limit`` records, those around the first hazard (else
    the first ones), for a copy of the views that must stay small (a notebook's static
    twin). The hazards and overlays of those records stay; each finding keeps its count
    and the occurrences still shown; ``meta["window"]`` says which records were kept."""
    count = data.count
    if count <= limit:
        return data
    starts = data.columns["start"]
    arrows = [h["arrow"] for h in data.hazards if h.get("arrow")]
    centre = 0 if not arrows else int(np.searchsorted(starts, arrows[0]["to"]["time"]))
    low = max(0, min(centre - limit // 2, count - limit))
    high = low + limit
    columns = {name: column[low:high] for name, column in data.columns.items()}
    kept = set(columns["id"].tolist())
    positions: dict[int, int] = {}
    hazards = []
    for hazard in data.hazards:
        if all(command in kept for command in hazard["command_ids"]):
            positions[hazard["index"]] = len(hazards)
            hazards.append({**hazard, "index": len(hazards)})
    findings = [
        {
            **finding,
            "occurrences": [positions[o] for o in finding["occurrences"] if o in positions],
        }
        for finding in data.findings
    ]
    time_from = float(starts[low])
    time_to = float((columns["start"] + columns["duration"]).max())
    overlays = dict(data.overlays)
    overlays["ranges"], columns["range"] = _ranges_within(
        data.overlays.get("ranges", []), columns["range"], time_from, time_to
    )
    for name in ("lists", "untimed", "host_activity"):
        overlays[name] = [
            item
            for item in data.overlays.get(name, [])
            if item["end"] >= time_from and item["start"] <= time_to
        ]
    overlays["links"] = [
        link
        for link in data.overlays.get("links", [])
        if time_from <= link["from"]["time"] <= time_to
        and time_from <= link["to"]["time"] <= time_to
    ]
    moments = [time_from, time_to]
    for hazard in hazards:
        if hazard.get("arrow"):
            moments += [hazard["arrow"]["from"]["time"], hazard["arrow"]["to"]["time"]]
    meta = {
        **data.meta,
        "extent": [min(moments), max(moments)],
        "window": {"first": low, "shown": high - low, "of": count},
    }
    return TimelineData(
        columns, data.lanes, data.texts, hazards, meta, data.origin, overlays, findings
    )


def _ranges_within(
    ranges: list[dict[str, Any]], column: np.ndarray, time_from: float, time_to: float
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The ranges that overlap ``[time_from, time_to]`` or hold a range that does, renumbered
    in order, and ``column`` (indices into ``ranges``) renumbered to match."""
    wanted: set[int] = set()
    for index, item in enumerate(ranges):
        if item["host"][1] >= time_from and item["host"][0] <= time_to:
            while index is not None and index not in wanted:
                wanted.add(index)
                index = ranges[index]["parent"]
    order = sorted(wanted)
    renumber = np.full(len(ranges) + 1, -1, np.int64)  # the last slot maps -1 to -1
    renumber[order] = np.arange(len(order))
    kept = [
        {
            **ranges[index],
            "id": int(renumber[index]),
            "parent": None
            if ranges[index]["parent"] is None
            else int(renumber[ranges[index]["parent"]]),
        }
        for index in order
    ]
    return kept, renumber[column].astype(column.dtype)
