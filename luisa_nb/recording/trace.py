"""The :class:`Trace`: records, captured bytes, and the clock they share."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash
from xxhash import xxh3_128_digest

from luisa_nb.errors import ConfigurationError, RecordNotFoundError, TraceError
from luisa_nb.recording.clock import now
from luisa_nb.recording.ranges import innermost_ranges
from luisa_nb.recording.recorder import HOST_FIELD, TraceRecorder
from luisa_nb.recording.records import (
    BufferInfo,
    Capture,
    CommandRecord,
    CompileRecord,
    DevicePrintRecord,
    DeviceRange,
    HostRange,
    KernelLaunch,
    RangeRecord,
    Record,
    ReleaseRecord,
    StreamInfo,
    SyncRecord,
    TraceMetadata,
)
from luisa_nb.recording.table import CommandTable, numbered, sync_records

if TYPE_CHECKING:
    import pandas
    import pyarrow

__all__ = [
    "CAPTURE_POLICIES",
    "DEFAULT_CAPTURE_BYTES",
    "DEFAULT_CAPTURE_LIMIT",
    "Trace",
    "capture_limit",
    "digest_bytes",
    "now",
]

CAPTURE_POLICIES = ("none", "head", "full")
DEFAULT_CAPTURE_BYTES = 64 * 1024
DEFAULT_CAPTURE_LIMIT = 1 << 30
"""The captured bytes a trace keeps at most, by default: a long loop of new arrays keeps
digests only once its captures reach 1 GiB, rather than filling the machine's memory."""


_LIMIT_UNITS = {"": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def capture_limit(text: str) -> int | None:
    """A capture limit as a command line gives it: ``none``, or bytes with an optional
    binary unit (``512MiB``, ``2GiB``); raises ValueError for anything else."""
    word = text.strip().lower()
    if word == "none":
        return None
    digits = word.rstrip("kmgtib")
    unit = _LIMIT_UNITS.get(word[len(digits) :].strip())
    if unit is None or not digits.strip().isdigit():
        raise ValueError(f"{text!r} is not a number of bytes (e.g. 512MiB) or 'none'")
    return int(digits) * unit


def digest_bytes(data: np.ndarray) -> str:
    """A 128-bit content digest (hex) of a uint8 array; XXH3 hashes 4 KiB in ~0.1 µs,
    twenty times faster than SHA-256, which keeps tracing cheap."""
    return xxhash.xxh3_128_hexdigest(data)


class Trace:
    """Every command and sync point recorded while the trace was active.

    ``capture`` says which host bytes are copied into the trace: ``"none"`` (digests
    only), ``"head"`` (the first ``capture_bytes`` of each transfer) or ``"full"``.
    Captured bytes are stored once per digest in :attr:`blobs`, ``capture_limit`` bytes
    at most (``None``: no limit); once they reach it, the trace keeps digests only, and
    ``metadata.capture_limited`` says when that began. Findings need digests only; what
    was not captured has no diff to show.

    While recording, the trace's :attr:`recorder` appends to its logs; reading the trace
    (:attr:`table`, :attr:`records`, ...) takes a consistent snapshot of them, so a trace
    can be read or saved while commands are still running.
    """

    def __init__(
        self,
        capture: str = "head",
        capture_bytes: int = DEFAULT_CAPTURE_BYTES,
        capture_limit: int | None = DEFAULT_CAPTURE_LIMIT,
    ) -> None:
        if capture not in CAPTURE_POLICIES:
            raise ConfigurationError(
                f"capture={capture!r} is not a capture policy; use one of {CAPTURE_POLICIES}"
            )
        if type(capture_bytes) is not int or capture_bytes < 0:
            raise ConfigurationError(f"capture_bytes={capture_bytes!r} must be an int >= 0")
        if capture_limit is not None and (type(capture_limit) is not int or capture_limit < 0):
            raise ConfigurationError(
                f"capture_limit={capture_limit!r} must be an int >= 0, or None for no limit"
            )
        self.metadata = TraceMetadata(
            capture=capture, capture_bytes=capture_bytes, capture_limit=capture_limit
        )
        self.buffers: dict[int, BufferInfo] = {}
        self.streams: dict[int, StreamInfo] = {}
        self.blobs: dict[str, np.ndarray] = {}
        self.captures: dict[bytes, Capture] = {}
        """Each capture made, by the binary XXH3-128 digest of its bytes."""
        self.launches: dict[tuple[str, tuple[DeviceRange, ...]], KernelLaunch | None] = {}
        """The kernel launches of a live trace's dispatches, by their label and device
        ranges (:class:`KernelLaunch`); a loaded trace has none."""
        self._head = {"none": 0, "head": capture_bytes, "full": None}[capture]
        self.recorder = TraceRecorder(self)
        self._loaded: tuple[CommandTable, list[SyncRecord]] | None = None
        self._added: tuple[list[CommandRecord], list[SyncRecord]] = ([], [])
        self._snapshot: (
            tuple[tuple[int, ...], CommandTable, list[SyncRecord], list[Record] | None] | None
        ) = None
        self._host_activity: (
            tuple[list[RangeRecord], list[CompileRecord], list[ReleaseRecord]] | None
        ) = None
        self._capture_lock = threading.Lock()
        self._loaded_prints: dict[int, DevicePrintRecord] | None = None
        self._process_ids = np.zeros(0, np.int64)
        """The runtime's process-wide id of each record of a live trace, sorted: record
        ``n`` had ``_process_ids[n - 1]`` (see :func:`~.table.numbered`)."""

    @property
    def capture_head(self) -> int | None:
        """How many bytes of each transfer the trace keeps (``None``: every byte)."""
        return self._head

    # -- recording (called by the recorder) ------------------------------------------

    def capture(
        self, data: np.ndarray, binary: bytes | None = None, owned: bool = False
    ) -> Capture:
        """Capture ``data`` (a 1-D uint8 view of host bytes) under this trace's policy;
        ``binary``: its XXH3-128 digest, if the caller has it already; ``owned``: ``data``
        is a read-only copy no one else holds, which may be kept as it is. Blobs are
        read-only: :meth:`captured_bytes` hands out the blob itself.

        Every byte is hashed; the head is copied into :attr:`blobs` unless a blob with the
        same bytes is there already. Bytes seen before are looked up by their binary
        digest, so their capture costs no hex digest and no new object.
        """
        nbytes = data.nbytes
        if binary is None:
            binary = xxh3_128_digest(data)
        known = self.captures.get(binary)
        if known is not None:
            return known
        digest = binary.hex()
        head = nbytes if self._head is None else min(self._head, nbytes)
        if not head:
            captured = Capture(nbytes, None, digest)
        else:
            kept = data if head == nbytes else data[:head]
            key = digest if head == nbytes else digest_bytes(kept)
            with self._capture_lock:
                if key not in self.blobs:
                    recorder = self.recorder
                    if head > recorder._capture_left:
                        return self._capture_digest_only(binary, nbytes, digest)
                    recorder._capture_left -= head
                    if not (owned and head == nbytes):
                        kept = kept.copy()
                        kept.flags.writeable = False  # readers get the blob itself
                    self.blobs[key] = kept
            captured = Capture(nbytes, key, digest)
        self.captures[binary] = captured
        return captured

    def _capture_digest_only(self, binary: bytes, nbytes: int, digest: str) -> Capture:
        """The capture of new bytes the capture limit has no room for; from now on the
        trace (and the recorder's C hooks) keeps digests only. Called holding the
        capture lock."""
        if self.metadata.capture_limited is None:
            self.metadata.capture_limited = now()
            self._head = self.recorder._capture_head = 0
        captured = self.captures[binary] = Capture(nbytes, None, digest)
        return captured

    def uncaptured_reason(self) -> str:
        """Why a transfer of this trace has no captured bytes to show, and what to do."""
        limit = self.metadata.capture_limit
        if self.metadata.capture_limited is not None and limit is not None:
            return (
                f"the trace's captured bytes had reached capture_limit={limit} bytes, after "
                "which it kept digests only; trace with a larger capture_limit, or "
                "capture_limit=None, to see them"
            )
        return (
            f"the trace kept no bytes of it (capture={self.metadata.capture!r}, "
            f"capture_bytes={self.metadata.capture_bytes}); trace with capture='head' or "
            "'full' to see them"
        )

    def blob_snapshot(self) -> dict[str, np.ndarray]:
        """The blobs captured so far (a copy of the dict; the arrays are never changed)."""
        with self._capture_lock:
            return dict(self.blobs)

    def combine_captures(self, pieces: list[Capture]) -> Capture:
        """One capture of bytes read in consecutive pieces: complete (with a digest) when
        every piece was captured whole, else the first piece's head."""
        nbytes = sum(piece.nbytes for piece in pieces)
        if all(piece.complete for piece in pieces):
            return self.capture(np.concatenate([self.blobs[piece.blob] for piece in pieces]))
        return Capture(nbytes, pieces[0].blob, None)

    # -- recording scope -------------------------------------------------------------

    def __enter__(self) -> Trace:
        from luisa_nb.recording import recorder

        recorder.start(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        from luisa_nb.recording import recorder

        caller = sys._getframe(1)
        recorder.stop(self, {**caller.f_globals, **caller.f_locals})

    @property
    def empty(self) -> bool:
        """Whether no command was submitted and no sync point issued (read from the logs'
        lengths while recording: no record is made)."""
        if self._loaded is not None or any(self._added):
            return not len(self._read()) and not self.syncs
        progress = self._progress()
        return progress[0] == 0 and progress[4] == 0

    def stopped_recording(self) -> None:
        """Called once recording into this trace has stopped (commands named, pending
        ones listed); a subclass may report on what was recorded."""

    # -- reading ---------------------------------------------------------------------

    def _progress(self) -> tuple[int, ...]:
        """Changes whenever the recorder has heard something since the last call."""
        log = self.recorder
        events = len(log.ticks) + len(log.run_spans) + len(log.run_failures)
        return (len(log.submissions), len(log.runs), events, len(log.accesses), len(log.syncs),
                len(log.sync_completions))  # fmt: skip

    def _read(self) -> CommandTable:
        commands, syncs = self._added
        if self._snapshot is None and (commands or syncs):
            self._loaded = (CommandTable.from_records(commands), list(syncs))
        if self._loaded is not None:
            if self._snapshot is None:
                self._snapshot = ((), *self._loaded, None)
            return self._snapshot[1]
        progress = self._progress()
        if self._snapshot is None or self._snapshot[0] != progress:
            table = CommandTable.from_log(self.recorder, self)
            if self.recorder.excluded:
                table = table.without(self.recorder.excluded)
            syncs = sync_records(self.recorder, progress[4])
            table, syncs, self._process_ids = numbered(table, syncs)
            self._snapshot = (progress, table, syncs, None)
        return self._snapshot[1]

    def set_contents(self, table: CommandTable, syncs: list[SyncRecord]) -> None:
        """Make this trace hold ``table`` and ``syncs`` (a trace read from a file)."""
        self._loaded = (table, syncs)
        self._snapshot = None

    def set_host_activity(
        self,
        ranges: list[RangeRecord],
        compiles: list[CompileRecord],
        releases: list[ReleaseRecord],
    ) -> None:
        """Make this trace hold ``ranges``, ``compiles`` and ``releases`` (a trace read
        from a file)."""
        self._host_activity = (ranges, compiles, releases)

    def add(self, record: Record) -> None:
        """Append a record made by hand (a trace built in a test or by an importer; a
        recording trace gets its records from its recorder only)."""
        if len(self.recorder.submissions) or len(self.recorder.syncs):
            raise TraceError("records cannot be added by hand to a trace that recorded some")
        if self._loaded is not None and not any(self._added):
            table, syncs = self._loaded
            self._added = ([*table.records()], [*syncs])
        self._added[isinstance(record, SyncRecord)].append(record)
        self._snapshot = None

    @property
    def version(self) -> tuple[int, ...]:
        """Equal for two reads of the trace exactly when nothing was recorded between."""
        return () if self._loaded is not None else self._progress()

    @property
    def counts(self) -> tuple[int, int]:
        """How many commands and sync points the trace holds (making no records)."""
        table = self._read()
        return len(table), len(self._snapshot[2])

    @property
    def table(self) -> CommandTable:
        """Every command as columns (a snapshot while recording)."""
        return self._read()

    @property
    def records(self) -> list[Record]:
        """Every command and sync point, in the order the host issued them."""
        table = self._read()
        progress, _, syncs, records = self._snapshot
        if records is None:
            records = [*table.records(), *syncs]
            records.sort(key=lambda record: record.seq)
            self._snapshot = (progress, table, syncs, records)
        return records

    @property
    def commands(self) -> list[CommandRecord]:
        return self.table.records()

    @property
    def syncs(self) -> list[SyncRecord]:
        """Every sync point, in the order the host issued them."""
        self._read()
        return sorted(self._snapshot[2], key=lambda record: record.seq)

    @property
    def ranges(self) -> list[RangeRecord]:
        """Every user range (``lnb.range``), in the order they began."""
        if self._host_activity is not None:
            return list(self._host_activity[0])
        return self.recorder.ranges[:]

    @property
    def compiles(self) -> list[CompileRecord]:
        """Every kernel compile or cached load, in the order they ended."""
        if self._host_activity is not None:
            return list(self._host_activity[1])
        return self.recorder.compiles[:]

    @property
    def device_prints(self) -> dict[int, DevicePrintRecord]:
        """The lines each dispatch's kernel printed, by command id (dispatches that
        printed nothing are absent)."""
        if self._loaded_prints is not None:
            return dict(self._loaded_prints)
        printed = dict(self.recorder.device_prints)
        if not printed:
            return {}
        numbers = self.numbers_of(list(printed))
        return {
            number: replace(record, command=number)
            for number, record in zip(numbers, printed.values(), strict=True)
            if number is not None
        }

    def numbers_of(self, process_ids: list[int]) -> list[int | None]:
        """The numbers in this recorded trace of the records the runtime gave the
        process-wide ids ``process_ids`` (``None`` for one it does not hold)."""
        self._read()
        known = self._process_ids
        places = np.searchsorted(known, process_ids).tolist()
        return [
            place + 1 if place < len(known) and known[place] == process_id else None
            for place, process_id in zip(places, process_ids, strict=True)
        ]

    def number_of(self, item: Any) -> int:
        """The number in this trace of a runtime command or sync point the program holds
        (``item.id`` is its process-wide id; the trace numbers its records from 1)."""
        number = self.numbers_of([item.id])[0]
        if number is None:
            raise RecordNotFoundError(
                f"{item!r} is not in this trace; pass a command submitted while it recorded"
            )
        return number

    def set_device_prints(self, records: list[DevicePrintRecord]) -> None:
        """Make this trace hold ``records`` (a trace read from a file)."""
        self._loaded_prints = {record.command: record for record in records}

    def printed(self, command: CommandRecord | int) -> DevicePrintRecord:
        """What dispatch ``command`` (a record or its id) printed; an empty record for a
        command that printed nothing."""
        command_id = command if isinstance(command, int) else command.id
        found = self.device_prints.get(command_id)
        return found if found is not None else DevicePrintRecord(command_id, [])

    @property
    def releases(self) -> list[ReleaseRecord]:
        """Every host array that downloads wrote into and the program let go of, in the
        order they were freed."""
        if self._host_activity is not None:
            return list(self._host_activity[2])
        return self.recorder.releases[:]

    def range_of(self, record: Record) -> RangeRecord | None:
        """The innermost range open when ``record`` was enqueued (a sync point: issued)."""
        ranges = self.ranges
        moment = record.enqueued if isinstance(record, CommandRecord) else record.issued
        stop = self.metadata.stopped if self.metadata.stopped is not None else moment
        found = int(innermost_ranges(ranges, [moment], stop)[0])
        return ranges[found] if found >= 0 else None

    def command(self, command_id: int) -> CommandRecord:
        table = self.table
        row = table.row_of(command_id)
        if row is not None:
            return table.record(row)
        raise RecordNotFoundError(f"no command #{command_id} in this trace")

    def host_ranges(self) -> list[HostRange]:
        """The distinct host ranges the commands touched."""
        if self._loaded is None and not any(self._added):
            hosts = [fields[HOST_FIELD] for fields in self.recorder.described]
        else:
            hosts = self.table.objects["host"]
        return list({id(host): host for host in hosts if host is not None}.values())

    def captured_bytes(self, captured: Capture | None) -> np.ndarray | None:
        """The captured head of ``captured`` as uint8, or ``None`` if nothing was kept."""
        if captured is None or captured.blob is None:
            return None
        return self.blobs[captured.blob]

    def captured_values(self, captured: Capture | None, host: HostRange) -> np.ndarray | None:
        """The captured bytes as typed values (1-D, whole elements only)."""
        data = self.captured_bytes(captured)
        if data is None:
            return None
        dtype = np.dtype(host.dtype)
        whole = data.nbytes - data.nbytes % dtype.itemsize
        return data[:whole].view(dtype)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return (
            f"<Trace {len(self.commands)} commands, {len(self.syncs)} sync points, "
            f"capture={self.metadata.capture!r}>"
        )

    # -- files -----------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the trace to a zip file (versioned JSON plus ``.npy`` blobs); a path that
        cannot be written raises :class:`~luisa_nb.errors.TraceFileError`."""
        from luisa_nb.recording.storage import save_trace

        return save_trace(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trace:
        """Read a trace written by :meth:`save` (no pickle is ever loaded). Raises
        :class:`~luisa_nb.errors.TraceFileError` for a path that cannot be read and
        :class:`~luisa_nb.errors.TraceFormatError` for a file that is not a trace."""
        from luisa_nb.recording.storage import load_trace

        return load_trace(path, cls)

    def to_arrow(self) -> pyarrow.Table:
        """A row per command and per sync point as an Arrow table (docs/data.md lists the
        columns); needs ``luisa_nb[data]``."""
        from luisa_nb.recording.frames import trace_arrow

        return trace_arrow(self)

    def to_pandas(self) -> pandas.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame; needs ``luisa_nb[data]``."""
        from luisa_nb.recording.frames import trace_pandas

        return trace_pandas(self)

    def to_chrome_trace(self, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Chrome Trace Event JSON (opens in Perfetto); written to ``path`` if given."""
        from luisa_nb.recording.chrome import chrome_trace

        return chrome_trace(self, path)
