"""Trace files: a zip holding ``trace.json`` (versioned JSON) and ``blobs/<key>.npy``.

Loading never unpickles: blobs are read with ``allow_pickle=False`` and records are
rebuilt field by field from their dataclass type hints, so a file from an unknown or
newer writer fails with a :class:`TraceFormatError` that says what is wrong.
"""

from __future__ import annotations

import dataclasses
import io
import json
import types
import typing
import zipfile
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from luisa_nb.errors import ConfigurationError, TraceFormatError
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
RECORD_TYPES: dict[str, type] = {"command": CommandRecord, "sync": SyncRecord}
_TYPE_TAGS = {record_type: tag for tag, record_type in RECORD_TYPES.items()}
_DOCUMENT_FIELDS = ("format", "version", "metadata", "buffers", "streams", "records")

TraceType = TypeVar("TraceType", bound="Trace")


def save_trace(trace: Trace, path: Path) -> Path:
    """Write ``trace`` to ``path``; returns ``path``."""
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
    path = Path(path)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(DOCUMENT_NAME, json.dumps(document))
        for key, data in trace.blobs.items():
            stream = io.BytesIO()
            np.save(stream, data, allow_pickle=False)
            archive.writestr(f"{BLOB_FOLDER}{key}.npy", stream.getvalue())
    return path


def load_trace(path: Path, cls: type[TraceType]) -> TraceType:
    """Read a file written by :func:`save_trace` into a new ``cls`` instance."""
    path = Path(path)
    if not zipfile.is_zipfile(path):
        raise TraceFormatError(
            f"{path} is not a luisa_nb trace: it is not a zip file; pass a file written by "
            "Trace.save()"
        )
    with zipfile.ZipFile(path) as archive:
        document = _read_document(archive, path)
        trace = _build_trace(document, path, cls)
        trace.blobs = _read_blobs(archive, path)
    _check_blobs_present(trace, path)
    return trace


def _read_document(archive: zipfile.ZipFile, path: Path) -> dict[str, Any]:
    try:
        raw = archive.read(DOCUMENT_NAME)
    except KeyError:
        raise TraceFormatError(
            f"{path} is a zip file but holds no {DOCUMENT_NAME}, so it is not a luisa_nb "
            "trace; pass a file written by Trace.save()"
        ) from None
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TraceFormatError(
            f"{path}: {DOCUMENT_NAME} is not valid JSON ({error}); the file is damaged, "
            "save the trace again"
        ) from error
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else None
        raise TraceFormatError(
            f"{path}: {DOCUMENT_NAME} has format {found!r}, not {FORMAT!r}; pass a file "
            "written by Trace.save()"
        )
    version = document.get("version")
    if type(version) is not int or version < 1:
        raise TraceFormatError(f"{path}: trace version {version!r} is not a valid version")
    if version > VERSION:
        raise TraceFormatError(
            f"{path} is a version {version} trace, and this luisa_nb reads version {VERSION} "
            "at most; upgrade luisa_nb to open it"
        )
    _check_fields(document, _DOCUMENT_FIELDS, DOCUMENT_NAME, path)
    return document


def _build_trace(document: dict[str, Any], path: Path, cls: type[TraceType]) -> TraceType:
    where = f"{path}: metadata"
    metadata = _build(TraceMetadata, document["metadata"], where)
    try:
        trace = cls(capture=metadata.capture, capture_bytes=metadata.capture_bytes)
    except ConfigurationError as error:
        raise TraceFormatError(f"{where}: {error}") from error
    trace.metadata = metadata
    buffers = _build_list(BufferInfo, document["buffers"], f"{path}: buffers")
    streams = _build_list(StreamInfo, document["streams"], f"{path}: streams")
    trace.buffers = {info.id: info for info in buffers}
    trace.streams = {info.id: info for info in streams}
    if not isinstance(document["records"], list):
        raise TraceFormatError(f"{path}: records must be a list")
    for position, item in enumerate(document["records"]):
        where = f"{path}: records[{position}]"
        if not isinstance(item, dict):
            raise TraceFormatError(f"{where} must be an object")
        tag = item.get("type")
        if tag not in RECORD_TYPES:
            raise TraceFormatError(
                f"{where} has unknown record type {tag!r} (known: {', '.join(RECORD_TYPES)}); "
                "the file was written by a newer luisa_nb, upgrade to open it"
            )
        fields = {key: value for key, value in item.items() if key != "type"}
        trace.add(_build(RECORD_TYPES[tag], fields, where))
    return trace


def _read_blobs(archive: zipfile.ZipFile, path: Path) -> dict[str, np.ndarray]:
    blobs: dict[str, np.ndarray] = {}
    for name in archive.namelist():
        if not (name.startswith(BLOB_FOLDER) and name.endswith(".npy")):
            continue
        key = name[len(BLOB_FOLDER) : -len(".npy")]
        try:
            data = np.load(io.BytesIO(archive.read(name)), allow_pickle=False)
        except ValueError as error:
            raise TraceFormatError(
                f"{path}: blob {name} is not a plain .npy array ({error}); traces never "
                "hold pickled data, so this file was not written by Trace.save()"
            ) from error
        if data.dtype != np.uint8 or data.ndim != 1:
            raise TraceFormatError(
                f"{path}: blob {name} holds {data.dtype} of shape {data.shape}, not 1-D uint8 "
                "bytes; the file was not written by Trace.save()"
            )
        blobs[key] = data
    return blobs


def _check_blobs_present(trace: Trace, path: Path) -> None:
    for record in trace.commands:
        for capture in (record.enqueue_capture, record.data_capture):
            if capture is not None and capture.blob is not None and capture.blob not in trace.blobs:
                raise TraceFormatError(
                    f"{path}: command #{record.id} refers to blob {capture.blob}, which is "
                    f"missing from {BLOB_FOLDER}; the file is truncated or was edited, save "
                    "the trace again"
                )


def _check_fields(data: dict[str, Any], known: typing.Iterable[str], where: str, path: Path):
    known = set(known)
    unknown = sorted(set(data) - known)
    if unknown:
        raise TraceFormatError(
            f"{path}: {where} has unknown field(s) {', '.join(unknown)}; the file was written "
            "by a newer or different luisa_nb, upgrade to open it"
        )
    missing = sorted(known - set(data))
    if missing:
        raise TraceFormatError(
            f"{path}: {where} lacks field(s) {', '.join(missing)}; the file is damaged, save "
            "the trace again"
        )


@cache
def _hints(cls: type) -> dict[str, Any]:
    """Type hints of the fields of dataclass ``cls`` that are saved (not transient)."""
    hints = typing.get_type_hints(cls)
    return {
        field.name: hints[field.name]
        for field in dataclasses.fields(cls)
        if not field.metadata.get("transient")
    }


def _build(cls: type, data: Any, where: str) -> Any:
    """An instance of dataclass ``cls`` from its JSON dict, checking every field."""
    if not isinstance(data, dict):
        raise TraceFormatError(f"{where} must be an object, found {type(data).__name__}")
    hints = _hints(cls)
    unknown = sorted(set(data) - set(hints))
    if unknown:
        raise TraceFormatError(
            f"{where} has unknown field(s) {', '.join(unknown)} for {cls.__name__}; the file "
            "was written by a newer or different luisa_nb, upgrade to open it"
        )
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in data:
            values[field.name] = _convert(data[field.name], hints[field.name], where, field.name)
        elif field.name in hints and _required(field):
            raise TraceFormatError(
                f"{where} lacks field {field.name!r} of {cls.__name__}; the file is damaged, "
                "save the trace again"
            )
    return cls(**values)


def _build_list(cls: type, data: Any, where: str) -> list[Any]:
    if not isinstance(data, list):
        raise TraceFormatError(f"{where} must be a list")
    return [_build(cls, item, f"{where}[{position}]") for position, item in enumerate(data)]


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _convert(value: Any, hint: Any, where: str, name: str) -> Any:
    """``value`` (from JSON) as type ``hint``; raises TraceFormatError if it does not fit."""
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None:
            if type(None) in arguments:
                return None
        else:
            options = [option for option in arguments if option is not type(None)]
            for option in options[:-1]:
                try:
                    return _convert(value, option, where, name)
                except TraceFormatError:
                    continue
            return _convert(value, options[-1], where, name)
    elif isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            known = ", ".join(repr(member.value) for member in hint)
            raise TraceFormatError(
                f"{where}: field {name!r} is {value!r}, not one of {known}; upgrade luisa_nb "
                "if the file is newer"
            ) from None
    elif dataclasses.is_dataclass(hint):
        return _build(hint, value, f"{where}.{name}")
    elif origin is list and isinstance(value, list):
        item = arguments[0] if arguments else Any
        return [_convert(v, item, where, name) for v in value]
    elif origin is tuple and isinstance(value, list):
        item = arguments[0] if arguments else Any
        return tuple(_convert(v, item, where, name) for v in value)
    elif (origin is dict and isinstance(value, dict)) or (
        hint in (int, str, bool) and type(value) is hint
    ):
        return value
    elif hint is float and type(value) in (int, float):
        return float(value)
    raise TraceFormatError(
        f"{where}: field {name!r} holds {value!r} where {_type_name(hint)} is expected; the "
        "file is damaged, save the trace again"
    )


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint)
