"""Chrome Trace Event JSON (opens in Perfetto and ``chrome://tracing``).

Layout: one process; a "host" track (tid 0) with instants for every enqueue, every
upload's host read, every download's host write and every host-side wait; one track per
stream with a complete event per command and instants for signal, wait and callback.
Flow arrows run enqueue -> host read -> execution for uploads (in time order, so under
staging="execute" the read comes after the execution starts) and execution -> host
write for downloads. A flow event directly follows, at the same timestamp, the event it
binds to, because viewers bind flow events to the slice open on that track at that time.
User ranges (``lnb.range``) and kernel compiles are complete events on a track of their
own, "host ranges", after the streams, where viewers nest them; keeping them off the host
track keeps the flows bound to the host instants. Host ranges are at synthetic addresses
(:mod:`~luisa_nb.recording.synthetic_addresses`), as in trace files.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from luisa_nb.recording.atomic_files import atomic_write
from luisa_nb.recording.file_paths import MISSING_FOLDER, checked_path, file_errors
from luisa_nb.recording.naming import describe, describe_sync, drawn_streams, on_host, stream_name
from luisa_nb.recording.records import (
    CommandKind,
    CommandRecord,
    Record,
    SyncRecord,
    record_to_dict,
)
from luisa_nb.recording.synthetic_addresses import with_synthetic_addresses

if TYPE_CHECKING:
    from luisa_nb.recording.trace import Trace

PROCESS_ID = 1
HOST_THREAD = 0
_TIME_FIELDS = ("enqueued", "submitted", "started", "finished", "host_read", "host_write")
_SYNC_TIME_FIELDS = ("issued", "completed")


# -- export ---------------------------------------------------------------------------


def chrome_trace(trace: Trace, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The trace as a Chrome Trace Event document; also written to ``path`` if given
    (atomically; a path that cannot be written raises
    :class:`~luisa_nb.errors.TraceFileError`).

    Timestamps are microseconds from ``metadata.started``, or from the earliest recorded
    time if that is earlier or unset.
    """
    doing = "write the Chrome trace to"
    target = None if path is None else checked_path(path, doing)
    export = _Export(trace)
    document = {
        "traceEvents": export.events(),
        "displayTimeUnit": "ns",
        "otherData": {"format": "luisa_nb.trace", "capture": trace.metadata.capture},
    }
    if target is not None:
        text = json.dumps(document).encode()
        with file_errors(target, doing, MISSING_FOLDER), atomic_write(target) as file:
            file.write(text)
    return document


class _Export:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.records = with_synthetic_addresses(sorted(trace.records, key=lambda r: r.seq))
        self.origin = _origin(trace, self.records)
        streams = drawn_streams(self.records)
        self.threads = {stream: position + 1 for position, stream in enumerate(streams)}
        self.range_thread = len(self.threads) + 1
        self.flow_ids = 0
        self.out: list[dict[str, Any]] = []

    def events(self) -> list[dict[str, Any]]:
        self._metadata()
        for record in self.records:
            if isinstance(record, CommandRecord):
                self._command(record)
            else:
                self._sync(record)
        self._host_activity()
        return self.out

    def _metadata(self) -> None:
        self.out.append(
            {"ph": "M", "name": "process_name", "pid": PROCESS_ID, "args": {"name": "luisa_nb"}}
        )
        names = {HOST_THREAD: "host"}
        names.update({tid: stream_name(self.trace, s) for s, tid in self.threads.items()})
        if self.trace.ranges or self.trace.compiles:
            names[self.range_thread] = "host ranges"
        for tid, name in names.items():
            common = {"ph": "M", "pid": PROCESS_ID, "tid": tid}
            self.out.append({**common, "name": "thread_name", "args": {"name": name}})
            self.out.append({**common, "name": "thread_sort_index", "args": {"sort_index": tid}})

    def _us(self, time: int) -> float:
        return (time - self.origin) / 1000

    def _instant(self, name: str, tid: int, time: int, category: str, args: dict) -> None:
        self.out.append(
            {
                "ph": "i",
                "s": "t",
                "name": name,
                "cat": category,
                "pid": PROCESS_ID,
                "tid": tid,
                "ts": self._us(time),
                "args": args,
            }
        )

    def _command(self, record: CommandRecord) -> None:
        name = describe(self.trace, record)
        tid = self.threads[record.stream]
        args = record_to_dict(record)
        category = record.kind.value
        anchors: list[tuple[int, int]] = []
        if record.started is not None and record.finished is not None:
            self.out.append(
                {
                    "ph": "X",
                    "name": name,
                    "cat": category,
                    "pid": PROCESS_ID,
                    "tid": tid,
                    "ts": self._us(record.started),
                    "dur": (record.finished - record.started) / 1000,
                    "args": args,
                }
            )
            anchors.append((record.started, tid))
        else:
            self._instant(f"{name} ({record.status.value})", tid, record.submitted, category, args)
        self._instant(f"enqueue {name}", HOST_THREAD, record.enqueued, category, {"id": record.id})
        if record.kind is CommandKind.UPLOAD:
            anchors.insert(0, (record.enqueued, HOST_THREAD))
            if record.host_read is not None:
                self._instant(
                    f"host read {name}", HOST_THREAD, record.host_read, category, {"id": record.id}
                )
                anchors.append((record.host_read, HOST_THREAD))
        if record.kind is CommandKind.DOWNLOAD and record.host_write is not None:
            self._instant(
                f"host write {name}", HOST_THREAD, record.host_write, category, {"id": record.id}
            )
            anchors.append((record.host_write, HOST_THREAD))
        if len(anchors) >= 2:
            self._flow(name, category, sorted(anchors))

    def _flow(self, name: str, category: str, anchors: list[tuple[int, int]]) -> None:
        """Flow events binding to the events at ``anchors`` (time, tid), in time order.

        Each is inserted right after the event it binds to, so viewers that sort stably by
        time see the anchor slice open when the flow event arrives.
        """
        self.flow_ids += 1
        last = len(anchors) - 1
        for position, (time, tid) in enumerate(anchors):
            phase = "s" if position == 0 else "f" if position == last else "t"
            event = {
                "ph": phase,
                "id": self.flow_ids,
                "name": name,
                "cat": f"flow.{category}",
                "pid": PROCESS_ID,
                "tid": tid,
                "ts": self._us(time),
            }
            if phase == "f":
                event["bp"] = "e"
            self.out.insert(self._index_after(time, tid), event)

    def _index_after(self, time: int, tid: int) -> int:
        """The position just after the latest event on ``tid`` that starts at ``time``."""
        timestamp = self._us(time)
        for position in range(len(self.out) - 1, -1, -1):
            event = self.out[position]
            if event.get("tid") == tid and event.get("ts") == timestamp and event["ph"] != "M":
                return position + 1
        return len(self.out)

    def _host_activity(self) -> None:
        """A complete event per user range and per kernel compile."""
        stop = self.trace.metadata.stopped
        for record in self.trace.ranges:
            end = record.end if record.end is not None else stop or record.begin
            args = {"depth": record.depth, "parent": record.parent}
            self._slice(record.name, "range", record.begin, end, args)
        for record in self.trace.compiles:
            self._slice(
                record.label, "compile", record.begin, record.end, {"cached": record.cached}
            )

    def _slice(self, name: str, category: str, begin: int, end: int, args: dict) -> None:
        self.out.append(
            {
                "ph": "X",
                "name": name,
                "cat": category,
                "pid": PROCESS_ID,
                "tid": self.range_thread,
                "ts": self._us(begin),
                "dur": max(end - begin, 0) / 1000,
                "args": args,
            }
        )

    def _sync(self, record: SyncRecord) -> None:
        time = record.completed if record.completed is not None else record.issued
        args = record_to_dict(record)
        name = describe_sync(self.trace, record)
        if on_host(record):
            self._instant(name, HOST_THREAD, time, "sync", args)
        else:
            self._instant(name, self.threads[record.stream], time, "sync", args)


def _origin(trace: Trace, records: list[Record]) -> int:
    times = []
    for record in records:
        fields = _TIME_FIELDS if isinstance(record, CommandRecord) else _SYNC_TIME_FIELDS
        times.extend(t for t in (getattr(record, f) for f in fields) if t is not None)
    earliest = min(times, default=trace.metadata.started)
    started = trace.metadata.started
    return min(started, earliest) if started else earliest
