"""Trace files: a zip holding ``trace.json`` (versioned JSON) and ``blobs/<key>.npy``.

Reading goes through :mod:`luisa_nb.trace.archive`, which bounds what a file may make
this process read, inflate and allocate. Loading never unpickles: blobs are plain
``.npy`` arrays, and records are rebuilt field by field from their dataclass type hints,
so a damaged file, or one from an unknown or newer writer, fails with a
:class:`TraceFormatError` that says what is wrong. Saving replaces the file atomically.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import types
import typing
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import numpy as np

from luisa_nb.errors import ConfigurationError, TraceError, TraceFormatError
from luisa_nb.trace.archive import (
    DAMAGED,
    DEFAULT_LIMITS,
    ArchiveLimits,
    ArchiveReader,
    check_json,
    error_summary,
    open_archive,
    short_names,
    short_repr,
    write_archive,
)
from luisa_nb.trace.records import (
    BufferInfo,
    CommandRecord,
    StreamInfo,
    SyncRecord,
    TraceMetadata,
    record_to_dict,
)

if typing.TYPE_CHECKING:
    from luisa_nb.trace.trace import Trace

FORMAT = "luisa_nb.trace"
VERSION = 1
DOCUMENT_NAME = "trace.json"
BLOB_FOLDER = "blobs/"
# About 110k records in this layout; parsed, a document takes 3-25 times its size.
MAX_DOCUMENT_BYTES = 64 << 20
RECORD_TYPES: dict[str, type] = {"command": CommandRecord, "sync": SyncRecord}
_TYPE_TAGS = {record_type: tag for tag, record_type in RECORD_TYPES.items()}
_BLOB_DTYPES = (np.dtype(np.uint8),)
# Dtypes the analysis reads host and buffer bytes as, written as numpy's dtype.str does.
_VALUE_DTYPE = re.compile(r"[<>|=]?[biuf][1-9][0-9]?")
# The policies the runtime records a command under.
_STAGING_POLICIES = ("submit", "execute")
# Device descriptions in the metadata are flat: {"name": "cpu", "threads": 4}.
_DeviceValue = str | int | float | bool | None


class _DocumentTable(TypedDict):
    """The top level of ``trace.json``."""

    format: str
    version: int
    metadata: dict[str, Any]
    buffers: list[Any]
    streams: list[Any]
    records: list[dict[str, Any]]


TraceType = TypeVar("TraceType", bound="Trace")


def save_trace(trace: Trace, path: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> Path:
    """Write ``trace`` to ``path`` atomically; returns ``path``."""
    document = {
        "format": FORMAT,
        "version": VERSION,
        "metadata": record_to_dict(trace.metadata),
        "buffers": [record_to_dict(info) for info in trace.buffers.values()],
        "streams": [record_to_dict(info) for info in trace.streams.values()],
        "records": [
            {"type": _TYPE_TAGS[type(record)], **record_to_dict(record)} for record in trace.records
        ],
    }
    text = json.dumps(document).encode()
    if len(text) > MAX_DOCUMENT_BYTES:
        raise TraceError(
            f"cannot save {path}: its {DOCUMENT_NAME} would be {len(text)} bytes, more than the "
            f"{MAX_DOCUMENT_BYTES} a trace may hold; trace fewer commands"
        )

    def entries() -> typing.Iterator[tuple[str, bytes]]:
        yield DOCUMENT_NAME, text
        for key, data in trace.blobs.items():
            stream = io.BytesIO()
            np.save(stream, data, allow_pickle=False)
            yield f"{BLOB_FOLDER}{key}.npy", stream.getvalue()

    return write_archive(path, entries, limits)


def load_trace(
    path: Path, cls: type[TraceType], limits: ArchiveLimits = DEFAULT_LIMITS
) -> TraceType:
    """Read a file written by :func:`save_trace` into a new ``cls`` instance.

    Raises :class:`TraceFormatError` for any file that is not such a trace, and
    ``OSError`` when ``path`` cannot be opened at all (it does not exist, permissions).
    """
    path = Path(path)
    with open_archive(path, limits) as archive:
        if DOCUMENT_NAME not in archive:
            raise TraceFormatError(
                f"{path} is a zip file but holds no {DOCUMENT_NAME}, so it is not a luisa_nb "
                "trace; pass a file written by Trace.save()"
            )
        document = _read_document(archive.read_json(DOCUMENT_NAME, MAX_DOCUMENT_BYTES), path)
        trace = _build_trace(document, path, cls)
        trace.blobs = _read_blobs(archive)
    _check_blobs_present(trace, path)
    return trace


def _read_document(document: Any, path: Path) -> dict[str, Any]:
    """``document`` after checking its format, its version and its top-level fields."""
    found = document.get("format") if isinstance(document, dict) else None
    if found != FORMAT:
        raise TraceFormatError(
            f"{path}: {DOCUMENT_NAME} has format {short_repr(found)}, not {FORMAT!r}; pass a "
            "file written by Trace.save()"
        )
    version = document.get("version")
    if type(version) is not int or version < 1:
        raise TraceFormatError(
            f"{path}: trace version {short_repr(version)} is not a valid version; {DAMAGED}"
        )
    if version > VERSION:
        raise TraceFormatError(
            f"{path} is a version {short_repr(version)} trace, and this luisa_nb reads "
            f"version {VERSION} at most; upgrade luisa_nb to open it"
        )
    check_json(document, _DocumentTable, where=f"{path}: {DOCUMENT_NAME}")
    return document


def _build_trace(document: dict[str, Any], path: Path, cls: type[TraceType]) -> TraceType:
    where = str(path)
    metadata = _build(TraceMetadata, document["metadata"], where, "metadata")
    for position, device in enumerate(metadata.devices):
        device_path = f"metadata.devices[{position}]"
        check_json(device, dict[str, _DeviceValue], where=where, path=device_path)
        check_json(device.get("name", ""), str, where=where, path=f"{device_path}.name")
    try:
        trace = cls(capture=metadata.capture, capture_bytes=metadata.capture_bytes)
    except ConfigurationError as error:
        raise TraceFormatError(f"{where}: metadata: {error_summary(error)}; {DAMAGED}") from None
    trace.metadata = metadata
    buffers = _build_list(BufferInfo, document["buffers"], where, "buffers")
    streams = _build_list(StreamInfo, document["streams"], where, "streams")
    for position, info in enumerate(buffers):
        _check_dtype(info.dtype, where, f"buffers[{position}].dtype")
    trace.buffers = {info.id: info for info in buffers}
    trace.streams = {info.id: info for info in streams}
    for position, item in enumerate(document["records"]):
        record_path = f"records[{position}]"
        tag = item.get("type")
        if not isinstance(tag, str) or tag not in RECORD_TYPES:
            raise TraceFormatError(
                f"{where}: {record_path} has unknown record type {short_repr(tag)} (known: "
                f"{', '.join(RECORD_TYPES)}); the file was written by a newer luisa_nb, "
                "upgrade to open it"
            )
        fields = {key: value for key, value in item.items() if key != "type"}
        record = _build(RECORD_TYPES[tag], fields, where, record_path)
        if isinstance(record, CommandRecord):
            _check_command(record, where, record_path)
        trace.add(record)
    return trace


def _read_blobs(archive: ArchiveReader) -> dict[str, np.ndarray]:
    blobs: dict[str, np.ndarray] = {}
    for name in archive.names:
        if name.startswith(BLOB_FOLDER) and name.endswith(".npy"):
            key = name[len(BLOB_FOLDER) : -len(".npy")]
            blobs[key] = archive.read_npy(name, dtypes=_BLOB_DTYPES, ndim=1)
    return blobs


def _check_blobs_present(trace: Trace, path: Path) -> None:
    for record in trace.commands:
        for capture in (record.enqueue_capture, record.data_capture):
            if capture is not None and capture.blob is not None and capture.blob not in trace.blobs:
                raise TraceFormatError(
                    f"{path}: command #{record.id} refers to blob {short_repr(capture.blob)}, "
                    f"which is missing from {BLOB_FOLDER}; the file is truncated or was edited, "
                    "save the trace again"
                )


def _check_command(record: CommandRecord, where: str, path: str) -> None:
    if record.staging not in _STAGING_POLICIES:
        raise TraceFormatError(
            f"{where}: {path}.staging is {short_repr(record.staging)}, not one of "
            f"{', '.join(map(repr, _STAGING_POLICIES))}; {DAMAGED}"
        )
    if record.host is not None:
        _check_dtype(record.host.dtype, where, f"{path}.host.dtype")


def _check_dtype(dtype: str, where: str, path: str) -> None:
    """``dtype`` is one the analysis can read bytes as: a plain bool or number type."""
    if not _VALUE_DTYPE.fullmatch(dtype) or not _is_dtype(dtype):
        raise TraceFormatError(
            f"{where}: {path} is {short_repr(dtype)}, not a bool, int, unsigned or float "
            f"dtype such as '<f4'; {DAMAGED}"
        )


def _is_dtype(text: str) -> bool:
    try:
        np.dtype(text)
    except TypeError:
        return False
    return True


@cache
def _fields(cls: type) -> dict[str, tuple[Any, bool]]:
    """The type hint of each saved (not transient) field of dataclass ``cls``, and whether
    the field is required."""
    hints = typing.get_type_hints(cls)
    return {
        field.name: (hints[field.name], _required(field))
        for field in dataclasses.fields(cls)
        if not field.metadata.get("transient")
    }


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _build(cls: type, data: Any, where: str, path: str) -> Any:
    """An instance of dataclass ``cls`` from its JSON object at ``path``, checking every
    field."""
    check_json(data, dict[str, Any], where=where, path=path)
    fields = _fields(cls)
    unknown = data.keys() - fields.keys()
    if unknown:
        raise TraceFormatError(
            f"{where}: {path} has unknown field(s) {short_names(sorted(unknown))} "
            f"for {cls.__name__}; the file was written by a newer or different luisa_nb, "
            "upgrade to open it"
        )
    values = {}
    for name, (hint, required) in fields.items():
        if name in data:
            values[name] = _convert(data[name], hint, where, f"{path}.{name}")
        elif required:
            raise TraceFormatError(
                f"{where}: {path} lacks field {name!r} of {cls.__name__}; {DAMAGED}"
            )
    return cls(**values)


def _build_list(cls: type, data: list[Any], where: str, path: str) -> list[Any]:
    return [_build(cls, item, where, f"{path}[{position}]") for position, item in enumerate(data)]


@cache
def _conversion(hint: Any) -> tuple[str, Any, tuple[Any, ...]]:
    """How :func:`_convert` treats ``hint``: its kind, origin and arguments (worked out
    once per hint; ``typing`` takes microseconds to answer)."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        kind = "union"
    elif isinstance(hint, type) and issubclass(hint, Enum):
        kind = "enum"
    elif dataclasses.is_dataclass(hint):
        kind = "dataclass"
    elif origin in (list, tuple):
        kind = "sequence"
    else:
        kind = "json"
    return kind, origin, arguments


def _convert(value: Any, hint: Any, where: str, path: str) -> Any:
    """``value`` (from JSON) as type ``hint``; raises TraceFormatError if it does not fit."""
    kind, origin, arguments = _conversion(hint)
    if kind == "json":
        check_json(value, hint, where=where, path=path)
        return float(value) if hint is float else value
    if kind == "union":
        options = [option for option in arguments if option is not type(None)]
        if value is None and len(options) < len(arguments):
            return None
        for option in options[:-1]:
            try:
                return _convert(value, option, where, path)
            except TraceFormatError:
                continue
        return _convert(value, options[-1], where, path)
    if kind == "enum":
        try:
            return hint(value)
        except (ValueError, TypeError):
            known = ", ".join(repr(member.value) for member in hint)
            raise TraceFormatError(
                f"{where}: {path} is {short_repr(value)}, not one of {known}; upgrade luisa_nb "
                "if the file is newer"
            ) from None
    if kind == "dataclass":
        return _build(hint, value, where, path)
    check_json(value, list[Any], where=where, path=path)
    if origin is tuple and arguments and arguments[-1] is not Ellipsis:
        if len(value) != len(arguments):
            raise TraceFormatError(
                f"{where}: {path} holds {len(value)} items where {len(arguments)} are "
                f"expected; {DAMAGED}"
            )
        item_hints = arguments
    else:
        item_hints = (arguments[0] if arguments else Any,) * len(value)
    items = [
        _convert(item, item_hint, where, f"{path}[{position}]")
        for position, (item, item_hint) in enumerate(zip(value, item_hints, strict=True))
    ]
    return tuple(items) if origin is tuple else items
