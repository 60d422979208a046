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

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.recording.recorder import DESCRIBED, MISSING, STATUSES, SYNC_COLUMNS, SYNC_KINDS
from luisa_nb.recording.records import (
    Capture,
    CommandKind,
    CommandRecord,
    Status,
    SyncRecord,
)
from luisa_nb.recording.row_appender import HOST_READ, LogSnapshot

if TYPE_CHECKING:
    from luisa_nb.recording.recorder import LoggedRuns, TraceRecorderBase
    from luisa_nb.recording.trace import Trace

KINDS = tuple(CommandKind)
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

_LOGGED_NUMBERS = ("seq", "stream", "submission", "enqueued", "submitted")
"""The number columns read from the log as they are, besides ``id``."""

HostPiece = tuple[int, int, int]
"""``(offset, nbytes, time)``: one piece of an upload read in several pieces."""
CapturedPiece = tuple[int, int, int, Capture]
"""A :data:`HostPiece` and the capture of the bytes read."""


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
        self._rows: dict[int, int] | None = None

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
        """The :class:`CommandRecord` of one row (without making the others; the columns
        as lists are made once, so that a record costs no numpy indexing)."""
        if self._records is not None:
            return self._records[row]
        numbers, objects = self._lists(), self.objects
        times = [numbers[name][row] for name in TIME_COLUMNS]
        return CommandRecord(
            numbers["id"][row],
            numbers["seq"][row],
            KINDS[numbers["kind"][row]],
            numbers["stream"][row],
            numbers["submission"][row],
            numbers["index"][row],
            objects["label"][row],
            objects["device_ranges"][row],
            objects["host"][row],
            POLICIES[numbers["staging"][row]],
            numbers["enqueued"][row],
            numbers["submitted"][row],
            *[None if time == MISSING else time for time in times],
            objects["enqueue_capture"][row],
            objects["data_capture"][row],
            STATUSES[numbers["status"][row]],
            objects["error"][row],
            self.host_pieces.get(row),
        )

    def row_of(self, command_id: int) -> int | None:
        """The row of command ``command_id`` (``None`` when the table has none)."""
        if self._rows is None:
            ids = self.numbers["id"].tolist()
            self._rows = dict(zip(ids, range(len(ids)), strict=True))
        return self._rows.get(command_id)

    def _make_records(self) -> list[CommandRecord]:
        """A record of every row, in order."""
        numbers, objects, rows = self._lists(), self.objects, range(len(self))
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

    def without(self, ids: Collection[int]) -> CommandTable:
        """This table less the commands ``ids`` (the same table when it holds none)."""
        keep = ~np.isin(self.numbers["id"], np.fromiter(ids, np.int64, len(ids)))
        if keep.all():
            return self
        rows = np.flatnonzero(keep)
        numbers = {name: column[rows] for name, column in self.numbers.items()}
        objects = {name: _picked(column, rows) for name, column in self.objects.items()}
        new_row = np.cumsum(keep) - 1
        pieces = {
            int(new_row[row]): pieces for row, pieces in self.host_pieces.items() if keep[row]
        }
        return CommandTable(numbers, objects, pieces)

    def with_ids(self, ids: np.ndarray) -> CommandTable:
        """This table with the command ids ``ids`` (one per row), the rest shared."""
        return CommandTable({**self.numbers, "id": ids}, self.objects, self.host_pieces)

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
        # Runs and host accesses first: every command they name is then in the log. Each
        # log is read a column at a time, when it is needed, and the passes that need the
        # most memory for a while come first: the process keeps the memory the build took
        # at its peak, and what is made later fills what they gave back.
        runs = recorder.run_log()
        accesses = recorder.access_log()
        logged, described = recorder.command_log()
        count = len(logged)
        if not count:
            return cls.empty()
        numbers = {"id": logged["id"]}
        positions = logged["described"]
        rows_of = _row_finder(numbers["id"])
        host_nbytes = [MISSING if host is None else host.nbytes for _, _, _, host, _ in described]
        host_numbers, data_captures, pieces = _host_accesses(
            accesses, rows_of, trace.captures, np.array(host_nbytes, np.int64)[positions]
        )
        run_numbers, errors = _run_times(runs, rows_of, count)
        del rows_of
        numbers.update(host_numbers)
        numbers.update(run_numbers)
        numbers.update((name, logged[name]) for name in _LOGGED_NUMBERS)
        fields = {
            name: _picked([entry[field] for entry in described], positions)
            for field, name in enumerate(DESCRIBED)
        }
        for row, read in pieces.items():
            data_captures[row] = trace.combine_captures([capture for *_, capture in read])
        submission = numbers["submission"]  # rows of one submission are consecutive
        numbers["index"] = np.arange(count)
        numbers["index"] -= np.searchsorted(submission, submission)
        kinds = np.array([KIND_CODES[kind] for kind, *_ in described], np.int64)
        numbers["kind"] = kinds[positions]
        streams, stream_rows = np.unique(numbers["stream"], return_inverse=True)
        policies = [_POLICY_CODES[recorder.staging_of(stream)] for stream in streams.tolist()]
        numbers["staging"] = np.array(policies, np.int64)[stream_rows.reshape(-1)]
        objects = {
            "label": fields["label"],
            "device_ranges": fields["device_ranges"],
            "host": fields["host"],
            "enqueue_capture": fields["enqueue_capture"],
            "data_capture": data_captures,
            "error": errors,
        }
        host_pieces = {
            row: tuple((offset, nbytes, time) for offset, nbytes, time, _ in read)
            for row, read in pieces.items()
        }
        return cls({name: numbers[name] for name in NUMBER_COLUMNS}, objects, host_pieces)


def sync_records(recorder: TraceRecorderBase, count: int) -> list[SyncRecord]:
    """The first ``count`` sync points ``recorder`` logged, as records; a sync point
    completed more than once is as its last completion left it."""
    issued, completions, errors = recorder.sync_log()
    count = min(count, len(issued))
    completed = np.full(count, MISSING, np.int64)
    status = np.full(count, STATUS_CODES[Status.PENDING], np.int64)
    error = np.full(count, MISSING, np.int64)
    syncs = completions["sync"]
    last = np.flatnonzero(syncs < count)
    last = last[_last_of_each(syncs[last])]
    for column, name in ((completed, "completed"), (status, "status"), (error, "error")):
        column[syncs[last]] = completions[name][last]
    lists = {name: issued[name][:count].tolist() for name in SYNC_COLUMNS}
    for name in ("stream", "event", "covers"):
        lists[name] = [None if value == MISSING else value for value in lists[name]]
    texts = [*errors, None]  # -1 picks the None at the end
    return [
        SyncRecord(*fields)
        for fields in zip(
            lists["id"],
            lists["seq"],
            [SYNC_KINDS[code] for code in lists["kind"]],
            lists["stream"],
            lists["event"],
            lists["covers"],
            lists["issued"],
            [None if time == MISSING else time for time in completed.tolist()],
            [STATUSES[code] for code in status.tolist()],
            [texts[code] for code in error.tolist()],
            strict=True,
        )
    ]


def numbered(
    table: CommandTable, syncs: list[SyncRecord]
) -> tuple[CommandTable, list[SyncRecord], np.ndarray]:
    """``table`` and ``syncs`` (fresh records, changed in place) with their records
    numbered from 1 in the order the program made them (the order of the process-wide
    ids the runtime gave them), and those process-wide ids, sorted: record ``n`` had
    the ``n - 1``-th. A trace's numbers are then the same in a fresh process and on a
    rerun (docs/traces.md, "Command ids")."""
    sync_ids = np.fromiter((sync.id for sync in syncs), np.int64, len(syncs))
    process_ids = np.unique(np.concatenate([table.numbers["id"], sync_ids]))
    numbers = (np.searchsorted(process_ids, sync_ids) + 1).tolist()
    for sync, number in zip(syncs, numbers, strict=True):
        sync.id = number
    ids = np.searchsorted(process_ids, table.numbers["id"]) + 1
    return table.with_ids(ids), syncs, process_ids


def _row_finder(ids: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A function giving the row of each of an array of command ids, where ``ids`` (each
    id once) is the id of each row: mostly in increasing order (commands are numbered as
    they are made), then their positions in ``ids`` are the rows."""
    order = None if (ids[1:] > ids[:-1]).all() else np.argsort(ids, kind="stable")
    ordered = ids if order is None else ids[order]

    def rows_of(wanted: np.ndarray) -> np.ndarray:
        found = np.searchsorted(ordered, wanted)
        np.minimum(found, max(len(ordered) - 1, 0), out=found)
        missing = ordered[found] != wanted
        if missing.any():
            raise KeyError(int(wanted[missing][0]))
        return found if order is None else order[found]

    return rows_of


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """The index of the first occurrence of each distinct value of ``keys``."""
    return np.unique(keys, return_index=True)[1]


def _last_of_each(keys: np.ndarray) -> np.ndarray:
    """The index of the last occurrence of each distinct value of ``keys``."""
    return len(keys) - 1 - np.unique(keys[::-1], return_index=True)[1]


def _run_times(
    logged: LoggedRuns, rows_of: Callable[[np.ndarray], np.ndarray], count: int
) -> tuple[dict[str, np.ndarray], list[str | None]]:
    """The times and outcomes of the ``count`` rows (``rows_of`` gives the row of command
    ids), from the runs that ran them: the number columns ``started``, ``finished``,
    ``status``, ``device_started`` and ``device_finished``, and each row's error.

    Read as if the runs were applied one after another: a run's ticks are when its steps
    started, the one after a step's when it finished, and a row's first start counts and
    its last finish (a step of several pieces spans all of them); a failure marks its step
    failed and the later steps of its run skipped, unless a later run finished them
    again. A run that ended early ran only its first steps; the others ran in runs of
    their own."""
    firsts, sizes = logged.runs["first_step"], logged.runs["steps"]
    ran = sizes.copy()
    for run, end in logged.ends.items():
        ran[run] = min(end, ran[run])
    step_rows = rows_of(logged.steps["id"][: sizes.sum()])  # later steps: later runs'
    numbers, finished_by = _tick_times(logged.ticks, firsts, sizes, ran, step_rows, count)
    finished, status = numbers["finished"], numbers["status"]
    errors: list[str | None] = [None] * count
    skipped = STATUS_CODES[Status.SKIPPED]
    for run in sorted(logged.failures):
        position, failed_status, error, when = logged.failures[run]
        first = firsts[run]
        rows = step_rows[first : first + ran[run]].tolist()
        later_runs = first + sizes[run]  # a step from here on finished after the failure
        row = rows[position]
        if finished_by[row] < later_runs:
            finished[row], status[row] = when, STATUS_CODES[failed_status]
        errors[row] = error
        for later in rows[position + 1 :]:
            if later != row and finished_by[later] < later_runs:
                status[later] = skipped
    for name in ("device_started", "device_finished"):
        numbers[name] = np.full(count, MISSING, np.int64)
    for run in sorted(logged.spans):
        first = firsts[run]
        rows = step_rows[first : first + ran[run]].tolist()
        for position, span in logged.spans[run]:
            row = rows[position]
            if span.started is not None:
                numbers["device_started"][row] = span.started
            if span.finished is not None:
                numbers["device_finished"][row] = span.finished
    return numbers, errors


def _tick_times(
    ticks: LogSnapshot,
    firsts: np.ndarray,
    sizes: np.ndarray,
    ran: np.ndarray,
    step_rows: np.ndarray,
    count: int,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The columns ``started``, ``finished`` and ``status`` of the ``count`` rows as the
    runs' ticks give them (run ``r``: steps ``firsts[r]`` on, ``sizes[r]`` of them, the
    first ``ran[r]`` run; ``step_rows``: the row of each step), and the step whose run
    finished each row last (-1: none). Arrays a step long are dropped once used: the
    process keeps the memory the build took at its peak."""
    tick_runs, tick_times = ticks["run"], ticks["time"]
    if (tick_runs[1:] < tick_runs[:-1]).any():  # workers of several streams ticked at once
        order = np.argsort(tick_runs, kind="stable")
        tick_runs, tick_times = tick_runs[order], tick_times[order]
    run_numbers = np.arange(len(sizes))
    tick_firsts = np.searchsorted(tick_runs, run_numbers)
    ticks_end = np.repeat(np.searchsorted(tick_runs, run_numbers, side="right"), sizes)
    del tick_runs
    steps = np.arange(len(step_rows))
    start_ticks = np.repeat(tick_firsts - firsts, sizes)  # the tick each step started at
    start_ticks += steps
    kept = steps < np.repeat(firsts + ran, sizes)
    del steps
    begun = np.flatnonzero(kept & (start_ticks < ticks_end))
    ticks_end -= 1
    done = np.flatnonzero(kept & (start_ticks < ticks_end))
    del kept, ticks_end
    started = np.full(count, MISSING, np.int64)
    begun = begun[_first_of_each(step_rows[begun])]
    started[step_rows[begun]] = tick_times[start_ticks[begun]]
    del begun
    finished = np.full(count, MISSING, np.int64)
    status = np.full(count, STATUS_CODES[Status.PENDING], np.int64)
    finished_by = np.full(count, -1, np.int64)
    done = done[_last_of_each(step_rows[done])]
    finished[step_rows[done]] = tick_times[start_ticks[done] + 1]
    status[step_rows[done]] = STATUS_CODES[Status.OK]
    finished_by[step_rows[done]] = done
    return {"started": started, "finished": finished, "status": status}, finished_by


def _host_accesses(
    accesses: LogSnapshot,
    rows_of: Callable[[np.ndarray], np.ndarray],
    captures: dict[bytes, Capture],
    host_nbytes: np.ndarray,
) -> tuple[dict[str, np.ndarray], list[Capture | None], dict[int, list[CapturedPiece]]]:
    """The host read and write times of each row and the capture of the bytes it moved,
    from ``accesses`` (``rows_of`` gives the row of a command id; a digest names the
    capture of the bytes in ``captures``); and the pieces of the uploads read in several
    pieces (a read of fewer bytes than the row's host range, ``host_nbytes``), by row. A
    row's read time is its first read's, its write time its last write's, and its
    capture that of the later of the two."""
    # Grouping the digests takes the most memory for a while: first, while little is kept.
    digests = np.stack([accesses["digest"], accesses["digest_end"]], axis=1)
    digests, codes = np.unique(digests, axis=0, return_inverse=True)
    captured = [captures[digest.tobytes()] for digest in digests]
    codes = codes.reshape(-1)
    access_rows = rows_of(accesses["id"])
    kinds = accesses["kind"]
    reads = np.flatnonzero(kinds == HOST_READ)
    first_reads = reads[_first_of_each(access_rows[reads])]
    writes = np.flatnonzero(kinds != HOST_READ)
    last_writes = writes[_last_of_each(access_rows[writes])]
    del kinds, writes
    count = len(host_nbytes)
    times = accesses["time"]
    numbers = {}
    for name, chosen in (("host_read", first_reads), ("host_write", last_writes)):
        numbers[name] = np.full(count, MISSING, np.int64)
        numbers[name][access_rows[chosen]] = times[chosen]
    moved = np.full(count, len(captured), np.int64)  # each row's capture; past the end: none
    moved_at = np.full(count, -1, np.int64)  # the access it is from
    for chosen in (first_reads, last_writes):
        chosen = chosen[chosen > moved_at[access_rows[chosen]]]
        moved[access_rows[chosen]] = codes[chosen]
        moved_at[access_rows[chosen]] = chosen
    del moved_at
    data_captures = np.fromiter([*captured, None], object, len(captured) + 1)[moved].tolist()
    nbytes = np.array([capture.nbytes for capture in captured], np.int64)[codes[reads]]
    pieced = reads[nbytes != host_nbytes[access_rows[reads]]].tolist()
    pieces: dict[int, list[CapturedPiece]] = {}
    if pieced:
        offsets = accesses["offset"]
        for index in pieced:
            capture = captured[codes[index]]
            piece = (int(offsets[index]), capture.nbytes, int(times[index]), capture)
            pieces.setdefault(int(access_rows[index]), []).append(piece)
    return numbers, data_captures, pieces


def _picked(values: list[Any], indices: np.ndarray) -> list[Any]:
    """``values[i]`` for each of ``indices``."""
    return np.fromiter(values, object, len(values))[indices].tolist()
