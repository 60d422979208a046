"""Hazards (docs/architecture.md §4): stale uploads, host writes in flight, host memory
released under a download, and device races.

One pass over the records in issue (``seq``) order keeps vector clocks (see
:mod:`luisa_nb.analysis.clocks`), an interval map of host addresses to the last download
that wrote them and that no host sync has covered yet ("pending"), and per buffer and
stream the device accesses seen so far. Releases of host arrays (:class:`ReleaseRecord`)
are visited in ``seq`` order with the sync points: one that frees the memory of a
download still pending is a use after free. It visits only the commands that can take part
in a hazard, as table rows, and makes records only for those in a finding. Failed,
skipped or unfinished commands have missing times: a download without ``host_write``
never wrote host memory and an upload without ``host_read`` never read it, so neither
takes part in host hazards.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Any

import numpy as np

from luisa_nb.analysis.clocks import Clock, VectorClocks
from luisa_nb.analysis.findings import Hazard, HazardKind
from luisa_nb.analysis.formatting import device_slice, duration, host_slice
from luisa_nb.analysis.intervals import IntervalMap
from luisa_nb.analysis.uninitialized import find_uninitialized_reads
from luisa_nb.analysis.vocabulary import vocabulary_of
from luisa_nb.recording import (
    CommandKind,
    CommandRecord,
    DeviceRange,
    HostRange,
    ReleaseRecord,
    Status,
    SyncKind,
    SyncRecord,
    Trace,
)
from luisa_nb.recording.naming import describe, host_name, stream_name
from luisa_nb.recording.table import KIND_CODES, MISSING, STATUS_CODES, CommandTable

_UPLOAD, _DOWNLOAD = KIND_CODES[CommandKind.UPLOAD], KIND_CODES[CommandKind.DOWNLOAD]
_SKIPPED = STATUS_CODES[Status.SKIPPED]


def find_hazards(trace: Trace) -> list[Hazard]:
    """Every hazard in ``trace`` (the uninitialized reads of
    :mod:`luisa_nb.analysis.uninitialized` among them), ordered by the later command's
    issue order."""
    found = _Finder(trace).run()
    uninitialized = find_uninitialized_reads(trace)
    if not uninitialized:
        return found
    table = trace.table
    seq_of = dict(zip(table.numbers["id"].tolist(), table.numbers["seq"].tolist(), strict=True))
    return sorted([*found, *uninitialized], key=lambda hazard: seq_of[hazard.command_ids[-1]])


def _times(**moments: int | None) -> dict[str, int]:
    return {name: time for name, time in moments.items() if time is not None}


class _Finder:
    """Works on table rows; a :class:`CommandRecord` is made only for a command that
    takes part in a finding (:meth:`record`)."""

    def __init__(self, trace: Trace, narrow: bool = True) -> None:
        self.trace = trace
        self.narrow = narrow
        table = self.table = trace.table
        self.syncs = trace.syncs
        streams = {*table.numbers["stream"].tolist(), *(sync.stream for sync in self.syncs)}
        self.clocks = VectorClocks(stream for stream in streams if stream is not None)
        self.pending: IntervalMap[int] = IntervalMap()
        self.pending_by_stream: list[deque[tuple[int, int]]] = [deque() for _ in self.clocks.index]
        self.accesses: dict[int, dict[int, list[tuple[int, int, DeviceRange]]]] = {}
        self.shared_buffers = _buffers_of_several_streams(table)
        self.hazards: list[Hazard] = []
        self.hosts = table.objects["host"]
        self.releases = sorted(trace.releases, key=lambda release: release.seq)
        self._records: dict[int, CommandRecord] = {}
        self.words = vocabulary_of(trace)

    def record(self, row: int) -> CommandRecord:
        found = self._records.get(row)
        if found is None:
            found = self._records[row] = self.table.record(row)
        return found

    def run(self) -> list[Hazard]:
        rows = self._relevant_rows()
        numbers = self.table.numbers
        columns = [
            numbers[name][rows].tolist()
            for name in ("stream", "seq", "kind", "status", "host_read", "host_write")
        ]
        commands = list(zip(rows.tolist(), *columns, strict=True))
        seqs = columns[1]
        position = 0
        for marker in _markers(self.syncs, self.releases):
            before = bisect_left(seqs, marker.seq, position)
            for command in commands[position:before]:
                self._command(*command)
            position = before
            if type(marker) is ReleaseRecord:
                self._check_release(marker)
            elif self.clocks.sync(marker):
                self._release_covered()
        for command in commands[position:]:
            self._command(*command)
        return self.hazards

    def _relevant_rows(self) -> np.ndarray:
        """Rows of commands that can take part in a hazard, in issue order: host
        transfers that touched host memory, and commands on buffers of several streams."""
        table = self.trace.table
        numbers = table.numbers
        kind = numbers["kind"]
        host_read = (kind == KIND_CODES[CommandKind.UPLOAD]) & (numbers["host_read"] != MISSING)
        host_write = (kind == KIND_CODES[CommandKind.DOWNLOAD]) & (numbers["host_write"] != MISSING)
        relevant = host_read | host_write
        if self.shared_buffers:
            ranges = table.objects["device_ranges"]
            relevant |= np.fromiter(
                (any(r.buffer in self.shared_buffers for r in touched) for touched in ranges),
                bool,
                len(ranges),
            )
        rows = np.flatnonzero(relevant)
        rows = rows[np.argsort(numbers["seq"][rows], kind="stable")]
        if self.narrow and len(self.clocks.index) == 1 and _host_syncs_only(self.syncs):
            return self._rows_that_meet(rows)
        return rows

    def _rows_that_meet(self, rows: np.ndarray) -> np.ndarray:
        """Of a one-stream trace's ``rows``, the downloads that an upload reads or a release
        frees while they are pending, those uploads, and the uploads whose bytes changed
        after enqueue.

        On one stream whose only sync points are host synchronizes, a download is
        pending from its ``seq`` until the first synchronize that covers it. A download
        with no upload and no release in that window, and an upload in no download's
        window whose bytes did not change, change nothing the pass finds: leaving them out
        only saves time.
        """
        numbers = self.table.numbers
        seqs = numbers["seq"][rows]
        kinds = numbers["kind"][rows]
        has_host = np.fromiter((self.hosts[row] is not None for row in rows.tolist()), bool)
        downloads = (kinds == _DOWNLOAD) & (numbers["host_write"][rows] != MISSING) & has_host
        uploads = (
            (kinds == _UPLOAD)
            & (numbers["host_read"][rows] != MISSING)
            & (numbers["status"][rows] != _SKIPPED)
            & has_host
        )
        sync_seqs, covered = _covered_seqs(self.syncs)
        upload_seqs = seqs[uploads]
        download_seqs = seqs[downloads]
        covering = np.searchsorted(covered, download_seqs, side="left")
        window_ends = np.append(sync_seqs, np.iinfo(np.int64).max)[covering]
        first = np.searchsorted(upload_seqs, download_seqs, side="right")
        last = np.searchsorted(upload_seqs, window_ends, side="left")
        seen = last > first
        windows = np.zeros(len(upload_seqs) + 1, np.int64)
        np.add.at(windows, first[seen], 1)
        np.add.at(windows, last[seen], -1)
        in_window = np.cumsum(windows[:-1]) > 0
        objects = self.table.objects
        changed = np.fromiter(
            (
                not in_window[index] and _digests_differ(objects, row)
                for index, row in enumerate(rows[uploads].tolist())
            ),
            bool,
            len(upload_seqs),
        )
        freed = self._freed_in_window(rows[downloads], download_seqs, window_ends)
        keep = np.zeros(len(rows), bool)
        keep[np.flatnonzero(downloads)[seen | freed]] = True
        keep[np.flatnonzero(uploads)[in_window | changed]] = True
        return rows[keep]

    def _freed_in_window(
        self, downloads: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> np.ndarray:
        """Whether a release of memory that each download wrote comes after it (``starts``)
        and no later than the synchronize that covers it (at ``ends``: a release with a
        synchronize's seq comes before it)."""
        freed = np.zeros(len(downloads), bool)
        if not self.releases:
            return freed
        seqs = np.array([release.seq for release in self.releases], np.int64)
        first = np.searchsorted(seqs, starts, side="right")
        last = np.searchsorted(seqs, ends, side="right")
        for index in np.flatnonzero(last > first).tolist():
            host = self.hosts[int(downloads[index])]
            releases = self.releases[first[index] : last[index]]
            freed[index] = any(host.overlaps(release.host) for release in releases)
        return freed

    def _command(
        self, row: int, stream: int, seq: int, kind: int, status: int, read: int, written: int
    ) -> None:
        clock = self.clocks.command(stream, seq)
        host = self.hosts[row]
        if host is not None:
            if kind == _UPLOAD and read != MISSING and status != _SKIPPED:
                self._check_upload(row, host)  # a skipped upload sent nothing
            elif kind == _DOWNLOAD and written != MISSING:
                self._add_download(row, stream, host, clock)
        if self.shared_buffers and status != _SKIPPED:
            self._check_device(row, stream, clock)

    # -- host memory ---------------------------------------------------------------------

    def _add_download(self, download: int, stream: int, host: HostRange, clock: Clock) -> None:
        self.pending.assign(host.address, host.end, download)
        position = self.clocks.index[stream]
        self.pending_by_stream[position].append((clock[position], download))

    def _release_covered(self) -> None:
        """Drop pending downloads that the host clock now says have finished."""
        for position, queue in enumerate(self.pending_by_stream):
            while queue and queue[0][0] <= self.clocks.host[position]:
                download = queue.popleft()[1]
                host = self.hosts[download]
                self.pending.remove(host.address, host.end, download)

    def _check_release(self, release: ReleaseRecord) -> None:
        """Report each download into the freed memory that no host synchronize has covered
        yet (on a runtime that keeps no reference to a download's array, it writes memory
        that may be freed), and forget it: the memory is no longer the program's."""
        memory = release.host
        freed = {download for *_, download in self.pending.query(memory.address, memory.end)}
        seqs = self.table.numbers["seq"]
        for download in sorted(freed, key=lambda row: seqs[row]):
            host = self.hosts[download]
            self.pending.remove(host.address, host.end, download)
            self.hazards.append(self._use_after_free(self.record(download), release))

    def _use_after_free(self, download: CommandRecord, release: ReleaseRecord) -> Hazard:
        host = download.host
        array = host_slice(host, host)
        if release.site is not None:
            dropped = f"dropped its last reference to {array} at {release.site}"
        elif release.made_at is not None:
            dropped = (
                f"let go of {array} (downloaded into at {release.made_at}) while the runtime "
                "still held it"
            )
        else:
            dropped = f"let go of {array} while the runtime still held it"
        if _real_luisa(self.trace, download):
            outcome = (
                "luisa-python keeps no reference to a download's array, so on LuisaCompute "
                f"#{download.id} writes freed memory (the trace kept the array alive)"
            )
        else:
            outcome = (
                "luisa_nb kept the array alive, so this run was correct, but LuisaCompute "
                f"keeps no reference to a download's array: there #{download.id} writes "
                "freed memory"
            )
        message = (
            f"{describe(self.trace, download)}: the program {dropped} before a host "
            f"synchronize covered #{download.id}; {outcome}"
        )
        fix = (
            f"keep {host_name(host)} referenced until synchronize() has returned after "
            f"#{download.id}, or download with copy_to(..., sync=True)"
        )
        times = _times(host_write=download.host_write, released=release.time)
        return Hazard(
            HazardKind.HOST_USE_AFTER_FREE, (download.id,), host, None, times, message, fix
        )

    def _check_upload(self, row: int, host: HostRange) -> None:
        spans: dict[int, tuple[int, int, int]] = {}
        pending = self.pending.query(host.address, host.end) if len(self.pending) else ()
        for start, end, download in pending:
            first = spans.get(download, (start, end))[0]
            spans[download] = (first, end, download)
        if spans:
            upload = self.record(row)
            found = sorted(
                ((self.record(download), start, end) for start, end, download in spans.values()),
                key=lambda item: item[0].seq,
            )
            for download, start, end in found:
                written = download.host_write
                for low, high, read in _reads_within(upload, host, start, end, written):
                    overlap = HostRange(low, high - low, host.dtype, host.shape, host.name)
                    self.hazards.append(self._stale(download, upload, overlap, read))
        elif self._bytes_changed_unexplained(row, host):
            self.hazards.append(self._in_flight(self.record(row), host))

    def _stale(
        self, download: CommandRecord, upload: CommandRecord, overlap: HostRange, read: int
    ) -> Hazard:
        names = (describe(self.trace, download), describe(self.trace, upload))
        region = host_slice(upload.host, overlap)
        times = _times(
            download_submitted=download.submitted,
            host_write=download.host_write,
            upload_submitted=upload.submitted,
            host_read=read,
        )
        if read < download.host_write:
            gap = duration(download.host_write - read)
            message = (
                f"{names[1]} read {region} {gap} before {names[0]} wrote it, so it sent the "
                "old bytes"
            )
            words = self.words
            fix = f"synchronize after #{download.id} ({words.sync_advice}) before uploading"
            if words.staging_fix:
                fix += f", or {words.staging_fix}"
            if _reordered(download, upload):
                message += (
                    f"; the backend ran #{upload.id} before #{download.id} although it was "
                    "submitted after it: command reordering follows device buffers only, and "
                    "the two share none"
                )
                fix = (
                    f"submit #{upload.id} in a later submission after synchronizing "
                    f"({words.sync_advice}), or turn command reordering off"
                )
            kind = HazardKind.STALE_UPLOAD
        else:
            if upload.staging == "submit":
                reason = f"only because #{download.id} happened to finish before the submission"
            else:
                reason = "because staging='execute'; under staging='submit' it would be stale"
            message = (
                f"{names[1]} reads {region}, which {names[0]} writes, with no host synchronize "
                f"between them: it got the new bytes {reason}"
            )
            fix = (
                f"synchronize after #{download.id} ({self.words.sync_advice}) before "
                f"submitting #{upload.id}, so it is correct under every staging policy"
            )
            kind = HazardKind.LATENT_STALE_UPLOAD
        return Hazard(kind, (download.id, upload.id), overlap, None, times, message, fix)

    def _bytes_changed_unexplained(self, row: int, host: HostRange) -> bool:
        """Whether the bytes the upload sent differ from those at enqueue, with no
        download issued before it having written them since the enqueue."""
        if not _digests_differ(self.table.objects, row):
            return False
        numbers = self.table.numbers
        downloads = np.flatnonzero(
            (numbers["kind"] == _DOWNLOAD)
            & (numbers["seq"] < numbers["seq"][row])
            & (numbers["host_write"] > numbers["enqueued"][row])
        )
        hosts = self.hosts
        return not any(hosts[download].overlaps(host) for download in downloads.tolist())

    def _in_flight(self, upload: CommandRecord, host: HostRange) -> Hazard:
        changed = _changed_region(self.trace, upload, host)
        region = host_slice(host, changed)
        gap = duration(upload.host_read - upload.enqueued)
        message = (
            f"{describe(self.trace, upload)}: {region} changed between enqueue and host read "
            f"({gap} later), so it sent bytes other than those at enqueue"
        )
        fix = (
            f"do not write {host_slice(host, host)} until #{upload.id} has read it "
            f"({self.words.synchronize} first), or upload a copy"
        )
        times = _times(enqueued=upload.enqueued, host_read=upload.host_read)
        return Hazard(
            HazardKind.HOST_WRITE_IN_FLIGHT, (upload.id,), changed, None, times, message, fix
        )

    # -- device memory ---------------------------------------------------------------------

    def _check_device(self, row: int, stream: int, clock: Clock) -> None:
        position = self.clocks.index[stream]
        reported: set[int] = set()
        for touched in self.table.objects["device_ranges"][row]:
            if touched.buffer not in self.shared_buffers:
                continue
            by_stream = self.accesses.setdefault(touched.buffer, {})
            for other_position, entries in by_stream.items():
                if other_position == position:
                    continue
                horizon = clock[other_position]
                for component, other, other_range in reversed(entries):
                    if component <= horizon:
                        break
                    if (
                        other not in reported
                        and (other_range.access.writes or touched.access.writes)
                        and other_range.overlaps(touched)
                    ):
                        reported.add(other)
                        first, second = self.record(other), self.record(row)
                        self.hazards.append(self._race(first, other_range, second, touched))
            by_stream.setdefault(position, []).append((clock[position], row, touched))

    def _race(
        self,
        first: CommandRecord,
        first_range: DeviceRange,
        second: CommandRecord,
        second_range: DeviceRange,
    ) -> Hazard:
        start = max(first_range.offset, second_range.offset)
        end = min(
            first_range.offset + first_range.nbytes, second_range.offset + second_range.nbytes
        )
        overlap = DeviceRange(second_range.buffer, start, end - start, second_range.access)
        writers = [c for c, r in ((first, first_range), (second, second_range)) if r.access.writes]
        verb = "both write" if len(writers) == 2 else f"#{writers[0].id} writes"
        streams = (stream_name(self.trace, first.stream), stream_name(self.trace, second.stream))
        message = (
            f"{describe(self.trace, first)} on {streams[0]} and {describe(self.trace, second)} on "
            f"{streams[1]} touch {device_slice(self.trace, overlap)} ({verb}) with no event "
            "ordering them; a replay of this trace shows the order they ran in, one of those "
            "possible"
        )
        fix = (
            f"signal an event on {streams[0]} after #{first.id} and wait for it on {streams[1]} "
            f"before #{second.id} (or synchronize {streams[0]} before submitting #{second.id})"
        )
        times = _times(
            first_started=first.started,
            first_finished=first.finished,
            second_started=second.started,
            second_finished=second.finished,
        )
        return Hazard(
            HazardKind.DEVICE_RACE, (first.id, second.id), None, overlap, times, message, fix
        )


def _markers(
    syncs: list[SyncRecord], releases: list[ReleaseRecord]
) -> list[SyncRecord | ReleaseRecord]:
    """Sync points and releases in ``seq`` order, a release before the host wait whose
    ``seq`` it took (it happened while that wait was in progress)."""
    if not releases:
        return syncs
    markers = [(sync.seq, 1, sync) for sync in syncs] + [
        (release.seq, 0, release) for release in releases
    ]
    markers.sort(key=lambda marker: marker[:2])
    return [marker for _, _, marker in markers]


def _real_luisa(trace: Trace, command: CommandRecord) -> bool:
    """Whether ``command`` ran on real LuisaCompute (luisa-python, instrumented)."""
    stream = trace.streams.get(command.stream)
    return stream is not None and stream.backend == "luisa"


def _host_syncs_only(syncs: list[SyncRecord]) -> bool:
    """Whether every sync point that moves clocks is a host synchronize."""
    return all(
        sync.kind in (SyncKind.SYNCHRONIZE, SyncKind.CALLBACK) or sync.status is Status.SKIPPED
        for sync in syncs
    )


def _covered_seqs(syncs: list[SyncRecord]) -> tuple[np.ndarray, np.ndarray]:
    """For one-stream traces: each sync point's ``seq``, and the highest command ``seq``
    that it or an earlier host synchronize covers (``-1`` for none)."""
    sync_seqs = np.array([sync.seq for sync in syncs], np.int64)
    covers = np.array([_covers(sync) for sync in syncs], np.int64)
    return sync_seqs, np.maximum.accumulate(covers) if len(covers) else covers


def _covers(sync: SyncRecord) -> int:
    if sync.kind is not SyncKind.SYNCHRONIZE or sync.status is Status.SKIPPED:
        return -1
    if sync.covers is None:
        return sync.seq - 1
    return min(sync.covers, sync.seq - 1)


def _digests_differ(objects: dict[str, list[Any]], row: int) -> bool:
    before, after = objects["enqueue_capture"][row], objects["data_capture"][row]
    return (
        before is not None
        and after is not None
        and before.digest is not None
        and after.digest is not None
        and before.digest != after.digest
    )


def _buffers_of_several_streams(table: CommandTable) -> set[int]:
    """Buffers that commands of more than one stream touch (only they can race)."""
    streams = table.numbers["stream"]
    if len(np.unique(streams)) < 2:
        return set()
    seen: dict[int, int] = {}
    shared: set[int] = set()
    for stream, touched in zip(streams.tolist(), table.objects["device_ranges"], strict=True):
        for device_range in touched:
            first = seen.setdefault(device_range.buffer, stream)
            if first != stream:
                shared.add(device_range.buffer)
    return shared


def _reads_within(
    upload: CommandRecord, host: HostRange, start: int, end: int, written: int
) -> list[tuple[int, int, int]]:
    """The host bytes ``[start, end)`` of ``upload`` as regions read wholly before or
    wholly after ``written``: ``(start, end, read time)``, the time being the region's
    first read. One region unless the upload read host memory in several pieces."""
    pieces = upload.host_pieces or ((0, host.nbytes, upload.host_read),)
    regions: list[tuple[int, int, int]] = []
    for offset, nbytes, read in pieces:
        low, high = max(start, host.address + offset), min(end, host.address + offset + nbytes)
        if low >= high:
            continue
        if regions and regions[-1][1] == low and (regions[-1][2] < written) == (read < written):
            regions[-1] = (regions[-1][0], high, regions[-1][2])
        else:
            regions.append((low, high, read))
    return regions


def _reordered(first: CommandRecord, second: CommandRecord) -> bool:
    """Whether ``second``, submitted after ``first`` in the same submission, ran first."""
    return (
        first.submission == second.submission
        and first.stream == second.stream
        and first.index < second.index
        and first.started is not None
        and second.started is not None
        and second.started < first.started
    )


def _changed_region(trace: Trace, upload: CommandRecord, host: HostRange) -> HostRange:
    """The host bytes whose captured values changed between enqueue and host read (whole
    elements); all of ``host`` if the captured heads are equal or missing."""
    before = trace.captured_bytes(upload.enqueue_capture)
    after = trace.captured_bytes(upload.data_capture)
    if before is not None and after is not None:
        common = min(before.nbytes, after.nbytes)
        changed = (before[:common] != after[:common]).nonzero()[0]
        if changed.size:
            itemsize = np.dtype(host.dtype).itemsize
            start = int(changed[0]) // itemsize * itemsize
            end = min(-(-(int(changed[-1]) + 1) // itemsize) * itemsize, host.nbytes)
            return HostRange(host.address + start, end - start, host.dtype, host.shape, host.name)
    return host
