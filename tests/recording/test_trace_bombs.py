"""Files built to exhaust memory are refused in bounded memory (measured in a subprocess).

A 2 MiB deflate stream can inflate to 2 GiB of zeros. Whether the zip header declares
the 2 GiB (refused before inflating: the budget) or 1 MiB (refused after inflating just
past 1 MiB), and whether a small .npy header declares 2 GiB of elements (refused before
allocating), the loading process' peak memory must stay far below 2 GiB.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zipfile
import zlib

import pytest

resource = pytest.importorskip("resource", reason="ru_maxrss needs the resource module")

GIB = 1 << 30
MIB = 1 << 20
PEAK_LIMIT_MIB = 128
MEASURE = """
import json, resource, sys
import luisa_nb as lnb
from luisa_nb.errors import TraceFormatError

lnb.load_trace(sys.argv[1])  # a valid trace first: imports and caches are paid for here
results = {}
for path in sys.argv[2:]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        lnb.load_trace(path)
        outcome = "loaded"
    except TraceFormatError as error:
        outcome = str(error)
    except Exception as error:
        outcome = f"{type(error).__name__} (not a TraceFormatError): {error}"
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is in bytes there, else KiB
    results[path] = [outcome, (after - before) * scale / (1 << 20)]
print(json.dumps(results))
"""


def zeros_deflated(size: int) -> bytes:
    """A raw deflate stream of ``size`` zero bytes (a multiple of 16 MiB), made in
    milliseconds: after a full flush the compressor starts afresh, so one chunk's
    blocks can be repeated."""
    chunk = 16 * MIB
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    blocks = compressor.compress(bytes(chunk)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return blocks * (size // chunk) + compressor.flush()


def raw_zip(entries: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip of deflated entries ``(name, deflated bytes, declared size, crc)``, written
    by hand so that the declared sizes can lie."""
    body, directory = bytearray(), bytearray()
    for name, deflated, size, crc in entries:
        encoded = name.encode()
        sizes = struct.pack("<III", crc, len(deflated), size)
        directory += (
            struct.pack("<4sHHHHHH", b"PK\x01\x02", 20, 20, 0, 8, 0, 0)
            + sizes
            + struct.pack("<HHHHHII", len(encoded), 0, 0, 0, 0, 0, len(body))
            + encoded
        )
        body += struct.pack("<4sHHHHH", b"PK\x03\x04", 20, 0, 8, 0, 0) + sizes
        body += struct.pack("<HH", len(encoded), 0) + encoded + deflated
    end = struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(directory), len(body), 0
    )
    return bytes(body + directory + end)


def deflated_entry(name: str, data: bytes) -> tuple[str, bytes, int, int]:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return name, compressor.compress(data) + compressor.flush(), len(data), zlib.crc32(data)


@pytest.fixture
def bombs(sample_trace, tmp_path):
    valid = sample_trace.save(tmp_path / "valid.lnbtrace")
    with zipfile.ZipFile(valid) as archive:
        members = [deflated_entry(name, archive.read(name)) for name in archive.namelist()]
    header = b"{'descr': '|u1', 'fortran_order': False, 'shape': (%d,), }" % (2 * GIB)
    npy_header = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header
    zeros = zeros_deflated(2 * GIB)
    bomb = "blobs/data.npy"  # the captured bytes, which every load reads
    others = [member for member in members if member[0] != bomb]
    files = {
        "declares 2 GiB": [*others, (bomb, zeros, 2 * GIB, 0)],
        "declares 1 MiB": [*others, (bomb, zeros, MIB, 0)],
        "npy declares 2 GiB": [*others, deflated_entry(bomb, npy_header + bytes(64))],
    }
    paths = {}
    for name, entries in files.items():
        path = tmp_path / f"{name.replace(' ', '-')}.lnbtrace"
        path.write_bytes(raw_zip(entries))
        paths[name] = path
    return valid, paths


def test_bombs_are_refused_in_bounded_memory(bombs):
    valid, paths = bombs
    assert all(path.stat().st_size < 3 * MIB for path in paths.values())
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(valid), *map(str, paths.values())],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    results = json.loads(done.stdout)
    expected = {
        "declares 2 GiB": "declares 2147483648 bytes, more than is left of what this",
        "declares 1 MiB": "inflates to more than the 1048576 bytes its header declares",
        "npy declares 2 GiB": "declares shape (2147483648,) of uint8 (2147483648 bytes), but 64",
    }
    for name, path in paths.items():
        outcome, peak_increase_mib = results[str(path)]
        refused = expected[name] in outcome and peak_increase_mib < PEAK_LIMIT_MIB
        assert refused, (name, outcome, f"peak memory grew {peak_increase_mib:.0f} MiB")
