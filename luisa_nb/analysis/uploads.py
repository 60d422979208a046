"""Expected vs staged bytes of every upload (docs/architecture.md §4).

Stream order says an upload U should send, for each byte, the host bytes at its
enqueue, except where a download issued before U wrote that byte after U was enqueued
(``host_write > U.enqueued``): there, that download's bytes. Where several downloads
wrote a byte, the one issued last (by ``seq``) is taken. Values are compared over the
captured head only; with no captured bytes, digests decide ``stale`` where the expected
digest is known (no download involved, or one download with exactly U's host range).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from luisa_nb.analysis.differences import differing_bits
from luisa_nb.analysis.hazards import Hazard, HazardKind
from luisa_nb.analysis.intervals import IntervalMap
from luisa_nb.recording import CommandKind, CommandRecord, HostRange, Trace
from luisa_nb.recording.table import KIND_CODES, MISSING

_UPLOAD, _DOWNLOAD = KIND_CODES[CommandKind.UPLOAD], KIND_CODES[CommandKind.DOWNLOAD]


class Source(NamedTuple):
    """Elements ``[start, stop)`` of the upload are expected to come from command
    ``command_id`` (a download), or from the host bytes at enqueue when it is ``None``."""

    start: int
    stop: int
    command_id: int | None


@dataclass
class UploadCheck:
    """The bytes an upload should have sent beside those it sent.

    ``expected`` and ``staged`` are typed 1-D arrays of the captured head (``None`` where
    the bytes were not captured; ``expected`` stops at the first byte whose source was not
    captured). ``differing_indices`` are element indices where both are known and differ.
    """

    command_id: int
    expected: np.ndarray | None
    staged: np.ndarray | None
    sources: list[Source]
    differing_indices: np.ndarray
    stale: bool


def stale_uploads(hazards: Iterable[Hazard], checks: Iterable[UploadCheck]) -> frozenset[int]:
    """Ids of the uploads that sent old bytes: those whose staged bytes differ from
    stream order's, and those a ``STALE_UPLOAD`` hazard says read host memory before a
    download wrote it, even where the old bytes happen to equal the new ones."""
    early = {h.command_ids[-1] for h in hazards if h.kind is HazardKind.STALE_UPLOAD}
    return frozenset(early | {check.command_id for check in checks if check.stale})


def check_uploads(trace: Trace) -> list[UploadCheck]:
    """One :class:`UploadCheck` per upload with a host range, in issue order.

    Works on the trace's table rows; a record is made only for an upload whose bytes are
    compared and for the downloads it involves. Uploads that no download wrote into after
    their enqueue, and that saw the same bytes at enqueue and at their host read as an
    earlier such upload of the same layout, share its arrays (a loop uploading one array
    compares it once)."""
    table = trace.table
    numbers, objects = table.numbers, table.objects
    rows = np.argsort(numbers["seq"], kind="stable")
    kinds = numbers["kind"][rows].tolist()
    writes = numbers["host_write"][rows].tolist()
    enqueued = numbers["enqueued"][rows].tolist()
    ids = numbers["id"][rows].tolist()
    hosts, before, after = objects["host"], objects["enqueue_capture"], objects["data_capture"]
    writers: IntervalMap[int] = IntervalMap()
    checks = []
    alone: dict[tuple[object, ...], UploadCheck] = {}
    for position, row in enumerate(rows.tolist()):
        host = hosts[row]
        if host is None:
            continue
        kind = kinds[position]
        if kind == _DOWNLOAD and writes[position] != MISSING:
            writers.assign(host.address, host.end, row)
        elif kind == _UPLOAD:
            later = (
                [
                    (start, end, table.record(download))
                    for start, end, download in writers.query(host.address, host.end)
                    if numbers["host_write"][download] > enqueued[position]
                ]
                if len(writers)
                else []
            )
            if later:
                checks.append(_check(trace, table.record(row), host, later))
                continue
            # captures of the same bytes are one object (Trace.capture), compared by id
            key = (id(before[row]), id(after[row]), host.dtype, host.nbytes)
            known = alone.get(key)
            if known is None:
                known = alone[key] = _check(trace, table.record(row), host, later)
                checks.append(known)
            else:
                checks.append(
                    UploadCheck(
                        ids[position],
                        known.expected,
                        known.staged,
                        known.sources,
                        known.differing_indices,
                        known.stale,
                    )
                )
    return checks


def _check(
    trace: Trace,
    upload: CommandRecord,
    host: HostRange,
    downloads: list[tuple[int, int, CommandRecord]],
) -> UploadCheck:
    dtype = np.dtype(host.dtype)
    enqueued = trace.captured_bytes(upload.enqueue_capture)
    staged_bytes = trace.captured_bytes(upload.data_capture)
    head = max((b.nbytes for b in (enqueued, staged_bytes) if b is not None), default=0)
    expected = np.zeros(head, np.uint8)
    known = np.zeros(head, bool)
    if enqueued is not None:
        expected[: enqueued.nbytes] = enqueued
        known[: enqueued.nbytes] = True
    for start, end, download in downloads:
        low, high = start - host.address, min(end - host.address, head)
        if low >= head:
            continue
        known[low:high] = False
        written = trace.captured_bytes(download.data_capture)
        if written is None:
            continue
        offset = start - download.host.address
        count = max(min(high - low, written.nbytes - offset), 0)
        expected[low : low + count] = written[offset : offset + count]
        known[low : low + count] = True
    usable = int(np.argmin(known)) if not known.all() else head
    usable -= usable % dtype.itemsize
    expected_values = expected[:usable].view(dtype) if usable else None
    staged = trace.captured_values(upload.data_capture, host)
    differing = (
        np.zeros(0, np.intp)
        if staged_bytes is None
        else differing_bits(expected[:usable], staged_bytes, dtype.itemsize)
    )
    stale = differing.size > 0 or _digest_mismatch(upload, host, downloads)
    return UploadCheck(
        upload.id,
        expected_values,
        staged,
        _sources(host, downloads, dtype.itemsize),
        differing,
        stale,
    )


def _digest_mismatch(
    upload: CommandRecord, host: HostRange, downloads: list[tuple[int, int, CommandRecord]]
) -> bool:
    if upload.data_capture is None or upload.data_capture.digest is None:
        return False
    if not downloads:
        source = upload.enqueue_capture
    elif len(downloads) == 1 and (downloads[0][0], downloads[0][1]) == (host.address, host.end):
        download = downloads[0][2]
        if (download.host.address, download.host.nbytes) != (host.address, host.nbytes):
            return False
        source = download.data_capture
    else:
        return False
    if source is None or source.digest is None:
        return False
    return source.digest != upload.data_capture.digest


def _sources(
    host: HostRange, downloads: list[tuple[int, int, CommandRecord]], itemsize: int
) -> list[Source]:
    """Element regions of the whole upload and where each should come from."""
    pieces: list[Source] = []
    cursor = 0
    for start, end, download in downloads:
        low, high = start - host.address, end - host.address
        if low > cursor:
            pieces.append(Source(cursor, low, None))
        pieces.append(Source(low, high, download.id))
        cursor = high
    if cursor < host.nbytes:
        pieces.append(Source(cursor, host.nbytes, None))
    merged: list[Source] = []
    for piece in pieces:
        element = Source(piece.start // itemsize, -(-piece.stop // itemsize), piece.command_id)
        if merged and merged[-1].command_id == element.command_id:
            merged[-1] = Source(merged[-1].start, element.stop, element.command_id)
        else:
            merged.append(element)
    return merged
