"""Trace files as zip archives, read as hostile input and written atomically.

Nothing here knows what a trace holds: these are the primitives a layout is built on.

- :func:`open_archive` opens only regular files (never blocking on a FIFO or reading
  ``/dev/zero`` forever), checks the file's size, and turns every way the zip can be
  damaged into :class:`~luisa_nb.errors.TraceFormatError`.
- :meth:`ArchiveReader.read` inflates one entry in chunks and stops as soon as it holds
  more bytes than its header declares, so declared sizes are never trusted; sizes are
  checked against the caller's limit and against the archive's budget before anything
  is inflated.
- :func:`parse_json` checks nesting depth before parsing, :func:`check_json` checks a
  parsed value against a type and names the path of the first bad value.
- :func:`parse_npy` reads a ``.npy`` header, checks dtype, shape and the bytes actually
  present, and only then makes an array (a view of the bytes read: nothing is copied,
  nothing is unpickled).
- :func:`atomic_write` and :func:`write_archive` write a temporary file beside the
  target, fsync it and rename it over the target, so a failed save leaves no partial
  file and the previous file untouched.

The budget: an archive of ``n`` bytes may inflate to ``max(64 MiB, 100 * n)`` bytes in
all (and never more than 8 GiB). DEFLATE cannot exceed about 1032:1, so the bound is a
real one; traces reach 5-20:1 (JSON) and 1-50:1 (captured data), and only constant data
such as zeros compresses further. :func:`write_archive` stores such entries uncompressed
when it has to, so every archive it writes opens with the limits it was written with.
"""

from __future__ import annotations

import io
import json
import math
import os
import secrets
import stat
import struct
import tokenize
import types
import typing
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.lib import format as npy_format

from luisa_nb.errors import TraceError, TraceFormatError

MiB = 1 << 20
GiB = 1 << 30
DAMAGED = "the file is damaged or was not written by luisa_nb; save the trace again"
READ_CHUNK_BYTES = MiB
COMPRESS_LEVEL = 1
"""zlib level 1: columns of times and ids deflate nearly as well as at 6, several
times faster."""
DEFAULT_JSON_DEPTH = 64
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

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
# Magic, version and length, then a header of at most 10000 bytes (numpy's default limit).
_NPY_HEADER_WINDOW = 16 * 1024
_NPY_HEADER_ERRORS = (ValueError, TypeError, SyntaxError, OverflowError, tokenize.TokenError)
_QUOTE = ord('"')
# +1 for an opening bracket, -1 for a closing one, 0 for any other byte.
_BRACKET_STEPS = np.zeros(256, np.int8)
_BRACKET_STEPS[list(b"[{")] = 1
_BRACKET_STEPS[list(b"]}")] = -1


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


def error_summary(error: BaseException) -> str:
    """The first line of ``error``'s message, short enough for one error line."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


# -- JSON ------------------------------------------------------------------------------


def json_depth(data: bytes | bytearray) -> int:
    """The deepest nesting of arrays and objects in JSON text, found without parsing.

    Brackets inside strings do not count: with escaped backslashes and quotes removed,
    a bracket is inside a string when an odd number of quotes precede it. On text that
    is not JSON the result may be too high, never lower than the depth a parser reaches
    before it fails.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    codes = np.frombuffer(data, np.uint8)
    deepest = depth = 0
    in_string = False
    for start in range(0, codes.size, READ_CHUNK_BYTES):
        chunk = codes[start : start + READ_CHUNK_BYTES]
        quotes = np.flatnonzero(chunk == _QUOTE)
        brackets = np.flatnonzero(_BRACKET_STEPS[chunk])
        outside = (np.searchsorted(quotes, brackets) + in_string) % 2 == 0
        steps = _BRACKET_STEPS[chunk[brackets[outside]]]
        if steps.size:
            levels = np.cumsum(steps, dtype=np.int64) + depth
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
        in_string ^= bool(quotes.size % 2)
    return deepest


def parse_json(data: bytes | bytearray, where: str, max_depth: int = DEFAULT_JSON_DEPTH) -> Any:
    """``data`` (UTF-8 JSON) parsed; TraceFormatError if it is not JSON or nests deeper
    than ``max_depth`` arrays and objects (so parsing cannot exhaust the stack)."""
    depth = json_depth(data)
    if depth > max_depth:
        raise TraceFormatError(
            f"{where} nests {depth} levels of arrays and objects, more than the {max_depth} "
            f"a trace document may; {DAMAGED}"
        )
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as error:
        raise TraceFormatError(
            f"{where} is not valid JSON ({error_summary(error)}); {DAMAGED}"
        ) from None


def member_path(path: str, key: str | int) -> str:
    """The path of ``key`` inside the value at ``path``: ``a.b``, ``a[3]``, ``a['x y']``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{short_repr(key, 40)}]"


def check_json(value: Any, expected: Any, *, where: str, path: str = "") -> None:
    """Check a parsed JSON ``value`` against the type ``expected``; raise TraceFormatError
    naming the path of the first value that does not fit.

    ``expected`` is written as a type hint: ``int`` (which must fit in 64 bits),
    ``float`` (a float, or such an int), ``str``, ``bool``, ``None``, ``Any``,
    ``Literal[...]``, unions, ``list[T]``, ``tuple[T, ...]`` and ``tuple[A, B]`` (JSON
    arrays), ``dict[str, T]``, and ``TypedDict`` classes (objects with exactly those
    keys; ``total=False`` makes keys optional).
    """
    if expected is Any:
        return
    if expected is int:
        fits = type(value) is int
        if fits and not INT64_MIN <= value <= INT64_MAX:
            _mismatch(value, "an int that fits in 64 bits", where, path)
    elif expected is str or expected is bool:
        fits = type(value) is expected
    elif expected is float:
        fits = type(value) is float or (type(value) is int and INT64_MIN <= value <= INT64_MAX)
    elif expected is None or expected is type(None):
        fits = value is None
    else:
        _check_composite(value, expected, where, path)
        return
    if not fits:
        _mismatch(value, json_type_name(expected), where, path)


@cache
def _hint_parts(expected: Any) -> tuple[Any, tuple[Any, ...]]:
    """``expected``'s origin and arguments (``typing`` takes microseconds to find them)."""
    return typing.get_origin(expected), typing.get_args(expected)


def _check_composite(value: Any, expected: Any, where: str, path: str) -> None:
    origin, arguments = _hint_parts(expected)
    if origin is typing.Literal:
        if not any(type(value) is type(option) and value == option for option in arguments):
            _mismatch(value, json_type_name(expected), where, path)
    elif origin in (typing.Union, types.UnionType):
        _check_union(value, arguments, where, path)
    elif origin in (list, tuple) and isinstance(value, list):
        _check_array(value, origin, arguments, where, path)
    elif origin is dict and isinstance(value, dict):
        item_type = arguments[1] if arguments else Any
        if item_type is not Any:
            for key, item in value.items():
                check_json(item, item_type, where=where, path=member_path(path, key))
    elif typing.is_typeddict(expected) and isinstance(value, dict):
        _check_object(value, expected, where, path)
    else:
        _mismatch(value, json_type_name(expected), where, path)


def json_type_name(expected: Any) -> str:
    """``expected`` (a hint accepted by :func:`check_json`) in words."""
    origin = typing.get_origin(expected)
    arguments = typing.get_args(expected)
    if expected is None or expected is type(None):
        return "null"
    if origin is typing.Literal:
        return "one of " + ", ".join(map(repr, arguments))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(json_type_name(option) for option in arguments)
    if origin in (list, tuple):
        return "an array"
    if origin is dict or typing.is_typeddict(expected):
        return "an object"
    return getattr(expected, "__name__", str(expected))


def _check_union(value: Any, options: tuple[Any, ...], where: str, path: str) -> None:
    if value is None and type(None) in options:
        return
    candidates = [option for option in options if option is not type(None)]
    if len(candidates) == 1:
        check_json(value, candidates[0], where=where, path=path)
        return
    for option in candidates:
        try:
            check_json(value, option, where=where, path=path)
            return
        except TraceFormatError:
            continue
    _mismatch(value, " or ".join(map(json_type_name, options)), where, path)


def _check_array(value: list, origin: type, arguments: tuple, where: str, path: str) -> None:
    if origin is tuple and arguments and arguments[-1] is not Ellipsis:
        if len(value) != len(arguments):
            _mismatch(value, f"an array of {len(arguments)} items", where, path)
        item_types = arguments
    elif not arguments or arguments[0] is Any:
        return
    else:
        item_types = [arguments[0]] * len(value)
    for index, (item, item_type) in enumerate(zip(value, item_types, strict=True)):
        check_json(item, item_type, where=where, path=member_path(path, index))


@cache
def _typed_dict_hints(expected: Any) -> dict[str, Any]:
    return typing.get_type_hints(expected)


def _check_object(value: dict, expected: Any, where: str, path: str) -> None:
    hints = _typed_dict_hints(expected)
    location = f"{where}: {path}" if path else where
    unknown = sorted(set(value) - set(hints))
    if unknown:
        raise TraceFormatError(
            f"{location} has unknown field(s) {short_names(unknown)}; the file was written by a "
            "newer or different luisa_nb, upgrade to open it"
        )
    missing = sorted(set(expected.__required_keys__) - set(value))
    if missing:
        raise TraceFormatError(f"{location} lacks field(s) {short_names(missing)}; {DAMAGED}")
    for key, item in value.items():
        check_json(item, hints[key], where=where, path=member_path(path, key))


def _mismatch(value: Any, expected: str, where: str, path: str) -> typing.NoReturn:
    location = f"{where}: {path}" if path else where
    raise TraceFormatError(
        f"{location} holds {short_repr(value)} where {expected} is expected; {DAMAGED}"
    )


def short_repr(value: Any, limit: int = 60) -> str:
    """A repr of ``value`` (from a file) for an error line: escaped, and cut to about
    ``limit`` characters without building the repr of a huge value first."""
    if isinstance(value, (list, dict)):
        return f"{'an array' if isinstance(value, list) else 'an object'} of {len(value)} items"
    if type(value) is int and value.bit_length() > 4 * limit:
        return f"an int of {value.bit_length()} bits"
    text = repr(value[: limit + 1] if isinstance(value, str) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short_names(names: Collection[Any], limit: int = 5) -> str:
    """``names`` (from a file) for an error line: at most ``limit``, each short."""
    shown = ", ".join(short_repr(name, 40) for name in list(names)[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


# -- .npy ------------------------------------------------------------------------------


def parse_npy(
    data: bytes | bytearray,
    where: str,
    *,
    dtypes: Collection[np.dtype] | None = None,
    ndim: int | None = None,
) -> np.ndarray:
    """The array in ``.npy`` bytes ``data``, checked before anything is allocated.

    Plain numeric arrays only: no object dtype (no pickles), no structured or subarray
    dtypes, and, when given, one of ``dtypes`` with ``ndim`` dimensions. The header's
    shape times the item size must equal the bytes that follow it. The array is a view
    of ``data`` (writable when ``data`` is a bytearray).
    """
    header = io.BytesIO(bytes(memoryview(data)[:_NPY_HEADER_WINDOW]))
    try:
        version = npy_format.read_magic(header)
        if version == (1, 0):
            shape, fortran_order, dtype = npy_format.read_array_header_1_0(header)
        elif version == (2, 0):
            shape, fortran_order, dtype = npy_format.read_array_header_2_0(header)
        else:
            raise TraceFormatError(
                f"{where} is a version {version[0]}.{version[1]} .npy file; traces hold "
                f"versions 1.0 and 2.0 only, {DAMAGED}"
            )
    except TraceFormatError:
        raise
    except _NPY_HEADER_ERRORS as error:
        raise TraceFormatError(
            f"{where} is not a plain .npy array ({error_summary(error)}); {DAMAGED}"
        ) from None
    _check_npy_dtype(dtype, where, dtypes)
    if any(extent < 0 for extent in shape) or (ndim is not None and len(shape) != ndim):
        wanted = "" if ndim is None else f", not {ndim}-D"
        raise TraceFormatError(f"{where} declares shape {shape}{wanted}; {DAMAGED}")
    count = math.prod(shape)
    present = len(data) - header.tell()
    if count * dtype.itemsize != present:
        raise TraceFormatError(
            f"{where} declares shape {shape} of {dtype} ({count * dtype.itemsize} bytes), but "
            f"{present} bytes follow its header; {DAMAGED}"
        )
    array = np.frombuffer(data, dtype=dtype, count=count, offset=header.tell())
    if fortran_order:
        return array.reshape(shape[::-1]).transpose()
    return array.reshape(shape)


def _check_npy_dtype(dtype: np.dtype, where: str, dtypes: Collection[np.dtype] | None) -> None:
    if dtype.hasobject:
        raise TraceFormatError(
            f"{where} holds Python objects (pickled data), which traces never hold and which "
            "would run code when loaded; pass a file written by Trace.save()"
        )
    if dtype.names is not None or dtype.subdtype is not None or dtype.itemsize == 0:
        raise TraceFormatError(f"{where} has dtype {dtype}, not a plain one; {DAMAGED}")
    if dtypes is not None and dtype not in dtypes:
        allowed = ", ".join(str(np.dtype(option)) for option in dtypes)
        raise TraceFormatError(f"{where} holds {dtype} values, not {allowed}; {DAMAGED}")


# -- writing ---------------------------------------------------------------------------

EntryData = bytes | bytearray | typing.Sequence[bytes | bytearray | memoryview]


@contextmanager
def atomic_write(path: str | Path) -> Iterator[IO[bytes]]:
    """A binary file that replaces ``path`` when the block ends without an error.

    It is written beside ``path`` (so the final rename stays on one file system),
    fsynced, then renamed over ``path``. On any error it is removed and ``path`` is left
    as it was. The new file gets the mode an existing file had, else the umask's.
    """
    target = Path(os.path.realpath(path))
    descriptor, temporary = _create_temporary(target)
    try:
        with os.fdopen(descriptor, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        with suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _sync_folder(target.parent)


def _create_temporary(target: Path) -> tuple[int, Path]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; a no-op where folders cannot be
    opened or synced)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


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
    with zipfile.ZipFile(file, "w", compresslevel=COMPRESS_LEVEL) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED
            if isinstance(data, bytes | bytearray):
                data = [data]
            with archive.open(info, "w", force_zip64=True) as entry:
                for chunk in data:
                    entry.write(chunk)
        return archive.infolist()
