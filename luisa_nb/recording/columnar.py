"""The columns of a version 2 trace file: commands, sync points and captured bytes as
``.npy`` arrays, and the values many rows share stored once.

Saving writes what a trace already holds in columns (:class:`~.table.CommandTable`);
objects that rows refer to (labels, errors, host ranges, sets of device ranges,
captures, blob keys) are interned and referred to by index, ``-1`` meaning "none".
Loading checks every column's dtype, length, codes and indices before it builds one
object, so a damaged file fails with a :class:`~luisa_nb.errors.TraceFormatError` that
names the entry and what is wrong with it.

=====================================  ==============================================
entry                                  holds
=====================================  ==============================================
``commands/<column>.npy``              int64, one per command: the number columns of
                                       :data:`~.table.NUMBER_COLUMNS`, and the indices
                                       ``label``, ``error`` (into ``trace.json``'s
                                       ``labels``/``errors``), ``host`` (``hosts``),
                                       ``device_ranges`` (range sets),
                                       ``enqueue_capture``, ``data_capture`` (captures)
``ranges/{buffer,offset,nbytes,access}``  int64, one per device range of every set
``ranges/set_starts.npy``              int64: set ``i`` is ranges ``[s[i], s[i+1])``
``captures/{nbytes,blob,digest}.npy``  int64: size, and key indices of blob and digest
``keys.npy``                           bytes: every blob key and digest, once
``blobs/{data,starts,keys}.npy``       the captured bytes, concatenated; blob ``i`` is
                                       ``data[starts[i]:starts[i+1]]`` under key
                                       ``keys[i]``
``syncs/<column>.npy``                 int64, one per sync point (:data:`SYNC_COLUMNS`)
=====================================  ==============================================
"""

from __future__ import annotations

import io
from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import pairwise
from typing import Any, NoReturn

import numpy as np
from numpy.lib import format as npy_format

from luisa_nb.errors import TraceFormatError
from luisa_nb.recording.archive import ArchiveReader
from luisa_nb.recording.error_text import DAMAGED
from luisa_nb.recording.records import (
    Access,
    Capture,
    DeviceRange,
    HostRange,
    ReleaseRecord,
    SyncKind,
    SyncRecord,
    record_to_dict,
)
from luisa_nb.recording.synthetic_addresses import synthetic_addresses
from luisa_nb.recording.table import (
    KINDS,
    MISSING,
    NUMBER_COLUMNS,
    POLICIES,
    STATUSES,
    CommandTable,
    HostPiece,
)

INT64 = np.dtype(np.int64)
UINT8 = np.dtype(np.uint8)
MAX_KEY_BYTES = 128
ACCESSES = tuple(Access)
SYNC_KINDS = tuple(SyncKind)
INDEX_COLUMNS = ("label", "error", "host", "device_ranges", "enqueue_capture", "data_capture")
SYNC_COLUMNS = (
    "id", "seq", "kind", "stream", "event", "covers", "issued", "completed", "status", "error"
)  # fmt: skip
_CODED = {"kind": KINDS, "staging": POLICIES, "status": STATUSES}
_SYNC_CODED = {"kind": SYNC_KINDS, "status": STATUSES}
_SYNC_OPTIONAL = ("stream", "event", "covers", "completed")

Chunks = list[bytes | memoryview]
Entry = tuple[str, Chunks]


# -- writing ---------------------------------------------------------------------------


def npy_entry(name: str, array: np.ndarray) -> Entry:
    """A ``.npy`` entry of the 1-D array ``array``, its bytes not copied."""
    array = np.ascontiguousarray(array)
    header = _npy_header(array.dtype, len(array))
    return name, [header, memoryview(array).cast("B")]


def _npy_header(dtype: np.dtype, length: int) -> bytes:
    header = {"descr": npy_format.dtype_to_descr(dtype), "fortran_order": False}
    header["shape"] = (length,)
    stream = io.BytesIO()
    npy_format.write_array_header_1_0(stream, header)
    return stream.getvalue()


class Interner:
    """Values numbered in the order first seen; ``key`` says when two are the same."""

    def __init__(self, key: Callable[[Any], Hashable] = lambda value: value) -> None:
        self.values: list[Any] = []
        self._numbers: dict[Hashable, int] = {}
        self._key = key

    def number(self, value: Any) -> int:
        """The index of ``value`` (``-1`` for ``None``)."""
        if value is None:
            return MISSING
        key = self._key(value)
        number = self._numbers.get(key)
        if number is None:
            number = self._numbers[key] = len(self.values)
            self.values.append(value)
        return number

    def column(self, values: Iterable[Any]) -> np.ndarray:
        number = self.number
        return np.fromiter((number(value) for value in values), INT64)


def command_entries(
    table: CommandTable,
    syncs: Sequence[SyncRecord],
    blobs: dict[str, np.ndarray],
    releases: Sequence[ReleaseRecord] = (),
) -> tuple[dict[str, Any], list[Entry]]:
    """The ``trace.json`` fields and the ``.npy`` entries of ``table``, ``syncs``,
    ``blobs`` (which must hold every blob the captures refer to) and ``releases``, whose
    memory takes synthetic addresses with the commands' host ranges."""
    labels, errors = Interner(), Interner()
    hosts = Interner(id)
    range_sets = Interner()
    captures = Interner()
    keys = Interner()
    entries = [npy_entry(f"commands/{name}.npy", table.numbers[name]) for name in NUMBER_COLUMNS]
    objects = table.objects
    for name, interner in (
        ("label", labels),
        ("error", errors),
        ("host", hosts),
        ("device_ranges", range_sets),
        ("enqueue_capture", captures),
        ("data_capture", captures),
    ):
        values = objects[name]
        if name == "device_ranges":
            values = (tuple(ranges) for ranges in values)
        entries.append(npy_entry(f"commands/{name}.npy", interner.column(values)))
    entries += _range_entries(range_sets.values)
    entries += _capture_entries(captures.values, keys)
    entries += _blob_entries(blobs, keys)
    entries.append(npy_entry("keys.npy", _key_array(keys.values)))
    entries += _sync_entries(syncs, errors)
    count = len(hosts.values)
    addresses = synthetic_addresses([*hosts.values, *(release.host for release in releases)])
    addresses, released_at = addresses[:count], addresses[count:]
    fields = {
        "counts": {"commands": len(table), "syncs": len(syncs)},
        "labels": labels.values,
        "errors": errors.values,
        "hosts": [_host_json(host, address)
                  for host, address in zip(hosts.values, addresses, strict=True)],
        "host_pieces": [[row, [list(piece) for piece in pieces]]
                        for row, pieces in sorted(table.host_pieces.items())],
        "releases": [{**record_to_dict(release), "host": _host_json(release.host, address)}
                     for release, address in zip(releases, released_at, strict=True)],
    }  # fmt: skip
    return fields, entries


def _host_json(host: HostRange, address: int) -> dict[str, Any]:
    """``host`` as ``trace.json`` holds it: at its synthetic ``address``, never at the
    process's (:mod:`~luisa_nb.recording.synthetic_addresses`)."""
    return {"address": address, "nbytes": host.nbytes, "dtype": host.dtype,
            "shape": list(host.shape), "name": host.name}  # fmt: skip


def _range_entries(range_sets: list[tuple[DeviceRange, ...]]) -> list[Entry]:
    flat = [device_range for ranges in range_sets for device_range in ranges]
    access_codes = {access: code for code, access in enumerate(ACCESSES)}
    starts = np.zeros(len(range_sets) + 1, INT64)
    np.cumsum([len(ranges) for ranges in range_sets], out=starts[1:])
    columns = {
        "buffer": [r.buffer for r in flat],
        "offset": [r.offset for r in flat],
        "nbytes": [r.nbytes for r in flat],
        "access": [access_codes[r.access] for r in flat],
    }
    entries = [npy_entry(f"ranges/{name}.npy", np.array(v, INT64)) for name, v in columns.items()]
    return [*entries, npy_entry("ranges/set_starts.npy", starts)]


def _capture_entries(captures: list[Capture], keys: Interner) -> list[Entry]:
    return [
        npy_entry("captures/nbytes.npy", np.array([c.nbytes for c in captures], INT64)),
        npy_entry("captures/blob.npy", keys.column(c.blob for c in captures)),
        npy_entry("captures/digest.npy", keys.column(c.digest for c in captures)),
    ]


def _blob_entries(blobs: dict[str, np.ndarray], keys: Interner) -> list[Entry]:
    arrays = list(blobs.values())
    starts = np.zeros(len(arrays) + 1, INT64)
    np.cumsum([array.nbytes for array in arrays], out=starts[1:])
    header = _npy_header(UINT8, int(starts[-1]))
    data: Chunks = [header, *(memoryview(np.ascontiguousarray(a).view(UINT8)) for a in arrays)]
    return [
        ("blobs/data.npy", data),
        npy_entry("blobs/starts.npy", starts),
        npy_entry("blobs/keys.npy", keys.column(blobs)),
    ]


def _key_array(keys: list[str]) -> np.ndarray:
    encoded = [key.encode() for key in keys]
    width = max((len(key) for key in encoded), default=1)
    if width > MAX_KEY_BYTES:
        raise ValueError(f"a capture key of {width} bytes is longer than {MAX_KEY_BYTES}")
    return np.array(encoded, np.dtype(f"S{max(width, 1)}"))


def _sync_entries(syncs: Sequence[SyncRecord], errors: Interner) -> list[Entry]:
    kinds = {kind: code for code, kind in enumerate(SYNC_KINDS)}
    statuses = {status: code for code, status in enumerate(STATUSES)}
    columns = {
        "id": [s.id for s in syncs],
        "seq": [s.seq for s in syncs],
        "kind": [kinds[s.kind] for s in syncs],
        "issued": [s.issued for s in syncs],
        "status": [statuses[s.status] for s in syncs],
    }
    for name in _SYNC_OPTIONAL:
        columns[name] = [MISSING if (v := getattr(s, name)) is None else v for s in syncs]
    arrays = {name: np.array(values, INT64) for name, values in columns.items()}
    arrays["error"] = errors.column(s.error for s in syncs)
    return [npy_entry(f"syncs/{name}.npy", arrays[name]) for name in SYNC_COLUMNS]


# -- reading ---------------------------------------------------------------------------


class ColumnReader:
    """Reads the columns of one file, checking each as it goes."""

    def __init__(self, archive: ArchiveReader, where: str) -> None:
        self.archive = archive
        self.where = where

    def column(self, name: str, length: int | None, dtype: np.dtype = INT64) -> np.ndarray:
        """Entry ``name``: a 1-D array of ``dtype`` with ``length`` items (any if None)."""
        array = self.archive.read_npy(name, dtypes=(dtype,), ndim=1)
        if length is not None and len(array) != length:
            self.fail(name, f"holds {len(array)} values, not {length}")
        return array

    def indices(self, name: str, length: int, count: int, optional: bool) -> np.ndarray:
        """Entry ``name``: ``length`` indices into a table of ``count`` (``-1``: none)."""
        array = self.column(name, length)
        low = MISSING if optional else 0
        if length and (array.min() < low or array.max() >= count):
            bad = array[(array < low) | (array >= count)][0]
            self.fail(name, f"refers to item {bad} of a table of {count}")
        return array

    def codes(self, name: str, length: int, members: Sequence[Any]) -> np.ndarray:
        return self.indices(name, length, len(members), optional=False)

    def starts(self, name: str, parts: int | None, total: int) -> np.ndarray:
        """Entry ``name``: offsets splitting ``total`` items into consecutive parts."""
        array = self.column(name, None if parts is None else parts + 1)
        if not len(array) or array[0] != 0 or array[-1] != total or np.any(np.diff(array) < 0):
            self.fail(name, f"does not split {total} items into consecutive parts")
        return array

    def fail(self, name: str, problem: str) -> NoReturn:
        raise TraceFormatError(f"{self.where}: {name} {problem}; {DAMAGED}")


def read_contents(
    reader: ColumnReader, fields: dict[str, Any], hosts: list[HostRange]
) -> tuple[CommandTable, list[SyncRecord], dict[str, np.ndarray]]:
    """The command table, sync points and blobs of a version 2 file whose ``trace.json``
    fields (checked for their JSON types already) are ``fields``."""
    count = fields["counts"]["commands"]
    numbers = {name: reader.column(f"commands/{name}.npy", count) for name in NUMBER_COLUMNS}
    for name, members in _CODED.items():
        reader.codes(f"commands/{name}.npy", count, members)
    keys = _read_keys(reader)
    range_sets = _read_range_sets(reader)
    captures = _read_captures(reader, keys)
    tables: dict[str, list[Any]] = {
        "label": fields["labels"],
        "error": fields["errors"],
        "host": hosts,
        "device_ranges": range_sets,
        "enqueue_capture": captures,
        "data_capture": captures,
    }
    objects = {}
    for name, values in tables.items():
        optional = name not in ("label", "device_ranges")
        indices = reader.indices(f"commands/{name}.npy", count, len(values), optional)
        objects[name] = _pick(values, indices)
    pieces = _host_pieces(reader, fields["host_pieces"], count)
    table = CommandTable(numbers, objects, pieces)
    syncs = _read_syncs(reader, fields["counts"]["syncs"], fields["errors"])
    return table, syncs, _read_blobs(reader, keys)


def _pick(values: list[Any], indices: np.ndarray) -> list[Any]:
    """``values[i]`` for each index, ``None`` for ``-1``."""
    table = [*values, None]  # index -1 picks the None at the end
    return [table[index] for index in indices.tolist()]


def _read_keys(reader: ColumnReader) -> list[str]:
    array = reader.archive.read_npy("keys.npy", ndim=1)
    if array.dtype.kind != "S" or array.dtype.itemsize > MAX_KEY_BYTES:
        reader.fail("keys.npy", f"holds {array.dtype}, not byte strings of at most "
                    f"{MAX_KEY_BYTES} bytes")  # fmt: skip
    try:
        return [key.decode("ascii") for key in array.tolist()]
    except UnicodeDecodeError:
        reader.fail("keys.npy", "holds a key that is not ASCII")


def _read_range_sets(reader: ColumnReader) -> list[tuple[DeviceRange, ...]]:
    buffer = reader.column("ranges/buffer.npy", None)
    total = len(buffer)
    offset = reader.column("ranges/offset.npy", total)
    nbytes = reader.column("ranges/nbytes.npy", total)
    access = reader.codes("ranges/access.npy", total, ACCESSES)
    if total and (offset.min() < 0 or nbytes.min() < 0):
        reader.fail("ranges/offset.npy", "or ranges/nbytes.npy holds a negative value")
    starts = reader.starts("ranges/set_starts.npy", None, total).tolist()
    ranges = [
        DeviceRange(b, o, n, ACCESSES[a])
        for b, o, n, a in zip(
            buffer.tolist(), offset.tolist(), nbytes.tolist(), access.tolist(), strict=True
        )
    ]
    return [tuple(ranges[start:end]) for start, end in pairwise(starts)]


def _read_captures(reader: ColumnReader, keys: list[str]) -> list[Capture]:
    nbytes = reader.column("captures/nbytes.npy", None)
    count = len(nbytes)
    if count and nbytes.min() < 0:
        reader.fail("captures/nbytes.npy", "holds a negative size")
    blob = _pick(keys, reader.indices("captures/blob.npy", count, len(keys), optional=True))
    digest = _pick(keys, reader.indices("captures/digest.npy", count, len(keys), optional=True))
    return [Capture(*fields) for fields in zip(nbytes.tolist(), blob, digest, strict=True)]


def _read_blobs(reader: ColumnReader, keys: list[str]) -> dict[str, np.ndarray]:
    data = reader.column("blobs/data.npy", None, UINT8)
    starts = reader.starts("blobs/starts.npy", None, len(data)).tolist()
    names = reader.indices("blobs/keys.npy", len(starts) - 1, len(keys), optional=False)
    return {
        keys[key]: data[start:end]
        for key, (start, end) in zip(names.tolist(), pairwise(starts), strict=True)
    }


def _host_pieces(
    reader: ColumnReader, listed: list[Any], count: int
) -> dict[int, tuple[HostPiece, ...]]:
    pieces = {}
    for row, row_pieces in listed:
        if not 0 <= row < count:
            reader.fail("trace.json", f"host_pieces names row {row} of {count} commands")
        pieces[row] = tuple(tuple(piece) for piece in row_pieces)
    return pieces


def _read_syncs(reader: ColumnReader, count: int, errors: list[str]) -> list[SyncRecord]:
    columns = {name: reader.column(f"syncs/{name}.npy", count) for name in SYNC_COLUMNS}
    for name, members in _SYNC_CODED.items():
        reader.codes(f"syncs/{name}.npy", count, members)
    reader.indices("syncs/error.npy", count, len(errors), optional=True)
    lists = {name: column.tolist() for name, column in columns.items()}
    for name in _SYNC_OPTIONAL:
        lists[name] = [None if value == MISSING else value for value in lists[name]]
    return [
        SyncRecord(id, seq, SYNC_KINDS[kind], stream, event, covers, issued, completed,
                   STATUSES[status], error)
        for id, seq, kind, stream, event, covers, issued, completed, status, error in zip(
            *(lists[name] for name in SYNC_COLUMNS[:9]),
            _pick(errors, columns["error"]),
            strict=True,
        )
    ]  # fmt: skip
