"""Fuzzing trace files: whatever a file holds, loading it either gives a trace that the
analysis, the report and the Chrome export can use, or raises TraceFormatError, within
a few seconds.

Each test mutates saved traces one way (truncation, bit flips, entries replaced, JSON
values of the wrong type, deep nesting, huge declared sizes in zip and .npy headers,
missing and extra entries, non-zip bytes). ``LUISA_NB_FUZZ_EXAMPLES`` sets the number of
examples per test (default 30); see docs/testing.md.
"""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import luisa_nb as lnb
from luisa_nb.errors import TraceFormatError
from luisa_nb.report import report_html

EXAMPLES = int(os.environ.get("LUISA_NB_FUZZ_EXAMPLES", "30"))
LOAD_SECONDS = 5.0
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
BASES = ("sample", "recorded")
INTERESTING_STRINGS = ("", "<f4", "|u1", "|b1", "|O", "V0", "<U3", "<c8", "submit", "ok", "upload")
BOUNDARY_INTEGERS = (0, -1, 1, 2**31, 2**32 - 1, 2**63 - 1, -(2**63), 2**63, 2**64, 10**40)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(BOUNDARY_INTEGERS)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(INTERESTING_STRINGS)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


LOAD_ONE = """
import json, sys
import luisa_nb as lnb
from luisa_nb.errors import TraceFormatError

try:
    lnb.load_trace(sys.argv[1])
    outcome = "loaded"
except TraceFormatError as error:
    outcome = str(error)
except Exception as error:
    outcome = f"{type(error).__name__} (not a TraceFormatError): {error}"
print(json.dumps(outcome))
"""


class LoadTimeout(BaseException):
    """Raised inside a load that runs too long (a BaseException, so no ``except Exception``
    in the code under test can swallow it)."""


@contextmanager
def time_limit(seconds: float):
    """Interrupt the block after ``seconds`` where SIGALRM exists (a hang fails the test
    instead of stalling the run)."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def expire(signum, frame):
        raise LoadTimeout(f"loading took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assert_loads_or_rejects(path: Path) -> None:
    """Load ``path``: a TraceFormatError (one line, naming the file and what to do) or a
    trace that analyses, reports and exports, all within LOAD_SECONDS."""
    started = time.perf_counter()
    with time_limit(2 * LOAD_SECONDS):
        try:
            trace = lnb.load_trace(path)
        except TraceFormatError as error:
            message = str(error)
            assert "\n" not in message and str(path) in message and "; " in message, message
            event("rejected")
        else:
            report_html(trace)
            trace.to_chrome_trace()
            event("loaded")
    elapsed = time.perf_counter() - started
    assert elapsed < LOAD_SECONDS, f"loading {path} took {elapsed:.1f} s"


def write_case(folder: Path, data: bytes) -> Path:
    path = folder / "case.lnbtrace"
    path.write_bytes(data)
    return path


def zip_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def zip_bytes(members, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip of ``(name, bytes)`` pairs (a list, so names may repeat)."""
    stream = io.BytesIO()
    with zipfile.ZipFile(stream, "w", compression=compression) as archive:
        for name, content in members:
            archive.writestr(name, content)
    return stream.getvalue()


def json_paths(value, path=()):
    """Every path into a JSON value (tuples of keys and indices)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from json_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_paths(item, (*path, index))


def npy_bytes(header: str, version: tuple[int, int], payload: bytes, length=None) -> bytes:
    """A .npy file with ``header`` text; ``length`` overrides the header length field."""
    encoded = header.encode("latin1")
    length_format = "<H" if version == (1, 0) else "<I"
    length = len(encoded) if length is None else length % (1 << 8 * struct.calcsize(length_format))
    return b"\x93NUMPY" + bytes(version) + struct.pack(length_format, length) + encoded + payload


def central_directory(data: bytes) -> tuple[int, list[int]]:
    """The end-of-central-directory offset and the offsets of the central entries."""
    end = data.rfind(b"PK\x05\x06")
    count, _, start = struct.unpack_from("<HII", data, end + 10)
    offsets = []
    for _ in range(count):
        offsets.append(start)
        name, extra, comment = struct.unpack_from("<HHH", data, start + 28)
        start += 46 + name + extra + comment
    return end, offsets


class SavedTraces(dict):
    """File bytes by base name; a short repr keeps Hypothesis' reports readable."""

    def __repr__(self) -> str:
        return f"<saved traces {', '.join(self)}>"


@pytest.fixture(scope="module")
def saved_traces(make_sample_trace, tmp_path_factory) -> SavedTraces:
    """The bytes of two saved traces: the sample with every record type, and one recorded
    through the public API (uploads, a download, a copy and a fill, captured in full)."""
    folder = tmp_path_factory.mktemp("fuzz-bases")
    make_sample_trace().save(folder / "sample.lnbtrace")
    device = lnb.create_device("cpu", staging="submit")
    z = device.create_buffer(1024, np.float32)
    x = device.create_buffer(1024, np.float32)
    z_data = np.full(1024, 123.0, np.float32)
    with lnb.trace(capture="full") as recorded:
        device.default_stream.submit(
            [
                z.copy_from_async(z_data),
                z.copy_to_async(z_data),
                z.copy_from_async(z_data),
                z.copy_to_buffer_async(x),
            ]
        )
        device.default_stream.synchronize()
        x.fill(2.0, sync=True)
    recorded.save(folder / "recorded.lnbtrace")
    return SavedTraces({name: (folder / f"{name}.lnbtrace").read_bytes() for name in BASES})


@pytest.fixture(scope="module")
def case_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz-cases")


def test_the_bases_load(saved_traces, case_folder):
    for data in saved_traces.values():
        trace = lnb.load_trace(write_case(case_folder, data))
        assert trace.records and trace.blobs


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_truncated_files(saved_traces, case_folder, base, data):
    original = saved_traces[base]
    length = data.draw(st.integers(0, len(original) - 1), label="length")
    assert_loads_or_rejects(write_case(case_folder, original[:length]))


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_bit_flips(saved_traces, case_folder, base, data):
    flipped = bytearray(saved_traces[base])
    bits = st.integers(0, len(flipped) * 8 - 1)
    for bit in data.draw(st.lists(bits, min_size=1, max_size=8), label="bits"):
        flipped[bit // 8] ^= 1 << (bit % 8)
    assert_loads_or_rejects(write_case(case_folder, bytes(flipped)))


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_overwritten_byte_ranges(saved_traces, case_folder, base, data):
    damaged = bytearray(saved_traces[base])
    start = data.draw(st.integers(0, len(damaged) - 1), label="start")
    noise = data.draw(st.binary(min_size=1, max_size=64), label="noise")
    damaged[start : start + len(noise)] = noise
    assert_loads_or_rejects(write_case(case_folder, bytes(damaged)))


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_entries_replaced_by_random_bytes(saved_traces, case_folder, base, data):
    members = zip_members(saved_traces[base])
    name = data.draw(st.sampled_from(sorted(members)), label="entry")
    members[name] = data.draw(st.binary(max_size=2048), label="content")
    method = data.draw(
        st.sampled_from(
            [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
        ),
        label="compression",
    )
    assert_loads_or_rejects(write_case(case_folder, zip_bytes(members.items(), method)))


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_documents_with_wrong_values(saved_traces, case_folder, base, data):
    members = zip_members(saved_traces[base])
    document = json.loads(members["trace.json"])
    path = data.draw(st.sampled_from(list(json_paths(document))[1:]), label="path")
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    edit = data.draw(st.sampled_from(["replace", "delete", "add"]), label="edit")
    if edit == "replace":
        parent[path[-1]] = data.draw(json_values, label="value")
    elif edit == "delete":
        del parent[path[-1]]
    elif isinstance(parent[path[-1]], dict):
        parent[path[-1]][data.draw(st.text(max_size=8), label="key")] = data.draw(json_values)
    else:
        parent[path[-1]] = [parent[path[-1]]]
    members["trace.json"] = json.dumps(document).encode()
    assert_loads_or_rejects(write_case(case_folder, zip_bytes(members.items())))


@FUZZ
@given(
    base=st.sampled_from(BASES),
    depth=st.integers(50, 200_000),
    opening=st.sampled_from(["[", '{"a":', "[1,"]),
    closed=st.booleans(),
    data=st.data(),
)
def test_deep_nesting(saved_traces, case_folder, base, depth, opening, closed, data):
    members = zip_members(saved_traces[base])
    document = json.loads(members["trace.json"])
    path = data.draw(st.sampled_from(list(json_paths(document))), label="path")
    closing = {"[": "]", '{"a":': "}", "[1,": "]"}[opening]
    nested = opening * depth + "0" + (closing * depth if closed else "")
    marker = "__nested__"
    if path:
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = marker
        text = json.dumps(document).replace(f'"{marker}"', nested)
    else:
        text = nested
    members["trace.json"] = text.encode()
    assert_loads_or_rejects(write_case(case_folder, zip_bytes(members.items())))


@FUZZ
@given(
    base=st.sampled_from(BASES),
    field=st.sampled_from(["crc", "compressed size", "size", "header offset", "end record"]),
    value=st.integers(0, 2**32 - 1) | st.sampled_from([0, 1, 2**31, 2**32 - 1]),
    local_too=st.booleans(),
    data=st.data(),
)
def test_huge_declared_sizes_in_zip_headers(
    saved_traces, case_folder, base, field, value, local_too, data
):
    damaged = bytearray(saved_traces[base])
    end, entries = central_directory(bytes(damaged))
    entry = data.draw(st.sampled_from(entries), label="entry")
    if field == "end record":
        offset = end + data.draw(st.sampled_from([8, 10, 12, 16]), label="end field")
        width = 2 if offset - end in (8, 10) else 4
        struct.pack_into("<H" if width == 2 else "<I", damaged, offset, value % (1 << 8 * width))
    else:
        central_offset = {"crc": 16, "compressed size": 20, "size": 24, "header offset": 42}
        struct.pack_into("<I", damaged, entry + central_offset[field], value)
        if local_too and field != "header offset":
            local = struct.unpack_from("<I", damaged, entry + 42)[0]
            struct.pack_into("<I", damaged, local + central_offset[field] - 2, value)
    assert_loads_or_rejects(write_case(case_folder, bytes(damaged)))


npy_descriptions = st.sampled_from(
    ["'|u1'", "'<f8'", "'|O'", "'|V0'", "'<U3'", "[('a', '<i4')]", "('|u1', (2,))", "'x'", "7"]
)
npy_shapes = (
    st.lists(st.integers(-2, 2**64) | st.sampled_from([0, 1, 4, 2**31]), max_size=3).map(
        lambda dims: "(" + "".join(f"{d}, " for d in dims) + ")"
    )
    | st.integers(1, 5000).map(lambda depth: "(" * depth + ")" * depth)
    | st.sampled_from(["'abc'", "[3]", "None", "(1.5,)"])
)


@FUZZ
@given(
    base=st.sampled_from(BASES),
    description=npy_descriptions,
    shape=npy_shapes,
    fortran=st.sampled_from(["False", "True", "0"]),
    version=st.sampled_from([(1, 0), (2, 0), (3, 0), (0, 0), (255, 255)]),
    payload=st.binary(max_size=512),
    length=st.none() | st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_npy_headers(
    saved_traces, case_folder, base, description, shape, fortran, version, payload, length, data
):
    members = zip_members(saved_traces[base])
    blob = data.draw(st.sampled_from(sorted(n for n in members if n.startswith("blobs/"))))
    header = f"{{'descr': {description}, 'fortran_order': {fortran}, 'shape': {shape}, }}\n"
    members[blob] = npy_bytes(header, version, payload, length)
    assert_loads_or_rejects(write_case(case_folder, zip_bytes(members.items())))


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_valid_blobs_of_the_wrong_size(saved_traces, case_folder, base, data):
    members = zip_members(saved_traces[base])
    blob = data.draw(st.sampled_from(sorted(n for n in members if n.startswith("blobs/"))))
    values = np.frombuffer(data.draw(st.binary(max_size=300), label="bytes"), np.uint8)
    stream = io.BytesIO()
    np.save(stream, values)
    members[blob] = stream.getvalue()
    assert_loads_or_rejects(write_case(case_folder, zip_bytes(members.items())))


@pytest.mark.filterwarnings("ignore:Duplicate name")
@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_missing_and_extra_entries(saved_traces, case_folder, base, data):
    members = list(zip_members(saved_traces[base]).items())
    names = [name for name, _ in members]
    dropped = data.draw(st.sets(st.sampled_from(names)), label="dropped")
    special_names = [*names, "blobs/", "blobs/x.npy", "blobs/.npy"]
    extra_names = st.sampled_from(special_names) | st.text(
        st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20
    )
    extra = data.draw(st.lists(st.tuples(extra_names, st.binary(max_size=256)), max_size=4))
    kept = [(name, content) for name, content in members if name not in dropped]
    assert_loads_or_rejects(write_case(case_folder, zip_bytes([*kept, *extra])))


@FUZZ
@given(content=st.binary(max_size=4096) | st.text(max_size=512).map(str.encode))
def test_files_that_are_not_zips(case_folder, content):
    assert_loads_or_rejects(write_case(case_folder, content))


def _fifo(folder: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    path = folder / "pipe"
    os.mkfifo(path)
    return path


def _device(name: str):
    def make(folder: Path) -> Path:
        path = Path("/dev") / name
        if not (path.exists() and stat.S_ISCHR(path.stat().st_mode)):
            pytest.skip(f"{path} is not a character device here")
        return path

    return make


@pytest.mark.parametrize(
    "make, kind",
    [
        (_device("zero"), "a character device"),
        (_device("urandom"), "a character device"),
        (lambda folder: folder, "a directory"),
        (_fifo, "a FIFO"),
        (lambda folder: write_case(folder, b""), "cannot be read as a zip file"),
    ],
    ids=["dev-zero", "dev-urandom", "directory", "fifo", "empty"],
)
def test_special_files_are_refused_at_once(tmp_path, make, kind):
    """In a subprocess, so that a load blocked in a read fails the test by its timeout
    instead of hanging the run. "At once" is the message: only the check of the file's
    kind, before any read, names it (a time bound would fail on a busy machine)."""
    path = make(tmp_path)
    try:
        done = subprocess.run(
            [sys.executable, "-c", LOAD_ONE, str(path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {path} hung")
    outcome = json.loads(done.stdout)
    assert kind in outcome, outcome


@pytest.mark.skipif(sys.platform == "win32", reason="no SIGALRM to interrupt a hang")
def test_time_limit_interrupts_a_hang():
    with pytest.raises(LoadTimeout), time_limit(0.1):
        while True:
            time.sleep(0.01)
