"""Damaged copies of a saved trace: each damage is a function of the file's bytes and a
seeded random generator, so a case names its file by damage and seed."""

from __future__ import annotations

import io
import json
import random
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

from .trace_samples import folder, saved_trace

DOCUMENT = "trace.json"


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _zipped(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    stream = io.BytesIO()
    with zipfile.ZipFile(stream, "w", compression=method) as archive:
        for name, content in members:
            archive.writestr(name, content)
    return stream.getvalue()


def _with_document(data: bytes, change: Callable[[dict], object]) -> bytes:
    members = _members(data)
    document = json.loads(members[DOCUMENT])
    members[DOCUMENT] = json.dumps(change(document)).encode()
    return _zipped(list(members.items()))


def _truncated(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))]


def _bit_flips(data: bytes, rng: random.Random) -> bytes:
    flipped = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        bit = rng.randrange(len(flipped) * 8)
        flipped[bit // 8] ^= 1 << (bit % 8)
    return bytes(flipped)


def _overwritten(data: bytes, rng: random.Random) -> bytes:
    start = rng.randrange(len(data))
    noise = rng.randbytes(rng.randint(1, 256))
    return data[:start] + noise + data[start + len(noise) :]


def _entry_replaced(data: bytes, rng: random.Random) -> bytes:
    members = _members(data)
    name = rng.choice(sorted(members))
    members[name] = rng.randbytes(rng.randint(0, 512))
    return _zipped(list(members.items()))


def _npy_header(data: bytes, rng: random.Random) -> bytes:
    members = _members(data)
    name = rng.choice(sorted(n for n in members if n.endswith(".npy")))
    shape = rng.choice(["(1099511627776,)", "(-1,)", "(4, 4, 4, 4)", "()", "(2**70,)"])
    dtype = rng.choice(["'<f4'", "'|O'", "'<U9'", "'V8'", "'<i8'"])
    header = f"{{'descr': {dtype}, 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    members[name] = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + b"\0" * 64
    return _zipped(list(members.items()))


def _bomb(data: bytes, rng: random.Random) -> bytes:
    """One entry replaced by zeros that inflate to 256 MiB or 1 GiB (a few hundred KiB in
    the file)."""
    members = _members(data)
    name = rng.choice([DOCUMENT, "commands/id.npy", "blobs/data.npy"])
    chunk = bytes(1 << 20)
    stream = io.BytesIO()
    with zipfile.ZipFile(stream, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for member, content in members.items():
            if member != name:
                archive.writestr(member, content)
        with archive.open(name, "w", force_zip64=True) as entry:
            for _ in range(rng.choice((256, 1024))):
                entry.write(chunk)
    return stream.getvalue()


def _version(data: bytes, rng: random.Random) -> bytes:
    version = rng.choice([0, 1, 3, 99, -1, "2", 2.5, None, 2**70])
    return _with_document(data, lambda document: {**document, "version": version})


def _format_name(data: bytes, rng: random.Random) -> bytes:
    name = rng.choice(["", "luisa_nb.trace2", None, ["luisa_nb.trace"], "LUISA_NB.TRACE"])
    return _with_document(data, lambda document: {**document, "format": name})


def _wrong_value(data: bytes, rng: random.Random) -> bytes:
    values = [None, -1, 2**70, 1e308, "x", [], {}, [[[]]], True, float("nan")]

    def change(document: dict) -> dict:
        key = rng.choice(sorted(document))
        return {**document, key: rng.choice(values)}

    return _with_document(data, change)


def _deep_nesting(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice((100, 10_000, 200_000))
    members = _members(data)
    members[DOCUMENT] = b"[" * depth + b"]" * depth
    return _zipped(list(members.items()))


def _missing_entry(data: bytes, rng: random.Random) -> bytes:
    members = _members(data)
    del members[rng.choice(sorted(members))]
    return _zipped(list(members.items()))


def _duplicate_entry(data: bytes, rng: random.Random) -> bytes:
    members = list(_members(data).items())
    name, _ = rng.choice(members)
    return _zipped([*members, (name, rng.randbytes(64))])


def _stored(data: bytes, rng: random.Random) -> bytes:
    members = _members(data)
    return _zipped(list(members.items()), zipfile.ZIP_STORED)


def _not_a_zip(data: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"", b"PK", b"PK\x05\x06" + bytes(18), rng.randbytes(4096), b"{}" * 9])


def _zip_in_zip(data: bytes, rng: random.Random) -> bytes:
    return _zipped([(DOCUMENT, data)])


DAMAGES: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "a truncation": _truncated,
    "bit flips": _bit_flips,
    "overwritten bytes": _overwritten,
    "an entry replaced by random bytes": _entry_replaced,
    "a hostile .npy header": _npy_header,
    "an entry inflating to hundreds of MiB": _bomb,
    "another version": _version,
    "another format name": _format_name,
    "a value of the wrong type": _wrong_value,
    "deep nesting": _deep_nesting,
    "an entry missing": _missing_entry,
    "an entry twice": _duplicate_entry,
    "entries stored uncompressed": _stored,
    "bytes that are no zip": _not_a_zip,
    "the trace zipped inside a zip": _zip_in_zip,
}


def damaged_copy(damage: str, seed: int) -> Path:
    """A file holding the sample trace with ``damage`` done with seed ``seed``."""
    data = DAMAGES[damage](saved_trace().read_bytes(), random.Random(seed))
    path = folder() / "damaged.lnbtrace"
    path.write_bytes(data)
    return path
