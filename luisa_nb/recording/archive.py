"""Trace files as zip archives: read as hostile input within limits, written so that
they reopen within the same limits.

Nothing here knows what a trace holds: these are the primitives a layout is built on.

- :func:`open_archive` opens only regular files (never blocking on a FIFO or reading
  ``/dev/zero`` forever), checks the file's size, and turns every way the zip can be
  damaged into :class:`~luisa_nb.errors.TraceFormatError`.
- :meth:`ArchiveReader.read` inflates one entry in chunks and stops as soon as it holds
  more bytes than its header declares, so declared sizes are never trusted; sizes are
  checked against the caller's limit and against the archive's budget before anything
  is inflated. Its entries are parsed by :mod:`~luisa_nb.recording.json_checks` and
  :mod:`~luisa_nb.recording.npy_parser`.
- :func:`write_archive` writes through :func:`~luisa_nb.recording.atomic_files.atomic_write`,
  so a failed save leaves no partial file and the previous file untouched.

The budget: an archive of ``n`` bytes may inflate to ``max(64 MiB, 100 * n)`` bytes in
all (and never more than 8 GiB). DEFLATE cannot exceed about 1032:1, so the bound is a
real one; traces reach 5-20:1 (JSON) and 1-50:1 (captured data), and only constant data
such as zeros compresses further. :func:`write_archive` stores such entries uncompressed
when it has to, so every archive it writes opens with the limits it was written with.
"""

from __future__ import annotations

import os
import stat
import struct
import typing
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from luisa_nb.errors import TraceError, TraceFormatError
from luisa_nb.recording.atomic_files import atomic_write
from luisa_nb.recording.error_text import DAMAGED, error_summary, short_names, short_repr
from luisa_nb.recording.json_checks import DEFAULT_JSON_DEPTH, parse_json
from luisa_nb.recording.npy_parser import parse_npy

MiB = 1 << 20
GiB = 1 << 30
READ_CHUNK_BYTES = MiB
COMPRESS_LEVEL = 1
"""zlib level 1: columns of times and ids deflate nearly as well as at 6, several
times faster."""
SAMPLE_BYTES = MiB
"""How much of a large entry's start is deflated to decide whether the entry is worth
deflating (:func:`_worth_deflating`)."""
WORTH_DEFLATING = 0.8
"""An entry is deflated if its sample deflates to at most this share of its size."""

_LOCAL_HEADER = struct.Struct("<4s22xHH")
_LOCAL_HEADER_SIGNATURE = b"PK\x03\x04"
_ENCRYPTED_FLAG = 0x1
_FILE_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
}
_READABLE_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
# What zipfile and the file system raise for damaged archives (ValueError covers
# UnicodeDecodeError in names and negative seeks).
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    zlib.error,
    EOFError,
    OSError,
    ValueError,
    struct.error,
    OverflowError,
    IndexError,
    KeyError,
    RuntimeError,
)


@dataclass(frozen=True)
class ArchiveLimits:
    """What an archive may hold.

    An archive of ``n`` bytes may inflate to ``max(expansion_floor_bytes,
    expansion_ratio * n)`` bytes in all, capped by ``max_total_bytes``: memory stays in
    proportion to the file, and a small file still holds whatever compresses well.
    """

    max_file_bytes: int = 8 * GiB
    max_total_bytes: int = 8 * GiB
    max_entries: int = 1 << 20
    expansion_ratio: int = 100
    expansion_floor_bytes: int = 64 * MiB

    def expansion_budget(self, file_bytes: int) -> int:
        """The bytes an archive of ``file_bytes`` may inflate to, over all its entries."""
        proportional = max(self.expansion_floor_bytes, self.expansion_ratio * file_bytes)
        return min(self.max_total_bytes, proportional)


DEFAULT_LIMITS = ArchiveLimits()


# -- reading ---------------------------------------------------------------------------


def open_archive(path: str | Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> ArchiveReader:
    """Open the zip archive at ``path`` for reading (use it as a context manager).

    Raises :class:`TraceFormatError` for anything but a regular file within the size
    limit holding a readable zip directory; ``OSError`` (``FileNotFoundError``,
    ``PermissionError``) when the file cannot be opened at all.
    """
    path = Path(path)
    file, file_bytes = _open_regular_file(path, limits)
    try:
        with _format_errors(
            f"{path} is not a luisa_nb trace: it cannot be read as a zip file",
            "pass a file written by Trace.save()",
        ):
            archive = zipfile.ZipFile(file)
        return ArchiveReader(path, file, archive, file_bytes, limits)
    except BaseException:
        file.close()
        raise


class ArchiveReader:
    """A zip archive opened by :func:`open_archive`; reads entries within its budget."""

    def __init__(
        self,
        path: Path,
        file: IO[bytes],
        archive: zipfile.ZipFile,
        file_bytes: int,
        limits: ArchiveLimits,
    ) -> None:
        self.path = path
        self.limits = limits
        self.budget_left = limits.expansion_budget(file_bytes)
        self._file = file
        self._archive = archive
        self._file_bytes = file_bytes
        infos = archive.infolist()
        if len(infos) > limits.max_entries:
            raise TraceFormatError(
                f"{path} holds {len(infos)} zip entries, more than the {limits.max_entries} "
                f"a trace may hold; {DAMAGED}"
            )
        self._entries = {info.filename: info for info in infos}
        if len(self._entries) != len(infos):
            counts = Counter(info.filename for info in infos)
            duplicates = sorted(name for name, count in counts.items() if count > 1)
            raise TraceFormatError(
                f"{path} holds several zip entries named {short_names(duplicates)}, "
                f"so it is ambiguous which to read; {DAMAGED}"
            )

    @property
    def names(self) -> list[str]:
        """The names of the entries, in archive order."""
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def read(self, name: str, max_bytes: int | None = None) -> bytearray:
        """The bytes of entry ``name``: at most ``max_bytes``, and at most what is left of
        the archive's budget, which the entry then uses up."""
        info = self._entries.get(name)
        where = self._where(name)
        if info is None:
            raise TraceFormatError(f"{self.path} lacks the zip entry {short_repr(name)}; {DAMAGED}")
        if info.flag_bits & _ENCRYPTED_FLAG:
            raise TraceFormatError(f"{where} is encrypted; traces never are, {DAMAGED}")
        if info.compress_type not in _READABLE_METHODS:
            raise TraceFormatError(
                f"{where} uses zip compression method {info.compress_type}, and traces use "
                f"only {' or '.join(_READABLE_METHODS.values())}; {DAMAGED}"
            )
        self._check_declared_size(info, where, max_bytes)
        with _format_errors(f"{where} cannot be read", DAMAGED):
            self._file.seek(self._data_offset(info, where))
            if info.compress_type == zipfile.ZIP_DEFLATED:
                data = self._inflate(info, where)
            else:
                data = self._copy_stored(info, where)
        if len(data) != info.file_size:
            raise TraceFormatError(
                f"{where} holds {len(data)} bytes but its header declares {info.file_size}; "
                f"{DAMAGED}"
            )
        if zlib.crc32(data) != info.CRC:
            raise TraceFormatError(f"{where} fails its CRC-32 check; {DAMAGED}")
        self.budget_left -= len(data)
        return data

    def read_json(
        self, name: str, max_bytes: int | None = None, max_depth: int = DEFAULT_JSON_DEPTH
    ) -> Any:
        """Entry ``name`` parsed as JSON (see :func:`parse_json`)."""
        return parse_json(self.read(name, max_bytes), self._where(name), max_depth)

    def read_npy(
        self,
        name: str,
        max_bytes: int | None = None,
        *,
        dtypes: Collection[np.dtype] | None = None,
        ndim: int | None = None,
    ) -> np.ndarray:
        """Entry ``name`` parsed as a ``.npy`` array (see :func:`parse_npy`)."""
        data = self.read(name, max_bytes)
        return parse_npy(data, self._where(name), dtypes=dtypes, ndim=ndim)

    def close(self) -> None:
        self._archive.close()
        self._file.close()

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _where(self, name: str) -> str:
        """The file and the entry, for error messages (odd names escaped)."""
        plain = name.isprintable() and len(name) <= 100
        return f"{self.path}: {name if plain else short_repr(name)}"

    def _check_declared_size(
        self, info: zipfile.ZipInfo, where: str, max_bytes: int | None
    ) -> None:
        if max_bytes is not None and info.file_size > max_bytes:
            raise TraceFormatError(
                f"{where} declares {info.file_size} bytes, more than the {max_bytes} such an "
                f"entry may hold; {DAMAGED}"
            )
        if info.file_size > self.budget_left:
            limits = self.limits
            raise TraceFormatError(
                f"{where} declares {info.file_size} bytes, more than is left of what this "
                f"{self._file_bytes}-byte file may inflate to in all "
                f"({limits.expansion_budget(self._file_bytes)} bytes: "
                f"{limits.expansion_ratio} times its size, at least "
                f"{limits.expansion_floor_bytes}, at most {limits.max_total_bytes}); it is "
                "damaged or a zip bomb, pass a file written by Trace.save()"
            )
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise TraceFormatError(
                f"{where} is stored uncompressed but declares {info.compress_size} bytes "
                f"stored for {info.file_size} bytes of data; {DAMAGED}"
            )

    def _data_offset(self, info: zipfile.ZipInfo, where: str) -> int:
        """Where the entry's data starts, after its local header."""
        self._file.seek(info.header_offset)
        header = self._file.read(_LOCAL_HEADER.size)
        if len(header) < _LOCAL_HEADER.size:
            raise TraceFormatError(f"{where}: the file ends inside its local header; {DAMAGED}")
        signature, name_length, extra_length = _LOCAL_HEADER.unpack(header)
        if signature != _LOCAL_HEADER_SIGNATURE:
            raise TraceFormatError(f"{where}: its local header is missing; {DAMAGED}")
        return info.header_offset + _LOCAL_HEADER.size + name_length + extra_length

    def _read_raw(self, wanted: int, where: str) -> bytes:
        chunk = self._file.read(min(READ_CHUNK_BYTES, wanted))
        if not chunk:
            raise TraceFormatError(f"{where}: the file ends inside its data; {DAMAGED}")
        return chunk

    def _copy_stored(self, info: zipfile.ZipInfo, where: str) -> bytearray:
        data = bytearray()
        while len(data) < info.file_size:
            data += self._read_raw(info.file_size - len(data), where)
        return data

    def _inflate(self, info: zipfile.ZipInfo, where: str) -> bytearray:
        """Inflate in chunks, never holding more than one chunk beyond the declared size."""
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        data = bytearray()
        compressed_left = info.compress_size
        pending = b""
        while not inflater.eof:
            if not pending:
                if compressed_left <= 0:
                    break
                pending = self._read_raw(compressed_left, where)
                compressed_left -= len(pending)
            data += inflater.decompress(pending, info.file_size - len(data) + 1)
            pending = inflater.unconsumed_tail
            if len(data) > info.file_size:
                raise TraceFormatError(
                    f"{where} inflates to more than the {info.file_size} bytes its header "
                    f"declares; {DAMAGED}"
                )
        if not inflater.eof:
            raise TraceFormatError(f"{where}: its compressed data ends early; {DAMAGED}")
        return data


def _open_regular_file(path: Path, limits: ArchiveLimits) -> tuple[IO[bytes], int]:
    """``path`` opened for binary reading, and its size; only regular files are opened.

    ``O_NONBLOCK`` keeps ``open`` from waiting for a FIFO's writer; the kind of file is
    then checked on the open descriptor, so it cannot change in between.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except (IsADirectoryError, PermissionError):
        if path.is_dir():
            raise TraceFormatError(
                f"{path} is a directory, not a trace file; pass a file written by Trace.save()"
            ) from None
        raise
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            kind = _FILE_KINDS.get(stat.S_IFMT(status.st_mode), "not a regular file")
            raise TraceFormatError(
                f"{path} is {kind}, not a trace file; pass a file written by Trace.save()"
            )
        if status.st_size > limits.max_file_bytes:
            raise TraceFormatError(
                f"{path} is {status.st_size} bytes, more than the {limits.max_file_bytes} a "
                "trace file may be; record less (capture='head' or 'none') and save again"
            )
        if flags & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb"), status.st_size
    except BaseException:
        os.close(descriptor)
        raise


@contextmanager
def _format_errors(problem: str, advice: str) -> Iterator[None]:
    """Turns what zipfile, zlib and the file system raise into TraceFormatError."""
    try:
        yield
    except TraceFormatError:
        raise
    except _ZIP_ERRORS as error:
        raise TraceFormatError(f"{problem} ({error_summary(error)}); {advice}") from error


# -- writing ---------------------------------------------------------------------------

EntryData = bytes | bytearray | typing.Sequence[bytes | bytearray | memoryview]


def write_archive(
    path: str | Path,
    entries: Callable[[], Iterable[tuple[str, EntryData]]],
    limits: ArchiveLimits = DEFAULT_LIMITS,
) -> Path:
    """Write the ``(name, data)`` pairs of ``entries()`` as a deflated zip, atomically;
    ``data`` is bytes, or chunks of bytes written one after the other (nothing joined).

    If the archive would inflate past its budget under ``limits`` (large constant data),
    ``entries()`` is called again and entries that deflate more than
    ``limits.expansion_ratio`` times are stored uncompressed, so :func:`open_archive`
    accepts every archive written here. Raises :class:`TraceError` for an archive too
    large for ``limits`` whatever its compression.
    """
    path = Path(path)
    with atomic_write(path) as file:
        infos = _write_zip(file, entries(), stored=frozenset())
        total = sum(info.file_size for info in infos)
        if total > limits.max_total_bytes or len(infos) > limits.max_entries:
            raise TraceError(
                f"cannot save {path}: it would hold {len(infos)} entries and {total} bytes, "
                f"more than the {limits.max_entries} entries and {limits.max_total_bytes} "
                "bytes a trace file may; record less (capture='head' or 'none')"
            )
        if total > limits.expansion_budget(file.tell()):
            stored = frozenset(
                info.filename
                for info in infos
                if info.file_size > limits.expansion_ratio * info.compress_size
            )
            file.seek(0)
            file.truncate()
            _write_zip(file, entries(), stored)
        if file.tell() > limits.max_file_bytes:
            raise TraceError(
                f"cannot save {path}: it would be {file.tell()} bytes, more than the "
                f"{limits.max_file_bytes} a trace file may; record less (capture='head' or "
                "'none')"
            )
    return path


def _write_zip(
    file: IO[bytes], entries: Iterable[tuple[str, EntryData]], stored: frozenset[str]
) -> list[zipfile.ZipInfo]:
    with zipfile.ZipFile(file, "w") as archive:
        for name, data in entries:
            if isinstance(data, bytes | bytearray):
                data = [data]
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            deflated = name not in stored and _worth_deflating(data)
            info.compress_type = zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED
            # ZipFile.open takes the level from the ZipInfo it is given, not the archive's
            setattr(info, _LEVEL_ATTRIBUTE, COMPRESS_LEVEL)
            with archive.open(info, "w", force_zip64=True) as entry:
                for chunk in data:
                    entry.write(chunk)
        return archive.infolist()


_LEVEL_ATTRIBUTE = (
    "compress_level" if "compress_level" in getattr(zipfile.ZipInfo, "__slots__", ()) else
    "_compresslevel"
)  # fmt: skip
"""The ZipInfo attribute of its compression level (Python 3.13 made it public)."""


def _worth_deflating(chunks: typing.Sequence[bytes | bytearray | memoryview]) -> bool:
    """Whether an entry of ``chunks`` deflates enough to be worth the time: an entry of
    more than :data:`SAMPLE_BYTES` is deflated only if its first :data:`SAMPLE_BYTES`
    deflate to :data:`WORTH_DEFLATING` of their size or less. Captured floats barely
    deflate (1.1:1 for a noisy sine) at 25-40 MB/s, so storing them saves a large
    trace most of its save time for a file about a tenth larger."""
    sample = bytearray()
    for chunk in chunks:
        sample += memoryview(chunk).cast("B")[: SAMPLE_BYTES + 1 - len(sample)]
        if len(sample) > SAMPLE_BYTES:
            break
    else:
        return True  # small: deflating costs little
    deflater = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    size = len(deflater.compress(sample)) + len(deflater.flush())
    return size <= WORTH_DEFLATING * len(sample)
