"""Commands as columns: what a trace holds once it is read.

A live trace builds its :class:`CommandTable` from the recorder's logs (a consistent
snapshot of what had been recorded when it was asked for); a loaded trace reads one from
its file. Numbers are numpy ``int64`` columns with :data:`MISSING` for "not known";
device ranges, host ranges and captures are shared objects referred to from lists, so
one command costs about twenty numbers and a few pointers, not an object per field.
:meth:`CommandTable.records` gives :class:`CommandRecord` views for code that prefers
objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.recording.recorder import DESCRIBED
from luisa_nb.recording.recorder_core import HOST_READ, SUBMISSION_COLUMNS, rows_of
from luisa_nb.recording.records import (
    Capture,
    CommandKind,
    CommandRecord,
    HostRange,
    Status,
)

if TYPE_CHECKING:
    from luisa_nb.recording.recorder import TraceRecorderBase
    from luisa_nb.recording.trace import Trace

MISSING = -1
KINDS = tuple(CommandKind)
STATUSES = tuple(Status)
POLICIES = ("submit", "execute")
KIND_CODES = {kind: code for code, kind in enumerate(KINDS)}
STATUS_CODES = {status: code for code, status in enumerate(STATUSES)}
_POLICY_CODES = {policy: code for code, policy in enumerate(POLICIES)}

NUMBER_COLUMNS = (
    "id",
    "seq",
    "kind",
    "stream",
    "submission",
    "index",
    "staging",
    "enqueued",
    "submitted",
    "started",
    "finished",
    "host_read",
    "host_write",
    "device_started",
    "device_finished",
    "status",
)
TIME_COLUMNS = (
    "started",
    "finished",
    "host_read",
    "host_write",
    "device_started",
    "device_finished",
)
"""The columns that may be :data:`MISSING` (``None`` in a :class:`CommandRecord`)."""
OBJECT_COLUMNS = ("label", "device_ranges", "host", "enqueue_capture", "data_capture", "error")

HostPiece = tuple[int, int, int]
"""``(offset, nbytes, time)``: one piece of an upload read in several pieces."""


class CommandTable:
    """Every command of a trace, one row each, in the order they were submitted.

    ``host_pieces`` maps the row of an upload that read host memory in several pieces
    (one larger than the staging heap) to those pieces; ``host_read`` is the first's time.
    """

    def __init__(
        self,
        numbers: dict[str, np.ndarray],
        objects: dict[str, list[Any]],
        host_pieces: dict[int, tuple[HostPiece, ...]] | None = None,
    ) -> None:
        self.numbers = numbers
        self.objects = objects
        self.host_pieces = host_pieces or {}
        self._records: list[CommandRecord] | None = None
        self._number_lists: dict[str, list[int]] | None = None

    def __len__(self) -> int:
        return len(self.numbers["id"])

    @classmethod
    def empty(cls) -> CommandTable:
        numbers = {name: np.zeros(0, np.int64) for name in NUMBER_COLUMNS}
        return cls(numbers, {name: [] for name in OBJECT_COLUMNS})

    def records(self) -> list[CommandRecord]:
        """A :class:`CommandRecord` per row (made once, then shared)."""
        if self._records is None:
            self._records = self._make_records()
        return self._records

    def record(self, row: int) -> CommandRecord:
        """The :class:`CommandRecord` of one row (without making the others)."""
        if self._records is not None:
            return self._records[row]
        return self._make_records([row])[0]

    def _make_records(self, rows: list[int] | None = None) -> list[CommandRecord]:
        """Records of ``rows`` (default: every row, in order)."""
        if rows is None:
            numbers, objects, rows = self._lists(), self.objects, range(len(self))
        else:
            numbers = {name: column[rows].tolist() for name, column in self.numbers.items()}
            objects = {name: [column[row] for row in rows] for name, column in self.objects.items()}
        optional = [
            [None if value == MISSING else value for value in numbers[name]]
            for name in TIME_COLUMNS
        ]
        pieces = self.host_pieces
        return [
            CommandRecord(*fields)
            for fields in zip(
                numbers["id"],
                numbers["seq"],
                [KINDS[code] for code in numbers["kind"]],
                numbers["stream"],
                numbers["submission"],
                numbers["index"],
                objects["label"],
                objects["device_ranges"],
                objects["host"],
                [POLICIES[code] for code in numbers["staging"]],
                numbers["enqueued"],
                numbers["submitted"],
                *optional,
                objects["enqueue_capture"],
                objects["data_capture"],
                [STATUSES[code] for code in numbers["status"]],
                objects["error"],
                [pieces.get(row) for row in rows],
                strict=True,
            )
        ]

    def _lists(self) -> dict[str, list[int]]:
        """The number columns as Python lists (fast to index one by one)."""
        if self._number_lists is None:
            self._number_lists = {name: column.tolist() for name, column in self.numbers.items()}
        return self._number_lists

    @classmethod
    def from_records(cls, records: Sequence[CommandRecord]) -> CommandTable:
        """A table of ``records`` (in row order)."""
        table = cls.empty()
        if not records:
            return table
        numbers: dict[str, list[int]] = {name: [] for name in NUMBER_COLUMNS}
        objects: dict[str, list[Any]] = {name: [] for name in OBJECT_COLUMNS}
        pieces = {}
        for row, record in enumerate(records):
            for name in NUMBER_COLUMNS:
                value = getattr(record, name)
                if name == "kind":
                    value = KIND_CODES[value]
                elif name == "status":
                    value = STATUS_CODES[value]
                elif name == "staging":
                    value = _POLICY_CODES[value]
                numbers[name].append(MISSING if value is None else value)
            for name in OBJECT_COLUMNS:
                objects[name].append(getattr(record, name))
            if record.host_pieces:
                pieces[row] = tuple(record.host_pieces)
        arrays = {name: np.array(values, np.int64) for name, values in numbers.items()}
        return cls(arrays, objects, pieces)

    @classmethod
    def from_log(cls, recorder: TraceRecorderBase, trace: Trace) -> CommandTable:
        """A snapshot of what ``recorder`` has heard so far."""
        # Runs and host accesses first: every command they name is then in the log.
        runs = recorder.runs[:]
        accesses, digests = recorder.access_log()
        logged, described = recorder.command_log()
        count = len(logged)
        if not count:
            return cls.empty()
        columns = dict(zip(SUBMISSION_COLUMNS, logged.T, strict=True))
        row_of = dict(zip(columns["id"].tolist(), range(count), strict=True))
        started = [MISSING] * count
        finished = [MISSING] * count
        status = [STATUS_CODES[Status.PENDING]] * count
        errors: list[str | None] = [None] * count
        device_started = [MISSING] * count
        device_finished = [MISSING] * count
        _apply_runs(
            runs, row_of, started, finished, status, errors, device_started, device_finished
        )
        positions = columns["described"]
        rows = [described[position] for position in positions.tolist()]
        fields = dict(zip(DESCRIBED, zip(*rows, strict=True), strict=True))
        hosts = fields["host"]
        host_read = [MISSING] * count
        host_write = [MISSING] * count
        data_captures: list[Capture | None] = [None] * count
        pieces = _apply_host_accesses(
            accesses, digests, row_of, trace.captures, hosts, host_read, host_write, data_captures
        )
        for row, read in pieces.items():
            data_captures[row] = trace.combine_captures([capture for *_, capture in read])
        numbers = {
            name: np.ascontiguousarray(columns[name])
            for name in ("id", "seq", "stream", "submission", "enqueued", "submitted")
        }
        submission = columns["submission"]  # rows of one submission are consecutive
        numbers["index"] = np.arange(count) - np.searchsorted(submission, submission)
        kinds = np.array([KIND_CODES[kind] for kind, *_ in described], np.int64)
        numbers["kind"] = kinds[positions]
        streams, stream_rows = np.unique(columns["stream"], return_inverse=True)
        policies = [_POLICY_CODES[recorder.staging_of(stream)] for stream in streams.tolist()]
        numbers["staging"] = np.array(policies, np.int64)[stream_rows.reshape(-1)]
        for name, values in (
            ("started", started),
            ("finished", finished),
            ("host_read", host_read),
            ("host_write", host_write),
            ("device_started", device_started),
            ("device_finished", device_finished),
            ("status", status),
        ):
            numbers[name] = np.array(values, np.int64)
        objects = {
            "label": list(fields["label"]),
            "device_ranges": list(fields["device_ranges"]),
            "host": list(hosts),
            "enqueue_capture": list(fields["enqueue_capture"]),
            "data_capture": data_captures,
            "error": errors,
        }
        host_pieces = {
            row: tuple((offset, nbytes, time) for offset, nbytes, time, _ in read)
            for row, read in pieces.items()
        }
        return cls(numbers, objects, host_pieces)


def _apply_runs(
    runs: Sequence[Any],
    row_of: dict[int, int],
    started: list[int],
    finished: list[int],
    status: list[int],
    errors: list[str | None],
    device_started: list[int],
    device_finished: list[int],
) -> None:
    """Times and outcomes of each step: ``times[i]`` is when step ``i`` started and
    ``times[i + 1]`` when it finished; a step of several pieces spans all of them.
    ``row_of`` gives the row of a command id."""
    ok, skipped = STATUS_CODES[Status.OK], STATUS_CODES[Status.SKIPPED]
    for run in runs:
        times = rows_of(run.times).reshape(-1).tolist()
        ticks = len(times)
        rows = [row_of[command_id] for command_id in run.step_ids()]
        for position, row in enumerate(rows[:ticks]):
            if started[row] == MISSING:
                started[row] = times[position]
            if position + 1 < ticks:
                finished[row] = times[position + 1]
                status[row] = ok
        failure = run.failure
        if failure is not None:
            position, failed_status, error, when = failure
            row = rows[position]
            finished[row], status[row], errors[row] = when, STATUS_CODES[failed_status], error
            for later in rows[position + 1 :]:
                if later != row:
                    status[later] = skipped
        for position, span in run.device_spans:
            row = rows[position]
            if span.started is not None:
                device_started[row] = span.started
            if span.finished is not None:
                device_finished[row] = span.finished


def _apply_host_accesses(
    accesses: np.ndarray,
    digests: Sequence[bytes],
    row_of: dict[int, int],
    captures: dict[bytes, Capture],
    hosts: Sequence[HostRange | None],
    host_read: list[int],
    host_write: list[int],
    data_captures: list[Capture | None],
) -> dict[int, list[tuple[int, int, int, Capture]]]:
    """Host read and write times and the bytes moved (``accesses``: a row per access, and
    ``digests``, the key of each one's bytes in ``captures``); returns the pieces of
    uploads read in several pieces, by row."""
    pieces: dict[int, list[tuple[int, int, int, Capture]]] = {}
    rows = accesses[:, :4].tolist()
    for (command_id, kind, offset, time), digest in zip(rows, digests, strict=True):
        row = row_of[command_id]
        capture = captures[digest]
        if kind == HOST_READ:
            if host_read[row] == MISSING:
                host_read[row] = time
                data_captures[row] = capture
            if capture.nbytes != hosts[row].nbytes:
                pieces.setdefault(row, []).append((offset, capture.nbytes, time, capture))
        else:
            host_write[row] = time
            data_captures[row] = capture
    return pieces
