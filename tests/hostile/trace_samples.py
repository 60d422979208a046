"""A trace file to load, damage and save, recorded once per worker, and the hostile paths
the trace cases load from and save to (in a folder of the worker's own)."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from functools import cache
from pathlib import Path

import numpy as np

import luisa_nb as lnb

from .kernel_functions import ADD_ONE


@cache
def folder() -> Path:
    """A temporary folder of this worker, removed when it exits."""
    path = Path(tempfile.mkdtemp(prefix="lnb-hostile-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@cache
def recorded_trace() -> lnb.ViewableTrace:
    """A trace of every kind of record: uploads, a download, a dispatch, a fill, a copy,
    a callback, an event, a range, and the stale upload of LuisaCompute #143."""
    device = lnb.create_device("cpu", staging="submit")
    a, b = device.create_buffer(256, name="a"), device.create_buffer(256, name="b")
    host = np.arange(256, dtype=np.float32)
    other = device.create_stream("other")
    event = device.create_event()
    with lnb.trace(capture="full") as trace, lnb.range("iteration"):
        device.default_stream.submit(
            [
                a.copy_from_async(host),
                ADD_ONE.dispatch_async(256, a),
                a.copy_to_async(host),
                a.copy_from_async(host),
                a.copy_to_buffer_async(b),
                b.fill_async(2.0),
            ]
        )
        device.default_stream.signal(event)
        other.wait(event)
        other.add_callback(lambda: None)
        device.synchronize()
    device.close()
    return trace


@cache
def saved_trace() -> Path:
    return recorded_trace().save(folder() / "sample.lnbtrace")


def _symlink(path: Path, target: str | Path) -> Path:
    if not path.is_symlink():
        path.symlink_to(target)
    return path


def _fifo(path: Path) -> Path:
    if not path.exists():
        os.mkfifo(path)
    return path


def _socket(path: Path) -> Path:
    if not path.exists():
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    return path


def hostile_path(kind: str, trace_file: Path) -> object:
    """The path of ``kind`` (a name from the trace cases' lists); paths that should work
    lead to ``trace_file`` or to a new file in the worker's folder."""
    base = folder()
    builders = {
        "None": lambda: None,
        "3": lambda: 3,
        "a list": lambda: [str(trace_file)],
        "''": lambda: "",
        "a missing file": lambda: base / "missing.lnbtrace",
        "a file in a missing folder": lambda: base / "missing" / "t.lnbtrace",
        "a directory": lambda: base,
        "a symlink loop": lambda: _symlink(base / "loop", base / "loop"),
        "a dangling symlink": lambda: _symlink(base / "dangling", base / "nowhere"),
        "a name of 5000 characters": lambda: base / ("n" * 5000),
        "a component of 300 characters": lambda: base / ("c" * 300) / "t.lnbtrace",
        "a NUL byte": lambda: str(base / "a\0b.lnbtrace"),
        "a FIFO": lambda: _fifo(base / "fifo"),
        "a socket": lambda: _socket(base / "socket"),
        "/dev/null": lambda: "/dev/null",
        "/dev/zero": lambda: "/dev/zero",
        "an empty file": lambda: _written(base / "empty.lnbtrace", b""),
        "a file with a slash after it": lambda: f"{trace_file}/",
        "a path under a file": lambda: trace_file / "inner.lnbtrace",
        "bytes": lambda: os.fsencode(trace_file),
        "pathlib.Path": lambda: Path(trace_file),
        "a relative path": lambda: os.path.relpath(trace_file),
        "a symlink to the file": lambda: _symlink(base / "link.lnbtrace", trace_file),
        "no extension": lambda: base / "saved",
        "an existing file": lambda: _written(base / "existing.lnbtrace", b"old"),
        "a unicode name": lambda: base / "trace \u2028 名 🧪.lnbtrace",
    }
    return builders[kind]()


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
