"""Zip archives: opening, bounded reading, and writing what reopens within the limits."""

from __future__ import annotations

import os
import struct
import tracemalloc
import zipfile
import zlib

import pytest

from luisa_nb.errors import TraceError, TraceFormatError
from luisa_nb.recording.archive import (
    COMPRESS_LEVEL,
    ArchiveLimits,
    open_archive,
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


# -- writing ---------------------------------------------------------------------------------


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


def test_write_archive_deflates_at_its_level_and_stores_what_barely_deflates(tmp_path):
    """Entries are deflated at COMPRESS_LEVEL (ZipFile.open ignores the archive's level for
    a ZipInfo: they were deflated at zlib's default 6); a large entry whose start barely
    deflates (random bytes, as captured floats nearly are) is stored, in chunks as given."""
    text = os.urandom(4 * MIB).hex().encode()
    noise = [os.urandom(MIB // 2) for _ in range(6)]
    entries = [("text", text), ("noise", noise), ("small noise", os.urandom(1000))]
    path = write_archive(tmp_path / "mixed.zip", lambda: iter(entries))
    with zipfile.ZipFile(path) as archive:
        infos = {info.filename: info for info in archive.infolist()}
    deflater = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    assert infos["text"].compress_size == len(deflater.compress(text) + deflater.flush())
    assert infos["noise"].compress_type == zipfile.ZIP_STORED
    assert infos["small noise"].compress_type == zipfile.ZIP_DEFLATED
    with open_archive(path) as archive:
        assert archive.read("noise") == b"".join(noise)
        assert archive.read("text") == text


def test_write_archive_refuses_what_no_reader_would_open(tmp_path):
    limits = ArchiveLimits(max_total_bytes=1000)
    with pytest.raises(TraceError, match=r"more than the \d+ entries and 1000 bytes"):
        write_archive(tmp_path / "big.zip", lambda: iter([("a", bytes(2000))]), limits)
    assert list(tmp_path.iterdir()) == []
