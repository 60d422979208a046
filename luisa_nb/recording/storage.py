"""Trace files: a zip holding ``trace.json`` (versioned JSON) and ``.npy`` arrays.

Version 2 (written now) keeps commands and sync points in columns
(:mod:`luisa_nb.recording.columnar`), so a million commands save and load in seconds;
user ranges, kernel compiles and host releases are JSON lists (files written before those
existed lack them and load with none).
Version 1 files (every record a JSON object, captured bytes as ``blobs/<key>.npy``)
still load. Host ranges are saved at synthetic addresses that keep every overlap and
offset among them and nothing of the process's memory layout
(:mod:`~luisa_nb.recording.synthetic_addresses`); files written before hold real ones,
and load the same way.

Reading goes through :mod:`luisa_nb.recording.archive`, which bounds what a file may make
this process read, inflate and allocate. Loading never unpickles, and any file that is
not a trace, or one from a newer writer, fails with a :class:`TraceFormatError` that says
what is wrong. Saving writes a consistent snapshot of a trace, even one still recording,
and replaces the file atomically.
"""

from __future__ import annotations

import json
import os
import typing
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import numpy as np

from luisa_nb.errors import ConfigurationError, TraceFormatError
from luisa_nb.recording.archive import (
    DEFAULT_LIMITS,
    ArchiveLimits,
    ArchiveReader,
    open_archive,
    write_archive,
)
from luisa_nb.recording.columnar import ColumnReader, command_entries, read_contents
from luisa_nb.recording.error_text import DAMAGED, error_summary, short_repr
from luisa_nb.recording.file_paths import MISSING_FOLDER, checked_path, file_errors
from luisa_nb.recording.json_checks import check_json
from luisa_nb.recording.json_records import build, build_list, check_dtype
from luisa_nb.recording.records import (
    BufferInfo,
    CommandRecord,
    CompileRecord,
    DevicePrintRecord,
    HostRange,
    RangeRecord,
    ReleaseRecord,
    StreamInfo,
    SyncRecord,
    TraceMetadata,
    record_to_dict,
)
from luisa_nb.recording.table import POLICIES, CommandTable

if typing.TYPE_CHECKING:
    from luisa_nb.recording.trace import Trace

FORMAT = "luisa_nb.trace"
VERSION = 2
DOCUMENT_NAME = "trace.json"
MISSING_TRACE = "check the path, or save a trace there first with trace.save(path)"
V1_BLOB_FOLDER = "blobs/"
# Version 1 holds about 110k records in this size; parsed, a document takes 3-25 times
# its size. Version 2 keeps only shared values here (labels, errors, host ranges).
MAX_DOCUMENT_BYTES = 64 << 20
V1_RECORD_TYPES: dict[str, type] = {"command": CommandRecord, "sync": SyncRecord}
_BLOB_DTYPES = (np.dtype(np.uint8),)
# Device descriptions in the metadata are flat: {"name": "cpu", "threads": 4}.
_DeviceValue = str | int | float | bool | None


class _Header(TypedDict, total=False):
    """What every version's ``trace.json`` starts with."""

    format: str
    version: int


class _Document(TypedDict):
    format: str
    version: int
    metadata: dict[str, Any]
    buffers: list[Any]
    streams: list[Any]


class _Counts(TypedDict):
    commands: int
    syncs: int


class _DocumentV1(_Document):
    records: list[dict[str, Any]]


class _HostActivity(TypedDict, total=False):
    """Fields a version 2 file may lack (written before they existed)."""

    ranges: list[dict[str, Any]]
    compiles: list[dict[str, Any]]
    releases: list[dict[str, Any]]
    device_prints: list[dict[str, Any]]


class _DocumentV2(_Document, _HostActivity):
    counts: _Counts
    labels: list[str]
    errors: list[str]
    hosts: list[dict[str, Any]]
    host_pieces: list[tuple[int, list[tuple[int, int, int]]]]


TraceType = TypeVar("TraceType", bound="Trace")


def save_trace(
    trace: Trace, path: str | os.PathLike[str], limits: ArchiveLimits = DEFAULT_LIMITS
) -> Path:
    """Write ``trace`` to ``path`` atomically; returns the path.

    The commands and sync points are those recorded when the save began; the blobs are
    taken after them, so every capture the saved commands refer to is in the file. A path
    that cannot be written raises :class:`~luisa_nb.errors.TraceFileError`.
    """
    path = checked_path(path, "save the trace to")
    table, syncs = trace.table, trace.syncs
    blobs = trace.blob_snapshot()
    fields, entries = command_entries(table, syncs, blobs, trace.releases)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "metadata": record_to_dict(trace.metadata),
        "buffers": [record_to_dict(info) for info in trace.buffers.values()],
        "streams": [record_to_dict(info) for info in trace.streams.values()],
        **fields,
        "ranges": [record_to_dict(record) for record in trace.ranges],
        "compiles": [record_to_dict(record) for record in trace.compiles],
        "device_prints": [record_to_dict(record) for record in trace.device_prints.values()],
    }
    text = json.dumps(document).encode()
    with file_errors(path, "save the trace to", MISSING_FOLDER):
        return write_archive(path, lambda: [(DOCUMENT_NAME, text), *entries], limits)


def load_trace(
    path: str | os.PathLike[str], cls: type[TraceType], limits: ArchiveLimits = DEFAULT_LIMITS
) -> TraceType:
    """Read a file written by :func:`save_trace` into a new ``cls`` instance.

    Raises :class:`TraceFormatError` for any file that is not such a trace, and
    :class:`~luisa_nb.errors.TraceFileError` (``TraceFileNotFoundError`` where there is
    no file) when ``path`` cannot be opened at all.
    """
    path = checked_path(path, "read the trace")
    where = str(path)
    with file_errors(path, "read the trace", MISSING_TRACE):
        archive = open_archive(path, limits)
    with archive:
        if DOCUMENT_NAME not in archive:
            raise TraceFormatError(
                f"{path} is a zip file but holds no {DOCUMENT_NAME}, so it is not a luisa_nb "
                "trace; pass a file written by Trace.save()"
            )
        document = archive.read_json(DOCUMENT_NAME, MAX_DOCUMENT_BYTES)
        version = _check_header(document, where)
        layout = _DocumentV1 if version == 1 else _DocumentV2
        check_json(document, layout, where=f"{where}: {DOCUMENT_NAME}")
        trace = _new_trace(document, where, cls)
        if version == 1:
            table, syncs = _read_records_v1(document["records"], where)
            trace.blobs = _read_blobs_v1(archive)
        else:
            hosts = _hosts(document["hosts"], where)
            table, syncs, trace.blobs = read_contents(ColumnReader(archive, where), document, hosts)
            trace.set_host_activity(*_host_activity(document, where))
            prints = document.get("device_prints", [])
            trace.set_device_prints(build_list(DevicePrintRecord, prints, where, "device_prints"))
    trace.set_contents(table, syncs)
    _check_blobs_present(trace, where)
    return trace


def _check_header(document: Any, where: str) -> int:
    """The version of ``document``, after checking that it is a trace this can read."""
    found = document.get("format") if isinstance(document, dict) else None
    if found != FORMAT:
        raise TraceFormatError(
            f"{where}: {DOCUMENT_NAME} has format {short_repr(found)}, not {FORMAT!r}; pass a "
            "file written by Trace.save()"
        )
    version = document.get("version")
    if type(version) is not int or version < 1:
        raise TraceFormatError(
            f"{where}: trace version {short_repr(version)} is not a valid version; {DAMAGED}"
        )
    if version > VERSION:
        raise TraceFormatError(
            f"{where} is a version {short_repr(version)} trace, and this luisa_nb reads "
            f"version {VERSION} at most; upgrade luisa_nb to open it"
        )
    return version


def _new_trace(document: dict[str, Any], where: str, cls: type[TraceType]) -> TraceType:
    """A ``cls`` with the metadata, buffers and streams of ``document``."""
    metadata = build(TraceMetadata, document["metadata"], where, "metadata")
    for position, device in enumerate(metadata.devices):
        device_path = f"metadata.devices[{position}]"
        check_json(device, dict[str, _DeviceValue], where=where, path=device_path)
        check_json(device.get("name", ""), str, where=where, path=f"{device_path}.name")
    try:
        trace = cls(
            capture=metadata.capture,
            capture_bytes=metadata.capture_bytes,
            capture_limit=metadata.capture_limit,
        )
    except ConfigurationError as error:
        raise TraceFormatError(f"{where}: metadata: {error_summary(error)}; {DAMAGED}") from None
    trace.metadata = metadata
    buffers = build_list(BufferInfo, document["buffers"], where, "buffers")
    streams = build_list(StreamInfo, document["streams"], where, "streams")
    for position, info in enumerate(buffers):
        check_dtype(info.dtype, where, f"buffers[{position}].dtype")
    trace.buffers = {info.id: info for info in buffers}
    trace.streams = {info.id: info for info in streams}
    return trace


def _host_activity(
    document: dict[str, Any], where: str
) -> tuple[list[RangeRecord], list[CompileRecord], list[ReleaseRecord]]:
    """The ranges, compiles and releases of a version 2 document, ranges checked to nest
    as recorded."""
    ranges = build_list(RangeRecord, document.get("ranges", []), where, "ranges")
    for position, record in enumerate(ranges):
        parent = record.parent
        if record.id != position or (parent is not None and not 0 <= parent < position):
            raise TraceFormatError(
                f"{where}: ranges[{position}] has id {record.id} and parent {parent}; a "
                f"range's id is its position and its parent began before it; {DAMAGED}"
            )
    compiles = build_list(CompileRecord, document.get("compiles", []), where, "compiles")
    releases = build_list(ReleaseRecord, document.get("releases", []), where, "releases")
    return ranges, compiles, releases


def _hosts(listed: list[dict[str, Any]], where: str) -> list[HostRange]:
    hosts = build_list(HostRange, listed, where, "hosts")
    for position, host in enumerate(hosts):
        check_dtype(host.dtype, where, f"hosts[{position}].dtype")
    return hosts


def _read_records_v1(
    listed: list[dict[str, Any]], where: str
) -> tuple[CommandTable, list[SyncRecord]]:
    commands: list[CommandRecord] = []
    syncs: list[SyncRecord] = []
    for position, item in enumerate(listed):
        record_path = f"records[{position}]"
        tag = item.get("type")
        if not isinstance(tag, str) or tag not in V1_RECORD_TYPES:
            raise TraceFormatError(
                f"{where}: {record_path} has unknown record type {short_repr(tag)} (known: "
                f"{', '.join(V1_RECORD_TYPES)}); the file was written by a newer luisa_nb, "
                "upgrade to open it"
            )
        fields = {key: value for key, value in item.items() if key != "type"}
        record = build(V1_RECORD_TYPES[tag], fields, where, record_path)
        if isinstance(record, CommandRecord):
            _check_command_v1(record, where, record_path)
            commands.append(record)
        else:
            syncs.append(record)
    return CommandTable.from_records(commands), syncs


def _check_command_v1(record: CommandRecord, where: str, path: str) -> None:
    if record.staging not in POLICIES:
        raise TraceFormatError(
            f"{where}: {path}.staging is {short_repr(record.staging)}, not one of "
            f"{', '.join(map(repr, POLICIES))}; {DAMAGED}"
        )
    if record.host is not None:
        check_dtype(record.host.dtype, where, f"{path}.host.dtype")


def _read_blobs_v1(archive: ArchiveReader) -> dict[str, np.ndarray]:
    blobs: dict[str, np.ndarray] = {}
    for name in archive.names:
        if name.startswith(V1_BLOB_FOLDER) and name.endswith(".npy"):
            key = name[len(V1_BLOB_FOLDER) : -len(".npy")]
            blobs[key] = archive.read_npy(name, dtypes=_BLOB_DTYPES, ndim=1)
    return blobs


def _check_blobs_present(trace: Trace, where: str) -> None:
    table = trace.table
    for name in ("enqueue_capture", "data_capture"):
        for row, capture in enumerate(table.objects[name]):
            if capture is not None and capture.blob is not None and capture.blob not in trace.blobs:
                command = int(table.numbers["id"][row])
                raise TraceFormatError(
                    f"{where}: command #{command} refers to blob {short_repr(capture.blob)}, "
                    "which the file does not hold; the file is truncated or was edited, "
                    "save the trace again"
                )
