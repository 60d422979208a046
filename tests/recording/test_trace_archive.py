"""The archive primitives: opening, bounded reading, JSON, .npy and atomic writing."""

from __future__ import annotations

import io
import os
import struct
import time
import tracemalloc
import zipfile
from typing import Any, Literal, TypedDict

import numpy as np
import pytest

from luisa_nb.errors import TraceError, TraceFormatError
from luisa_nb.recording.archive import (
    ArchiveLimits,
    atomic_write,
    check_json,
    json_depth,
    open_archive,
    parse_json,
    parse_npy,
    write_archive,
)

MIB = 1 << 20


def write_zip(path, members, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return path


def patch_sizes(path, *, size=None, crc=None):
    """Overwrite the declared size or CRC of the only entry, in both of its headers."""
    data = bytearray(path.read_bytes())
    local, central = data.index(b"PK\x03\x04"), data.index(b"PK\x01\x02")
    for field, value in ((22, size), (14, crc)):
        if value is not None:
            struct.pack_into("<I", data, local + field, value)
            struct.pack_into("<I", data, central + field + 2, value)
    path.write_bytes(bytes(data))


def npy(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array, allow_pickle=False)
    return stream.getvalue()


# -- opening -------------------------------------------------------------------------------


def test_a_file_over_the_size_limit_is_refused(tmp_path):
    path = write_zip(tmp_path / "big.zip", [("a", bytes(1000))], zipfile.ZIP_STORED)
    with pytest.raises(TraceFormatError, match=r"big\.zip is \d+ bytes, more than the 100 a"):
        open_archive(path, ArchiveLimits(max_file_bytes=100))


def test_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        open_archive(tmp_path / "nothing.zip")


def test_duplicate_entries_are_ambiguous(tmp_path):
    path = tmp_path / "twice.zip"
    with pytest.warns(UserWarning, match="Duplicate name"):
        write_zip(path, [("a", b"1"), ("a", b"2")])
    with pytest.raises(TraceFormatError, match="several zip entries named 'a'"):
        open_archive(path)


def test_too_many_entries_are_refused(tmp_path):
    path = write_zip(tmp_path / "many.zip", [(str(n), b"") for n in range(3)])
    with pytest.raises(TraceFormatError, match="holds 3 zip entries, more than the 2"):
        open_archive(path, ArchiveLimits(max_entries=2))


# -- reading entries -------------------------------------------------------------------------


def test_entries_read_back(tmp_path):
    path = write_zip(tmp_path / "ok.zip", [("text", b"hello" * 100), ("empty", b"")])
    with open_archive(path) as archive:
        assert archive.names == ["text", "empty"] and "text" in archive
        assert archive.read("text") == b"hello" * 100 and archive.read("empty") == b""


def test_a_declared_size_over_the_limit_is_refused_before_inflating(tmp_path, monkeypatch):
    path = write_zip(tmp_path / "ok.zip", [("data", bytes(4096))])
    with open_archive(path) as archive:
        monkeypatch.setattr(archive, "_inflate", lambda *_: pytest.fail("inflated anyway"))
        with pytest.raises(TraceFormatError, match="declares 4096 bytes, more than the 4000"):
            archive.read("data", max_bytes=4000)


def test_an_entry_that_inflates_past_its_declared_size_stops_there(tmp_path):
    path = write_zip(tmp_path / "bomb.zip", [("data", bytes(64 * MIB))])
    patch_sizes(path, size=1000)
    tracemalloc.start()
    try:
        with (
            open_archive(path) as archive,
            pytest.raises(
                TraceFormatError, match="inflates to more than the 1000 bytes its header declares"
            ),
        ):
            archive.read("data")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MIB


def test_an_entry_shorter_than_declared_is_refused(tmp_path):
    path = write_zip(tmp_path / "short.zip", [("data", bytes(100))])
    patch_sizes(path, size=200)
    with (
        open_archive(path) as archive,
        pytest.raises(TraceFormatError, match="holds 100 bytes but its header declares 200"),
    ):
        archive.read("data")


def test_a_bad_crc_is_refused(tmp_path):
    path = write_zip(tmp_path / "crc.zip", [("data", b"payload")])
    patch_sizes(path, crc=1234)
    with open_archive(path) as archive, pytest.raises(TraceFormatError, match="CRC-32"):
        archive.read("data")


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA], ids=["bzip2", "lzma"])
def test_other_compression_methods_are_refused(tmp_path, method):
    path = write_zip(tmp_path / "other.zip", [("data", bytes(100))], method)
    with (
        open_archive(path) as archive,
        pytest.raises(
            TraceFormatError, match=f"compression method {method}, and traces use only stored or"
        ),
    ):
        archive.read("data")


def test_encrypted_entries_are_refused(tmp_path):
    path = write_zip(tmp_path / "secret.zip", [("data", b"x")])
    data = bytearray(path.read_bytes())
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        offset = data.index(signature) + flags_at
        data[offset] |= 1
    path.write_bytes(bytes(data))
    with open_archive(path) as archive, pytest.raises(TraceFormatError, match="is encrypted"):
        archive.read("data")


def test_entries_share_a_budget_in_proportion_to_the_file(tmp_path):
    limits = ArchiveLimits(expansion_ratio=1, expansion_floor_bytes=0)
    noise = os.urandom(3000)
    path = write_zip(tmp_path / "budget.zip", [("noise", noise), ("zeros", bytes(3000))])
    assert 3000 < limits.expansion_budget(path.stat().st_size) < 6000
    with open_archive(path, limits) as archive:
        assert archive.read("noise") == noise
        with pytest.raises(TraceFormatError, match="more than is left of what this"):
            archive.read("zeros")


def test_the_budget_has_a_floor_and_a_cap():
    limits = ArchiveLimits(expansion_ratio=100, expansion_floor_bytes=1000, max_total_bytes=5000)
    assert [limits.expansion_budget(size) for size in (0, 20, 40, 100)] == [1000, 2000, 4000, 5000]


# -- JSON ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, depth",
    [
        (b"1", 0),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'["[[[", "]]", {"x": "\\"[["}]', 2),
        (b'["\\\\", [[]]]', 3),
        (b"[" * 1000, 1000),
    ],
)
def test_json_depth_ignores_brackets_in_strings(text, depth):
    assert json_depth(text) == depth


def test_deep_json_is_refused_without_recursion():
    with pytest.raises(TraceFormatError, match="nests 100000 levels of arrays and objects"):
        parse_json(b"[" * 100_000 + b"]" * 100_000, "doc.json")


def test_scanning_unterminated_strings_stays_linear():
    started = time.perf_counter()
    with pytest.raises(TraceFormatError, match="not valid JSON"):
        parse_json(b'"\\"' * 300_000, "doc.json")
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize(
    "text, problem",
    [(b"\xff\xfe", "not valid JSON"), (b"[" + b"9" * 5000 + b"]", "not valid JSON"), (b"", "")],
)
def test_text_that_is_not_json_is_refused(text, problem):
    with pytest.raises(TraceFormatError, match=f"doc.json is {problem or 'not valid JSON'}"):
        parse_json(text, "doc.json")


class Range(TypedDict):
    start: int
    kind: Literal["read", "write"]


class Table(TypedDict, total=False):
    name: str
    ranges: list[Range]
    shape: tuple[int, ...]
    extra: dict[str, float | None]


def test_check_json_accepts_values_that_fit():
    value = {"name": "x", "ranges": [{"start": 2**63 - 1, "kind": "read"}], "extra": {"a": 1}}
    check_json(value, Table, where="doc.json")
    check_json({"shape": [1, 2], "extra": {"b": None, "c": 0.5}}, Table, where="doc.json")
    check_json([1, "x", None], list[Any], where="doc.json")


@pytest.mark.parametrize(
    "value, message",
    [
        (
            {"ranges": [{"start": 1, "kind": "read"}, {"start": "2", "kind": "read"}]},
            r"doc\.json: ranges\[1\]\.start holds '2' where int is expected",
        ),
        (
            {"ranges": [{"start": 2**63, "kind": "read"}]},
            r"ranges\[0\]\.start holds 9223372036854775808 where an int that fits in 64 bits",
        ),
        ({"ranges": [{"start": 1, "kind": "swap"}]}, r"kind holds 'swap' where one of 'read', "),
        ({"ranges": [{"start": True, "kind": "read"}]}, r"start holds True where int is"),
        ({"ranges": [{"start": 1}]}, r"ranges\[0\] lacks field\(s\) 'kind'"),
        ({"name": "x", "colour": 1}, r"doc\.json has unknown field\(s\) 'colour'; the file was"),
        ({"shape": [1, [2]]}, r"shape\[1\] holds an array of 1 items where int is expected"),
        ({"extra": {"a b": "1"}}, r"extra\['a b'\] holds '1' where float is expected"),
        (
            {"name": "x" * 5000, "ranges": [{"start": "9" * 5000, "kind": "read"}]},
            r"start holds '9999.*\.\.\. where",
        ),
        ([], r"doc\.json holds an array of 0 items where an object is expected"),
    ],
)
def test_check_json_names_the_path_of_the_bad_value(value, message):
    with pytest.raises(TraceFormatError, match=message) as caught:
        check_json(value, Table, where="doc.json")
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


# -- .npy ------------------------------------------------------------------------------------


def test_npy_arrays_read_back_as_writable_views():
    data = bytearray(npy(np.arange(12, dtype="<i4").reshape(3, 4)))
    array = parse_npy(data, "a.npy")
    np.testing.assert_array_equal(array, np.arange(12).reshape(3, 4))
    assert array.flags.writeable
    fortran = parse_npy(bytearray(npy(np.asfortranarray(np.arange(6.0).reshape(2, 3)))), "f.npy")
    np.testing.assert_array_equal(fortran, np.arange(6.0).reshape(2, 3))
    assert parse_npy(npy(np.zeros(0, np.uint8)), "e.npy").shape == (0,)


def header(text: str, version=(1, 0)) -> bytes:
    encoded = text.encode("latin1")
    length = struct.pack("<H" if version == (1, 0) else "<I", len(encoded))
    return b"\x93NUMPY" + bytes(version) + length + encoded


@pytest.mark.parametrize(
    "data, message",
    [
        (
            header("{'descr': '|u1', 'fortran_order': False, 'shape': (1073741824,), }") + b"ab",
            r"declares shape \(1073741824,\) of uint8 \(1073741824 bytes\), but 2 bytes follow",
        ),
        (npy(np.zeros(3, np.uint8)) + b"x", r"declares shape \(3,\) .* but 4 bytes follow"),
        (npy(np.zeros(3, np.uint8))[:-1], r"but 2 bytes follow"),
        (header("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"), "Python objects"),
        (header("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (), }"), "not a pl"),
        (header("{'descr': '|V0', 'fortran_order': False, 'shape': (1,), }"), "not a plain one"),
        (header("{'descr': '|u1', 'fortran_order': False, 'shape': (-1,), }"), r"shape \(-1,\)"),
        (header("{'descr': '|u1', 'fortran_order': 0, 'shape': (1,), }"), "fortran_order"),
        (header("{'descr': '|u1', 'shape': " + "(" * 500 + ")" * 500 + "}"), "not a plain .npy"),
        (header("{}", (3, 0)), "version 3.0 .npy file"),
        (b"\x93NUMPY\x01\x00\xff\xff{", "not a plain .npy array"),
        (b"PK\x03\x04", "not a plain .npy array"),
    ],
)
def test_bad_npy_data_is_refused_before_allocating(data, message):
    tracemalloc.start()
    try:
        with pytest.raises(TraceFormatError, match=message) as caught:
            parse_npy(data, "blob.npy")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MIB and "\n" not in str(caught.value)


def test_npy_dtype_and_dimensions_can_be_required():
    data = npy(np.zeros((2, 2), np.float64))
    with pytest.raises(TraceFormatError, match="holds float64 values, not uint8"):
        parse_npy(data, "blob.npy", dtypes=[np.dtype(np.uint8)])
    with pytest.raises(TraceFormatError, match=r"declares shape \(2, 2\), not 1-D"):
        parse_npy(data, "blob.npy", ndim=1)


# -- writing ---------------------------------------------------------------------------------


def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "file.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="half-way"), atomic_write(target) as file:
        file.write(b"new but unfinished")
        raise RuntimeError("half-way")
    assert target.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [target]
    with atomic_write(target) as file:
        file.write(b"new")
    assert target.read_bytes() == b"new" and sorted(tmp_path.iterdir()) == [target]


def test_write_archive_stores_constant_data_it_cannot_deflate_within_the_budget(tmp_path):
    limits = ArchiveLimits(expansion_ratio=10, expansion_floor_bytes=64 * 1024)
    entries = [("zeros", bytes(MIB)), ("text", os.urandom(2000).hex().encode())]
    path = write_archive(tmp_path / "big.zip", lambda: iter(entries), limits)
    with zipfile.ZipFile(path) as archive:
        methods = {info.filename: info.compress_type for info in archive.infolist()}
    assert methods == {"zeros": zipfile.ZIP_STORED, "text": zipfile.ZIP_DEFLATED}
    with open_archive(path, limits) as archive:
        assert archive.read("zeros") == bytes(MIB)
    small = write_archive(tmp_path / "small.zip", lambda: iter(entries[1:]), limits)
    with zipfile.ZipFile(small) as archive:
        assert archive.getinfo("text").compress_type == zipfile.ZIP_DEFLATED


def test_write_archive_refuses_what_no_reader_would_open(tmp_path):
    limits = ArchiveLimits(max_total_bytes=1000)
    with pytest.raises(TraceError, match=r"more than the \d+ entries and 1000 bytes"):
        write_archive(tmp_path / "big.zip", lambda: iter([("a", bytes(2000))]), limits)
    assert list(tmp_path.iterdir()) == []
