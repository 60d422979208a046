"""Trace files: damaged, truncated, bomb-like and wrong-version files, bad paths to load and
save, hostile names that must come back from a file and show as text in the report, and
saved files that must not hold host addresses."""

from __future__ import annotations

import json
import random
import zipfile

import numpy as np

import luisa_nb as lnb
from luisa_nb.report import report_html, write_report

from ..cases import Case, case
from ..devices import shared_device
from ..html_pages import check_page
from ..oracles import expect, expect_error, expecting
from ..trace_damage import DAMAGES, damaged_copy
from ..trace_samples import folder, hostile_path, recorded_trace, saved_trace
from ..values import HOSTILE_NAMES, random_name

BAD_LOAD_PATHS = (
    "None", "3", "a list", "''", "a missing file", "a file in a missing folder",
    "a directory", "a symlink loop", "a dangling symlink", "a name of 5000 characters",
    "a component of 300 characters", "a NUL byte", "a FIFO", "a socket", "/dev/null",
    "/dev/zero", "an empty file",
)  # fmt: skip
GOOD_LOAD_PATHS = ("pathlib.Path", "a relative path", "a symlink to the file")
ODD_LOAD_PATHS = ("bytes", "a file with a slash after it")
"""Paths that may be refused, or may load the file."""
BAD_SAVE_PATHS = (
    "None", "3", "''", "a directory", "a file in a missing folder", "a NUL byte",
    "a name of 5000 characters", "a component of 300 characters", "a path under a file",
    "a symlink loop",
)  # fmt: skip
GOOD_SAVE_PATHS = ("no extension", "pathlib.Path", "an existing file", "a unicode name")
ODD_SAVE_PATHS = ("bytes", "a dangling symlink")
"""Paths that may be refused, or may be saved to (and then load)."""
NAMED = ("buffer", "host array", "range", "stream")
TRACE_MISUSES = (
    "capture='most'", "capture_bytes=-1", "capture_bytes=None", "capture_bytes=nan",
    "capture_bytes='64'", "a trace inside a trace",
    "upload(10**9)", "lnb.range(3)", "lnb.name(array, 3)", "lnb.name(array, '')",
    "lnb.name(3, 'x')", "save while recording", "to_chrome_trace(3)",
)  # fmt: skip


def _expectation(kind: str, good: tuple[str, ...], odd: tuple[str, ...]) -> str:
    return "ok" if kind in good else "either" if kind in odd else "error"


def load_path(kind: str) -> None:
    path = hostile_path(kind, saved_trace())
    expectation = _expectation(kind, GOOD_LOAD_PATHS, ODD_LOAD_PATHS)
    with expecting(expectation, f"load_trace({kind})") as attempt:
        trace = lnb.load_trace(path)
        attempt.completed()
        expect(len(trace.commands) == len(recorded_trace().commands), "commands were lost")


def load_damaged(damage: str, seed: int) -> None:
    path = damaged_copy(damage, seed)
    with expecting("either", f"a trace file with {damage}"):
        trace = lnb.load_trace(path)
        report_html(trace)
        trace.to_chrome_trace()
        expect(isinstance(trace.hazards, list), "the loaded trace has no hazard list")


def save_path(kind: str) -> None:
    trace = recorded_trace()
    target = hostile_path(kind, saved_trace())
    expectation = _expectation(kind, GOOD_SAVE_PATHS, ODD_SAVE_PATHS)
    with expecting(expectation, f"save({kind})") as attempt:
        saved = trace.save(target)
        attempt.completed()
        loaded = lnb.load_trace(saved)
        expect(len(loaded.commands) == len(trace.commands), f"commands lost saving to {kind}")


def no_host_addresses(backend: str) -> None:
    """A saved trace must not hold the host addresses of the arrays it recorded (they say
    where the process's memory lies)."""
    device = shared_device(backend)
    buffer = device.create_buffer(4096)
    array = np.arange(4096, dtype=np.float32)
    address = array.__array_interface__["data"][0]
    with lnb.trace() as trace:
        buffer.copy_from(array)
        buffer.copy_to(array)
    path = trace.save(folder() / f"addresses-{backend}.lnbtrace")
    with zipfile.ZipFile(path) as archive:
        contents = b"".join(archive.read(name) for name in archive.namelist())
    for form, encoded in (
        ("decimal", str(address).encode()),
        ("hexadecimal", f"{address:x}".encode()),
        ("8 bytes", address.to_bytes(8, "little")),
    ):
        expect(encoded not in contents, f"the saved trace holds the host address ({form})")


def hostile_name(named: str, name: str) -> None:
    """``name`` on a buffer, host array, range or stream comes back from a saved trace as
    it was, and the report (written as the CLI writes it) shows it as text."""
    device = shared_device("cpu")
    array = np.zeros(64, np.float32)
    buffer = device.create_buffer(64, name=name if named == "buffer" else "buffer")
    stream = device.create_stream(name if named == "stream" else None)
    if named == "host array":
        lnb.name(array, name)
    with lnb.trace() as trace, lnb.range(name if named == "range" else "range"):
        buffer.copy_from(array, stream=stream)
        buffer.copy_to(array, stream=stream)
    path = trace.save(folder() / "named.lnbtrace")
    loaded = lnb.load_trace(path)
    names = {
        "buffer": lambda t: [b.name for b in t.buffers.values()],
        "host array": lambda t: [c.host.name for c in t.commands],
        "range": lambda t: [r.name for r in t.ranges],
        "stream": lambda t: [s.name for s in t.streams.values()],
    }
    expect(name in names[named](loaded), f"the {named}'s name did not come back from the file")
    page = write_report(loaded, folder() / "named.html").read_text(encoding="utf-8")
    check_page(page, name, "the report", shown_as_text=named != "range")
    chrome = json.dumps(loaded.to_chrome_trace())
    expect(json.dumps(name)[1:-1] in chrome, f"the Chrome trace lost the {named}'s name")


def trace_misuse(misuse: str) -> None:
    array = np.zeros(4, np.float32)
    buffer = shared_device("cpu").create_buffer(4)
    outer = lnb.trace()
    uses = {
        "capture='most'": lambda: lnb.trace(capture="most"),
        "capture_bytes=-1": lambda: lnb.trace(capture_bytes=-1),
        "capture_bytes=None": lambda: lnb.trace(capture_bytes=None),
        "capture_bytes=nan": lambda: lnb.trace(capture_bytes=float("nan")),
        "capture_bytes='64'": lambda: lnb.trace(capture_bytes="64"),
        "a trace inside a trace": lambda: _nested(outer),
        "upload(10**9)": lambda: recorded_trace().upload(10**9),
        "lnb.range(3)": lambda: lnb.range(3),
        "lnb.name(array, 3)": lambda: lnb.name(array, 3),
        "lnb.name(array, '')": lambda: lnb.name(array, ""),
        "lnb.name(3, 'x')": lambda: lnb.name(3, "x"),
        "to_chrome_trace(3)": lambda: recorded_trace().to_chrome_trace(3),
    }
    if misuse == "save while recording":
        with lnb.trace() as trace:
            buffer.copy_from(array)
            loaded = lnb.load_trace(trace.save(folder() / "live.lnbtrace"))
        expect(len(loaded.commands) <= len(trace.commands), "the live save has extra commands")
        return
    with expect_error(misuse):
        made = uses[misuse]()
        if isinstance(made, lnb.ViewableTrace):
            with made:
                buffer.copy_from(array)
            report_html(made)


def _nested(outer: lnb.ViewableTrace) -> None:
    with outer, lnb.trace():
        pass


def catalogue() -> list[Case]:
    loads = BAD_LOAD_PATHS + GOOD_LOAD_PATHS + ODD_LOAD_PATHS
    saves = BAD_SAVE_PATHS + GOOD_SAVE_PATHS + ODD_SAVE_PATHS
    cases = [case(load_path, f"load_trace({kind})", kind) for kind in loads]
    cases += [case(save_path, f"save({kind})", kind) for kind in saves]
    cases += [
        case(load_damaged, f"a trace file with {damage} (seed {seed})", damage, seed)
        for damage in DAMAGES
        for seed in range(3)
    ]
    cases += [
        case(no_host_addresses, f"no host address in a saved trace of {backend}", backend)
        for backend in ("cpu", "dx")
    ]
    cases += [
        case(hostile_name, f"a {named} named {name!r:.60}", named, name)
        for named in NAMED
        for name in HOSTILE_NAMES
    ]
    cases += [case(trace_misuse, misuse, misuse) for misuse in TRACE_MISUSES]
    return cases


def variant(rng: random.Random) -> Case:
    if rng.random() < 0.5:
        damage, seed = rng.choice(list(DAMAGES)), rng.randrange(10**6)
        return case(load_damaged, f"a trace file with {damage} (seed {seed})", damage, seed)
    named, name = rng.choice(NAMED), random_name(rng)
    return case(hostile_name, f"a {named} named {name!r:.60}", named, name)
