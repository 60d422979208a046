"""Every path that cannot name a trace file to load, or a place to save one, raises one
luisa_nb error (also the builtin exception ``open`` would raise) whose one-line message
names the path and says what to do."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.errors import (
    InvalidArgumentError,
    LuisaNbError,
    TraceFileError,
    TraceFileNotFoundError,
    TraceFormatError,
)
from luisa_nb.recording import Trace

LONG_NAME = "t" * 300 + ".lnbtrace"


@pytest.fixture(scope="module")
def small_trace():
    device = lnb.create_device("cpu")
    buffer = device.create_buffer(16, np.float32, name="b")
    with Trace() as trace:
        buffer.copy_from(np.zeros(16, np.float32), sync=True)
    return trace


@pytest.fixture
def refused(monkeypatch):
    """``refused(path)``: opening ``path`` fails for lack of permission, even for root
    (whom file modes do not stop)."""

    def refuse(path):
        path.chmod(0)
        if os.geteuid() != 0:
            return path
        real_open = os.open

        def open_(name, flags, *args, **kwargs):
            if str(path) in (os.fspath(name), os.path.dirname(os.fspath(name))):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(name))
            return real_open(name, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", open_)
        return path

    return refuse


def loop(folder):
    link = folder / "loop"
    link.symlink_to(link)
    return link


def unreadable(folder, refuse):
    path = folder / "unreadable.lnbtrace"
    path.write_bytes(b"PK")
    return refuse(path)


def nul(folder, refuse):
    return f"{folder}/a\0b"


def check_one_line(error: BaseException, path: object, advice: str) -> None:
    """``error`` is luisa_nb's, and its one line names ``path`` and gives ``advice``."""
    shown = repr(path) if isinstance(path, str) else str(path)
    message = str(error)
    assert isinstance(error, LuisaNbError)
    assert "\n" not in message and shown in message and advice in message, message


#: How each bad path is made (from a folder and ``refused``), the error it raises, the
#: builtin exception that error also is, and a word of its advice.
LOADS = {
    "none": (lambda folder, refuse: None, InvalidArgumentError, TypeError, "the file's path"),
    "missing": (lambda folder, refuse: folder / "nothing.lnbtrace", TraceFileNotFoundError,
                FileNotFoundError, "save a trace there first"),
    "directory": (lambda folder, refuse: folder, TraceFormatError, ValueError, "a directory"),
    "loop": (lambda folder, refuse: loop(folder), TraceFileError, OSError, "form a loop"),
    "too-long": (lambda folder, refuse: folder / LONG_NAME, TraceFileError, OSError,
                 "a shorter path"),
    "nul": (nul, TraceFileError, OSError, "NUL"),
    "unreadable": (unreadable, TraceFileError, OSError, "permissions"),
}  # fmt: skip
SAVES = {
    "none": LOADS["none"],
    "no-folder": (lambda folder, refuse: folder / "missing" / "t.lnbtrace",
                  TraceFileNotFoundError, FileNotFoundError, "create it"),
    "directory": (lambda folder, refuse: folder, TraceFileError, OSError, "a folder"),
    "loop": (lambda folder, refuse: loop(folder) / "t.lnbtrace", TraceFileError, OSError,
             "form a loop"),
    "too-long": LOADS["too-long"],
    "nul": LOADS["nul"],
    "unwritable": (lambda folder, refuse: refuse(folder) / "t.lnbtrace", TraceFileError,
                   OSError, "permissions"),
}  # fmt: skip


@pytest.mark.parametrize("case", LOADS)
@pytest.mark.parametrize("load", [lnb.load_trace, Trace.load], ids=["load_trace", "Trace.load"])
def test_loading_from_a_bad_path(tmp_path, refused, case, load):
    make, error_type, builtin, advice = LOADS[case]
    path = make(tmp_path, refused)
    with pytest.raises(error_type) as caught:
        load(path)
    assert isinstance(caught.value, builtin)
    check_one_line(caught.value, path, advice)


@pytest.mark.parametrize("case", SAVES)
def test_saving_to_a_bad_path(small_trace, tmp_path, refused, case):
    make, error_type, builtin, advice = SAVES[case]
    path = make(tmp_path, refused)
    with pytest.raises(error_type) as caught:
        small_trace.save(path)
    assert isinstance(caught.value, builtin)
    check_one_line(caught.value, path, advice)


@pytest.mark.parametrize("case", ["no-folder", "directory", "nul"])
def test_exporting_to_a_bad_path(small_trace, tmp_path, refused, case):
    make, error_type, _, _ = SAVES[case]
    path = make(tmp_path, refused)
    with pytest.raises(error_type) as caught:
        small_trace.to_chrome_trace(path)
    check_one_line(caught.value, path, "Chrome trace")


def test_the_error_keeps_the_os_error_number(tmp_path):
    with pytest.raises(TraceFileError) as caught:
        Trace.load(loop(tmp_path))
    assert caught.value.errno == errno.ELOOP and caught.value.filename == str(tmp_path / "loop")
