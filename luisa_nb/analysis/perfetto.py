"""A trace in Perfetto's own protobuf format, with its findings.

Tracks: "host" (an instant per upload's enqueue and host read, per download's host
write, and the host-side waits), one per stream (a slice per executed command, an
instant per command that never ran, the device-side sync points), "host ranges" (user
ranges and kernel compiles as slices) and "findings" (an instant per finding, with its
message and fix). Flows join an upload's enqueue, host read and execution, a download's
execution and host write, and, for each finding, its earlier command to its later one:
the hazard arrow. Names, categories and annotation names are interned. Timestamps are
nanoseconds from the trace's start.

The bulk of the packets is encoded with :mod:`~luisa_nb.recording.protobuf_rows`, using
the field numbers of the ``perfetto`` package's definitions; a million commands take
seconds, not minutes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.analysis.hazards import Hazard
from luisa_nb.recording.atomic_files import atomic_write
from luisa_nb.recording.file_paths import MISSING_FOLDER, checked_path, file_errors
from luisa_nb.recording.frames import needed
from luisa_nb.recording.naming import describe, describe_sync, on_host, stream_name
from luisa_nb.recording.protobuf_rows import MessageRows, merged
from luisa_nb.recording.recorder import MISSING
from luisa_nb.recording.records import CommandKind
from luisa_nb.recording.table import KIND_CODES

if TYPE_CHECKING:
    from luisa_nb.recording.trace import Trace

HOST_TRACK, RANGE_TRACK, FINDING_TRACK, FIRST_STREAM_TRACK = 1, 2, 3, 16
SEQUENCE = 1
_UPLOAD, _DOWNLOAD = KIND_CODES[CommandKind.UPLOAD], KIND_CODES[CommandKind.DOWNLOAD]
_END, _BEGIN, _INSTANT = 0, 1, 2


def save_perfetto(trace: Trace, hazards: Sequence[Hazard], path: str | os.PathLike[str]) -> Path:
    """Write ``trace`` and its ``hazards`` to ``path`` as a Perfetto trace (atomically;
    a path that cannot be written raises :class:`~luisa_nb.errors.TraceFileError`)."""
    doing = "write the Perfetto trace to"
    target = checked_path(path, doing)
    data = perfetto_bytes(trace, hazards)
    with file_errors(target, doing, MISSING_FOLDER), atomic_write(target) as file:
        file.write(data)
    return target


def perfetto_bytes(trace: Trace, hazards: Sequence[Hazard]) -> bytes:
    """The Perfetto trace of ``trace`` and ``hazards``, as the bytes of a file."""
    protos = needed("perfetto.protos.perfetto.trace.perfetto_trace_pb2", "the Perfetto export")
    export = _Export(trace, protos)
    export.commands()
    export.syncs()
    export.host_activity()
    export.findings(hazards)
    return export.header() + export.events_bytes()


@dataclass
class _Events:
    """Track events gathered as columns before they are encoded."""

    times: list[np.ndarray] = field(default_factory=list)
    tracks: list[np.ndarray] = field(default_factory=list)
    types: list[np.ndarray] = field(default_factory=list)
    names: list[np.ndarray] = field(default_factory=list)
    flows: list[np.ndarray] = field(default_factory=list)
    """A flow id per event, 0 for none."""
    ids: list[np.ndarray] = field(default_factory=list)
    """A command id annotation per event, -1 for none."""
    ties: list[np.ndarray] = field(default_factory=list)
    """The order of events at one moment on one track: a command's slice ends after it
    began and before the next one begins, and what is marked at its start lies inside."""
    texts: list[list[tuple[str, str] | None]] = field(default_factory=list)
    """A finding's message and fix per event, or ``None``."""

    def add(self, times, tracks, types, names, flows=0, ids=-1, ties=0, texts=None) -> None:
        count = len(times)
        self.times.append(np.asarray(times, np.int64))
        for column, values, dtype in (  # narrow types: a million commands' columns
            (self.tracks, tracks, np.int32),
            (self.types, types, np.int8),
            (self.names, names, np.int32),
            (self.flows, flows, np.int64),
            (self.ids, ids, np.int64),
            (self.ties, ties, np.int64),
        ):
            column.append(np.broadcast_to(np.asarray(values, dtype), (count,)))
        self.texts.append(texts if texts is not None else [None] * count)


class _Export:
    def __init__(self, trace: Trace, protos: Any) -> None:
        self.trace = trace
        self.protos = protos
        self.origin = _origin(trace)
        self.events = _Events()
        self.names: dict[str, int] = {}
        self.flow_count = 0
        self.stream_tracks: dict[int, int] = {}

    def intern(self, names: Sequence[str]) -> np.ndarray:
        table = self.names
        return np.fromiter(
            (table.setdefault(name, len(table) + 1) for name in names), np.int64, len(names)
        )

    def new_flows(self, count: int) -> np.ndarray:
        start = self.flow_count + 1
        self.flow_count += count
        return np.arange(start, start + count, dtype=np.int64)

    def stream_track(self, stream: int) -> int:
        return self.stream_tracks.setdefault(stream, FIRST_STREAM_TRACK + len(self.stream_tracks))

    # -- events -----------------------------------------------------------------------

    def commands(self) -> None:
        table = self.trace.table
        numbers = table.numbers
        if not len(table):
            return
        names, name_of = self._command_names()
        streams, stream_rows = np.unique(numbers["stream"], return_inverse=True)
        stream_tracks = [self.stream_track(stream) for stream in streams.tolist()]
        tracks = np.array(stream_tracks, np.int64)[stream_rows.reshape(-1)]
        ids = numbers["id"]
        kinds = numbers["kind"]
        ran = (numbers["started"] != MISSING) & (numbers["finished"] != MISSING)
        uploads, downloads = kinds == _UPLOAD, kinds == _DOWNLOAD
        read = uploads & (numbers["host_read"] != MISSING)
        written = downloads & (numbers["host_write"] != MISSING)
        flows = np.zeros(len(table), np.int64)
        joined = uploads | (downloads & ran & written)
        flows[joined] = self.new_flows(int(joined.sum()))
        slice_names = self.intern(names)[name_of]
        ties = 4 * np.arange(len(table))
        self.events.add(
            numbers["started"][ran],
            tracks[ran],
            _BEGIN,
            slice_names[ran],
            flows[ran],
            ids[ran],
            ties[ran] + 1,
        )
        self.events.add(numbers["finished"][ran], tracks[ran], _END, 0, ties=ties[ran] + 3)
        idle = ~ran
        statuses = [f"{names[name_of[row]]} ({status})" for row, status in self._statuses(idle)]
        self.events.add(
            numbers["submitted"][idle],
            tracks[idle],
            _INSTANT,
            self.intern(statuses),
            ids=ids[idle],
            ties=ties[idle] + 1,
        )
        for moment, chosen, prefix in (
            ("enqueued", uploads, "enqueue"),
            ("host_read", read, "host read"),
            ("host_write", written, "host write"),
        ):
            rows = np.flatnonzero(chosen)
            labels = self.intern([f"{prefix} {name}" for name in names])[name_of[rows]]
            self.events.add(
                numbers[moment][rows],
                HOST_TRACK,
                _INSTANT,
                labels,
                flows[rows],
                ids[rows],
                ties[rows],
            )

    def _command_names(self) -> tuple[list[str], np.ndarray]:
        """The distinct descriptions of the commands (without their ids) and each row's
        position among them. Rows made by one call share their description objects, so
        each distinct one is described once."""
        table = self.trace.table
        objects = table.objects
        known: dict[tuple, int] = {}
        names: list[str] = []
        positions = np.empty(len(table), np.int64)
        keys = zip(
            table.numbers["kind"].tolist(),
            objects["label"],
            map(id, objects["device_ranges"]),
            map(id, objects["host"]),
            strict=True,
        )
        for row, key in enumerate(keys):
            position = known.get(key)
            if position is None:
                position = known[key] = len(names)
                names.append(describe(self.trace, table.record(row)).split(" ", 1)[1])
            positions[row] = position
        return names, positions

    def _statuses(self, rows: np.ndarray) -> list[tuple[int, str]]:
        from luisa_nb.recording.recorder import STATUSES

        chosen = np.flatnonzero(rows)
        codes = self.trace.table.numbers["status"][chosen].tolist()
        return [
            (row, STATUSES[code].value) for row, code in zip(chosen.tolist(), codes, strict=True)
        ]

    def syncs(self) -> None:
        records = self.trace.syncs
        if not records:
            return
        times = [r.completed if r.completed is not None else r.issued for r in records]
        tracks = [HOST_TRACK if on_host(r) else self.stream_track(r.stream) for r in records]
        described: dict[tuple, str] = {}
        names = self.intern(
            [
                described.get((r.kind, r.stream, r.event))
                or described.setdefault((r.kind, r.stream, r.event), describe_sync(self.trace, r))
                for r in records
            ]
        )
        self.events.add(times, tracks, _INSTANT, names, 0, [r.id for r in records])

    def host_activity(self) -> None:
        stop = self.trace.metadata.stopped
        spans = [
            (r.name, r.begin, r.end if r.end is not None else stop or r.begin)
            for r in self.trace.ranges
        ]
        spans += [(f"compile {r.label}", r.begin, r.end) for r in self.trace.compiles]
        if not spans:
            return
        names, begins, ends = (np.array(column) for column in zip(*spans, strict=True))
        ends = np.maximum(ends, begins)
        positions = 2 * np.arange(len(spans))
        # a parent opens before and closes after a child at the same moment; a range that
        # closes where the next one opens closes first, unless it is empty
        self.events.add(begins, RANGE_TRACK, _BEGIN, self.intern(names.tolist()), ties=positions)
        self.events.add(
            ends, RANGE_TRACK, _END, 0, ties=np.where(ends > begins, -positions, positions + 1)
        )

    def findings(self, hazards: Sequence[Hazard]) -> None:
        """An instant per finding on the findings track, and the hazard arrow: a flow from
        an instant at the earlier command's start to one at the later command's."""
        if not hazards:
            return
        numbers = self.trace.table.numbers
        row_of = dict(zip(numbers["id"].tolist(), range(len(numbers["id"])), strict=True))
        kinds = [hazard.kind.value for hazard in hazards]
        flows = self.new_flows(len(hazards))
        for position, role in ((0, "earlier"), (-1, "later")):
            rows = np.array([row_of[hazard.command_ids[position]] for hazard in hazards])
            started = numbers["started"][rows]
            moments = np.where(started != MISSING, started, numbers["submitted"][rows])
            tracks = [self.stream_track(stream) for stream in numbers["stream"][rows].tolist()]
            names = self.intern([f"{kind} ({role} command)" for kind in kinds])
            ids, ties = numbers["id"][rows], 4 * rows + 2
            self.events.add(moments, tracks, _INSTANT, names, flows, ids, ties)
        texts = [(hazard.message, hazard.fix) for hazard in hazards]
        self.events.add(
            moments, FINDING_TRACK, _INSTANT, self.intern(kinds), ids=ids, ties=ties, texts=texts
        )

    # -- encoding ---------------------------------------------------------------------

    def header(self) -> bytes:
        """The track descriptors and the interned names, encoded by protobuf's classes."""
        protos = self.protos
        out = protos.Trace()
        tracks = [
            (HOST_TRACK, "host"),
            *((track, stream_name(self.trace, s)) for s, track in self.stream_tracks.items()),
            (RANGE_TRACK, "host ranges"),
            (FINDING_TRACK, "findings"),
        ]
        for rank, (uuid, name) in enumerate(tracks):
            packet = out.packet.add()
            packet.track_descriptor.uuid = uuid
            packet.track_descriptor.name = name
            packet.track_descriptor.sibling_order_rank = rank
        packet = out.packet.add()
        packet.trusted_packet_sequence_id = SEQUENCE
        packet.sequence_flags = protos.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        interned = packet.interned_data
        for name, iid in self.names.items():
            interned.event_names.add(iid=iid, name=name)
        for iid, name in enumerate(_ANNOTATIONS, start=1):
            interned.debug_annotation_names.add(iid=iid, name=name)
        return out.SerializeToString()

    def events_bytes(self) -> bytes:
        """Every track event in time order. The few that carry a finding's text are
        encoded apart, so that their width does not widen the rows of all the others."""
        events = self.events
        if not events.times:
            return b""
        columns = {
            name: np.concatenate(getattr(events, name))
            for name in ("times", "tracks", "types", "names", "flows", "ids", "ties")
        }
        columns["times"] -= self.origin
        texts = [text for block in events.texts for text in block]
        order = np.lexsort((columns["ties"], columns["tracks"], columns["times"]))
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        has_text = np.array([text is not None for text in texts], bool)[order]
        blocks = []
        for rows in (order[~has_text], order[has_text]):
            if len(rows):
                chosen = {name: column[rows] for name, column in columns.items()}
                block_texts = [texts[row] for row in rows.tolist()]
                blocks.append((*self._packets(chosen, block_texts).encoded(), rank[rows]))
        return merged(blocks)

    def _packets(self, columns: dict[str, np.ndarray], texts: list) -> MessageRows:
        """A ``Trace.packet`` field per event: the rows of a ``Trace`` message."""
        count = len(texts)
        field_of = _FieldNumbers(self.protos)
        kinds = self.protos.TrackEvent.Type
        event_types = [
            kinds.Value(f"TYPE_{name}") for name in ("SLICE_END", "SLICE_BEGIN", "INSTANT")
        ]
        types = columns["types"]
        event = MessageRows(count)
        event.varint(field_of.event_type, np.array(event_types)[types])
        event.varint(field_of.track_uuid, columns["tracks"])
        event.varint(field_of.name_iid, columns["names"], types != _END)
        ids = columns["ids"]
        annotation = MessageRows(count)
        annotation.varint(field_of.annotation_name_iid, _ANNOTATIONS.index("command") + 1)
        annotation.varint(field_of.int_value, ids)
        event.message(field_of.debug_annotations, annotation, ids >= 0)
        if any(texts):
            for position, label in ((0, "message"), (1, "fix")):
                text = MessageRows(count)
                text.varint(field_of.annotation_name_iid, _ANNOTATIONS.index(label) + 1)
                text.text(field_of.string_value, [found[position] for found in texts])
                event.message(field_of.debug_annotations, text)
        flows = columns["flows"]
        event.fixed64(field_of.flow_ids, flows, flows > 0)
        packet = MessageRows(count)
        packet.varint(field_of.timestamp, columns["times"])
        packet.varint(field_of.sequence_id, SEQUENCE)
        packet.varint(field_of.sequence_flags, self.protos.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE)
        packet.message(field_of.track_event, event)
        trace = MessageRows(count)
        trace.message(field_of.packet, packet)
        return trace


_ANNOTATIONS = ("command", "message", "fix")


def _origin(trace: Trace) -> int:
    """The trace's start, or its earliest moment if that is earlier: timestamps are
    unsigned."""
    enqueued = trace.table.numbers["enqueued"]
    moments = [
        *([int(enqueued.min())] if len(enqueued) else []),
        *(sync.issued for sync in trace.syncs),
        *(record.begin for record in trace.ranges),
        *(record.begin for record in trace.compiles),
    ]
    started = trace.metadata.started
    return min([started, *moments]) if started else min(moments, default=0)


class _FieldNumbers:
    """The field numbers this export writes, read from the ``.proto`` definitions."""

    def __init__(self, protos: Any) -> None:
        def number(message: Any, name: str) -> int:
            return message.DESCRIPTOR.fields_by_name[name].number

        self.packet = number(protos.Trace, "packet")
        self.timestamp = number(protos.TracePacket, "timestamp")
        self.sequence_id = number(protos.TracePacket, "trusted_packet_sequence_id")
        self.sequence_flags = number(protos.TracePacket, "sequence_flags")
        self.track_event = number(protos.TracePacket, "track_event")
        self.event_type = number(protos.TrackEvent, "type")
        self.track_uuid = number(protos.TrackEvent, "track_uuid")
        self.name_iid = number(protos.TrackEvent, "name_iid")
        self.debug_annotations = number(protos.TrackEvent, "debug_annotations")
        self.flow_ids = number(protos.TrackEvent, "flow_ids")
        self.annotation_name_iid = number(protos.DebugAnnotation, "name_iid")
        self.int_value = number(protos.DebugAnnotation, "int_value")
        self.string_value = number(protos.DebugAnnotation, "string_value")
