"""A trace recorder's rows: the hooks the runtime calls once per command, which append
the plain values it hands them (ids, times, host bytes, trace fields), and the logs they
append to.

A trace's recorder (:class:`~luisa_nb.recording.recorder.TraceRecorder`) takes the hooks
``submitted``, ``submitted_one``, ``host_read``, ``host_reads``, ``host_write``,
``upload_enqueued``, ``stamp_sync`` and ``run_timer`` from :data:`RowAppender`: the C extension
``_row_appender`` where it was built (installing luisa_nb builds it when a C compiler
and Python's headers are there), else :class:`PythonRowAppender`, which does the same in
Python. Neither reads an attribute of a runtime object. Each hook handles the common
case itself and calls the recorder's Python methods for the rest:
``_first_submission_of`` (a stream's first submission), ``_describe`` (trace fields not
seen before), ``_note_array`` (a host array not named yet) and ``_capture`` (bytes not
seen before); the stream and commands these get are the ones the runtime handed
``submitted``, passed on unread.

The C appender does more of the rest itself, with the same results (tested against the
Python hooks): ``upload_enqueued`` names a new array from the variables of the user's
frame as ``_note_array`` does (a view no variable holds is left to ``_note_array``, which
names it after the array it views); a new capture whose bytes the policy keeps whole, or
not at all, is made into the trace's ``_blobs`` without calling ``_capture``; and it has
the sync hooks ``sync_issued`` and ``sync_completed`` (reading a stream's ``id``, the one
attribute of a runtime object it reads), which log the rows of ``syncs`` and
``sync_completions`` that the recorder's Python hooks log.

The logs are rows of int64 values (:class:`Log`), so a long loop leaves no Python object
per command or run in them (with a tuple per submission, the garbage collector's passes
over young objects cost as much as the rest of the hook):

- ``submissions``: a row per command (:data:`SUBMISSION_COLUMNS`); the commands of one
  submission share its number (1, 2, 3, ... in the order they were submitted) and its
  time, and have consecutive seqs. ``described`` is the position of the command's trace
  fields in the recorder's ``described`` list.
- ``accesses``: a row per host read or write (:data:`ACCESS_COLUMNS`); the binary
  digest of its bytes takes the last two columns (:func:`digests_of`).
- ``runs``: a row per run a worker started (:data:`RUN_COLUMNS`), numbered by its row;
  ``steps``: the command id of each step of every run, run after run.
- ``ticks``: a row per tick of a run's worker (:data:`TICK_COLUMNS`): the time before each
  step and after the last. Workers of several streams tick at once, so each row names
  its run. ``run_timer(ids)`` logs a run of the steps with those command ids and
  returns its :class:`RunLog`, which the worker ticks.

Seqs number a trace's commands and sync points in the order the host issued them, from
1 in each trace. ``submitted`` and ``stamp_sync`` draw seqs and the time and append in
one step (the C hooks run no Python code in between, so no other thread can; the Python
ones hold a lock). Host reads and writes are ordered by the runtime's host-memory lock,
which the runtime holds around them.
"""

from __future__ import annotations

import itertools
import operator
import os
import struct
import threading
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
from xxhash import xxh3_128_digest

from luisa_nb.recording.clock import now

SUBMISSION_COLUMNS = ("submission", "stream", "submitted", "seq", "id", "enqueued", "described")
ACCESS_COLUMNS = ("id", "kind", "offset", "time", "digest", "digest_end")
RUN_COLUMNS = ("first_step", "steps")
TICK_COLUMNS = ("run", "time")
SYNC_COLUMNS = ("id", "seq", "kind", "stream", "event", "covers", "issued")
"""A row of a recorder's ``syncs``: a sync point as it was issued (``kind`` by its position
in the recorder's ``SYNC_KINDS``)."""
COMPLETION_COLUMNS = ("sync", "completed", "status", "error")
"""A row of a recorder's ``sync_completions``: the sync point's row in ``syncs``, ``status``
by its position in the recorder's ``STATUSES``, ``error`` by its position in ``sync_errors``."""
SUBMISSION_WIDTH = len(SUBMISSION_COLUMNS)
ACCESS_WIDTH = len(ACCESS_COLUMNS)
RUN_WIDTH = len(RUN_COLUMNS)
TICK_WIDTH = len(TICK_COLUMNS)
SYNC_WIDTH = len(SYNC_COLUMNS)
COMPLETION_WIDTH = len(COMPLETION_COLUMNS)
STREAM_COLUMN = SUBMISSION_COLUMNS.index("stream")
SEQ_COLUMN = SUBMISSION_COLUMNS.index("seq")
HOST_READ = 0
HOST_WRITE = 1
DIGEST_BYTES = 16
UNNAMED_LIMIT = 8
"""How many unnamed arrays one line of user code may make before it is not looked at."""
_SUBMISSION_ROW = struct.Struct(f"={SUBMISSION_WIDTH}q")
"""A submission row as native int64 bytes: appending bytes is faster than appending ints."""
_ACCESS_HEAD = struct.Struct("=4q")
"""The values of an access row before its digest, as native int64 bytes."""
_TICK = struct.Struct(f"={TICK_WIDTH}q")


class PythonLog:
    """Rows of ``width`` int64 values, appended to and read as bytes (the C ``Log``). A run's
    times are a log of one value per row, which the worker ticks."""

    __slots__ = ("_values", "width")

    def __init__(self, width: int) -> None:
        if width < 1:
            raise ValueError("a log's rows hold at least one value")
        self.width = width
        self._values = array("q")

    def append(self, *values: int) -> None:
        if len(values) != self.width:
            raise TypeError(f"a row of this log holds {self.width} values, not {len(values)}")
        self._values.extend(values)

    def __len__(self) -> int:
        return len(self._values) // self.width

    def tick(self) -> None:
        """Append the clock (a log of one value per row)."""
        if self.width != 1:
            raise ValueError("tick() appends to a log of one value per row")
        self._values.append(now())

    def frombytes(self, data: bytes | memoryview) -> None:
        """Append rows given as native int64 values."""
        row_bytes, nbytes = self.width * self._values.itemsize, memoryview(data).nbytes
        if nbytes % row_bytes:
            raise ValueError(f"{nbytes} bytes are not whole rows of {row_bytes} bytes")
        self._values.frombytes(data)

    def tobytes(self, start: int = 0) -> bytes:
        """The rows from ``start`` on, as native int64 values."""
        return self._values[max(start, 0) * self.width :].tobytes()

    def column(self, index: int, stop: int) -> np.ndarray:
        """Column ``index`` of rows ``[0, stop)``, as a new int64 array."""
        if not 0 <= index < self.width:
            raise IndexError("log column out of range")
        stop = min(max(stop, 0), len(self))
        return np.array(self._values[index : stop * self.width : self.width], np.int64)

    def row(self, index: int) -> tuple[int, ...]:
        rows = len(self)
        if not -rows <= index < rows:
            raise IndexError("log row out of range")
        start = (index % rows) * self.width
        return tuple(self._values[start : start + self.width])

    def last_row_where(self, column: int, value: int, stop: int) -> int:
        """The index of the last row from ``stop`` on whose ``column`` holds ``value``, or
        -1."""
        if not 0 <= column < self.width:
            raise IndexError("log column out of range")
        values, width = self._values, self.width
        for index in range(len(values) // width - 1, max(stop, 0) - 1, -1):
            if values[index * width + column] == value:
                return index
        return -1


def rows_of(log: Any, start: int = 0) -> np.ndarray:
    """The rows of ``log`` from ``start`` on as an int64 array of shape (rows, width): a
    copy, which later appends leave alone."""
    return np.frombuffer(log.tobytes(start), np.int64).reshape(-1, log.width)


class LogSnapshot:
    """The rows a log held when this was made, read a column at a time: a log only grows,
    so those rows never change, and reading them needs no copy of every row at once."""

    __slots__ = ("_columns", "_log", "rows")

    def __init__(self, log: Any, columns: Sequence[str]) -> None:
        self._log = log
        self._columns = columns
        self.rows = len(log)

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, name: str) -> np.ndarray:
        """Column ``name`` (a new int64 array)."""
        return self._log.column(self._columns.index(name), self.rows)


def digests_of(rows: np.ndarray) -> list[bytes]:
    """The binary digest of each access row of ``rows`` (from :func:`rows_of`)."""
    packed = np.ascontiguousarray(rows[:, -2:]).tobytes()
    return [packed[start : start + DIGEST_BYTES] for start in range(0, len(packed), DIGEST_BYTES)]


class PythonRowAppender:
    """The hooks of the C ``RowAppender``, in Python. The logs and the dicts the hooks look
    things up in are made with the object (as the C type makes them), so a recorder's
    ``__init__`` finds them there."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        self = super().__new__(cls)
        self.submissions = PythonLog(SUBMISSION_WIDTH)
        self.accesses = PythonLog(ACCESS_WIDTH)
        self.steps = PythonLog(1)
        self.runs = PythonLog(RUN_WIDTH)
        self.ticks = PythonLog(TICK_WIDTH)
        self._described_at = {}
        self._policies = {}
        self._array_names = {}
        self._unnamed_sites = {}
        self.syncs = PythonLog(SYNC_WIDTH)
        self.sync_completions = PythonLog(COMPLETION_WIDTH)
        self.sync_errors = []
        self._host_waits = {}
        self._looked_at = {}
        self._last_placed = {}
        self._captured = {}
        self._numbers = itertools.count(1)
        self._last_seq = 0
        self._stamp_lock = threading.Lock()
        return self

    def submitted(
        self,
        stream_id: int,
        ids: Sequence[int],
        enqueued: Sequence[int],
        fields: Sequence[Any],
        stream: Any,
        commands: Sequence[Any],
    ) -> None:
        """A list was submitted to stream ``stream_id``: a row per command, given by its
        id, enqueue time and trace fields. ``stream`` and ``commands`` are passed on to
        ``_first_submission_of`` and ``_describe``, unread."""
        count = len(fields)
        if len(ids) != count or len(enqueued) != count:
            raise ValueError(f"submitted(): {len(ids)} ids and {len(enqueued)} times "
                             f"for {count} commands")  # fmt: skip
        if count == 1:
            self.submitted_one(stream_id, ids[0], enqueued[0], fields[0], stream, commands[0])
            return
        # ints now, as the C hook reads them: no seq is drawn for bad values
        ids, enqueued = list(map(operator.index, ids)), list(map(operator.index, enqueued))
        stream_id = operator.index(stream_id)
        if stream_id not in self._policies:
            self._first_submission_of(stream)
        described_at = self._described_at
        positions = []
        previous = position = None
        for position_in_list, described in enumerate(fields):
            if described is not previous:  # a list's commands mostly share their fields
                previous = described
                position = described_at.get(id(described))
                if position is None:
                    position = self._describe(described, commands[position_in_list], stream)
            positions.append(position)
        if not count:
            return
        with self._stamp_lock:
            first, number, submitted = self._last_seq + 1, next(self._numbers), now()
            self._last_seq += count
            rows = zip(range(first, first + count), ids, enqueued, positions, strict=True)
            pack = _SUBMISSION_ROW.pack
            self.submissions._values.frombytes(
                b"".join([pack(number, stream_id, submitted, *row) for row in rows])
            )  # in one call: never half a row

    def submitted_one(
        self,
        stream_id: int,
        command_id: int,
        enqueued: int,
        fields: Any,
        stream: Any,
        command: Any,
    ) -> None:
        """:meth:`submitted` of one command, given its values themselves."""
        command_id, enqueued = operator.index(command_id), operator.index(enqueued)
        stream_id = operator.index(stream_id)
        if stream_id not in self._policies:
            self._first_submission_of(stream)
        position = self._described_at.get(id(fields))
        if position is None:
            position = self._describe(fields, command, stream)
        append, lock = self.submissions._values.frombytes, self._stamp_lock
        lock.acquire()  # not `with`: two bound methods fewer
        try:
            seq = self._last_seq = self._last_seq + 1
            append(_SUBMISSION_ROW.pack(next(self._numbers), stream_id, now(), seq,
                                        command_id, enqueued, position))  # fmt: skip
        finally:
            lock.release()

    def host_read(
        self, command_id: int, offset: int, data: np.ndarray, at: int | None = None
    ) -> None:
        self._host_access(command_id, HOST_READ, offset, data, now() if at is None else at)

    def host_reads(
        self, command_ids: Sequence[int], offset: int, data: np.ndarray, at: int
    ) -> None:
        """:meth:`host_read` of each of the commands, which read the same bytes at ``at``."""
        ids = list(map(operator.index, command_ids))
        offset, at = operator.index(offset), operator.index(at)
        if not ids:
            return
        digest = xxh3_128_digest(data)
        if digest not in self._captured:
            self._capture(data, digest)
        rows = [_ACCESS_HEAD.pack(command_id, HOST_READ, offset, at) + digest for command_id in ids]
        self.accesses._values.frombytes(b"".join(rows))  # in one call: never some of the rows

    def host_write(self, command_id: int, data: np.ndarray, at: int | None = None) -> None:
        self._host_access(command_id, HOST_WRITE, 0, data, now() if at is None else at)

    def _host_access(self, command_id: int, kind: int, offset: int, data: Any, time: int) -> None:
        digest = xxh3_128_digest(data)
        if digest not in self._captured:
            self._capture(data, digest)
        row = _ACCESS_HEAD.pack(command_id, kind, offset, time) + digest
        self.accesses._values.frombytes(row)  # in one call: never half a row

    def upload_enqueued(self, host: np.ndarray, data: np.ndarray) -> Any:
        known = self._array_names.get(id(host))
        if known is None or known[0]() is not host:
            self._note_array(host)
        digest = xxh3_128_digest(data)
        captured = self._captured.get(digest)
        return self._capture(data, digest) if captured is None else captured

    def run_timer(self, ids: Sequence[int]) -> PythonRunLog:
        """Log a run of the steps with command ids ``ids``, in order; returns its timer."""
        ids = array("q", ids)
        with self._stamp_lock:
            run, first = len(self.runs), len(self.steps)
            self.steps._values.extend(ids)  # first: a run logged has its steps
            self.runs.append(first, len(ids))
        return PythonRunLog(self, run)

    def stamp_sync(self, stream_id: int | None, stop: int) -> tuple[int, int, int, int]:
        """A sync point's seq and time, the index of the last submission row of stream
        ``stream_id`` (``None``: no stream) from row ``stop`` on (-1: none), and the number
        of rows then: the commands with a lower seq."""
        with self._stamp_lock:
            log = self.submissions
            last = -1 if stream_id is None else log.last_row_where(STREAM_COLUMN, stream_id, stop)
            self._last_seq += 1
            return self._last_seq, now(), last, len(log)


class PythonRunLog:
    """The timer of one traced run (the C ``RunLog``): each tick is a row (run, time) of its
    recorder's ``ticks``; a failure, an early end and device spans go to the recorder's
    ``_run_failed``, ``_run_ended`` and ``_run_spans``. Its ``times``, which the worker and
    the backends tick, is itself."""

    __slots__ = ("_appender", "run")

    def __init__(self, appender: PythonRowAppender, run: int) -> None:
        self._appender = appender
        self.run = run

    @property
    def times(self) -> PythonRunLog:
        return self

    def tick(self) -> None:
        self._appender.ticks._values.extend((self.run, now()))  # in one call: never half a row

    def append(self, time: int) -> None:
        self._appender.ticks._values.extend((self.run, time))

    tick_at = append

    def frombytes(self, data: bytes | memoryview) -> None:
        times = memoryview(data).cast("B").cast("q")
        self._appender.ticks._values.frombytes(
            b"".join([_TICK.pack(self.run, time) for time in times])
        )

    def failed(self, position: int, status: Any, error: str) -> None:
        self._appender._run_failed(self.run, position, status, error)

    def end_at(self, count: int) -> None:
        self._appender._run_ended(self.run, count)

    def spans(self, spans: Sequence[tuple[int, Any]]) -> None:
        if spans:
            self._appender._run_spans(self.run, spans)


PYTHON_HOOKS_VARIABLE = "LUISA_NB_PYTHON_RECORDER"
"""Set (to anything but empty or 0), traces use the Python hooks even where the C appender
was built: to measure them, or to rule the C appender out when something looks wrong."""


try:
    if os.environ.get(PYTHON_HOOKS_VARIABLE, "") not in ("", "0"):
        raise ImportError(f"{PYTHON_HOOKS_VARIABLE} is set")
    from luisa_nb.recording._row_appender import Log, RowAppender, RunLog
except ImportError:  # not built (no C compiler or Python headers at install), or not wanted
    Log, RowAppender, RunLog = PythonLog, PythonRowAppender, PythonRunLog

NATIVE = RowAppender is not PythonRowAppender
"""Whether the hooks run in C."""
