"""Traces of failed tests that come back from pytest-xdist workers.

A worker (on this machine or another one, through xdist's ``--tx``) saves a failed
test's trace where it runs, then sends the file's bytes in the test's report, which
xdist carries to the controller as it carries every report. The controller writes them
into its trace folder (``--luisa-trace-dir``, else a new temporary folder) and points
the report at that copy, so the summary names files that exist where the campaign was
started.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from luisa_nb.testing.hazard_check import TRACE_FILE_NAME

PATH_PROPERTY = "luisa_trace"
BYTES_PROPERTY = "luisa_trace_bytes"
SECTION = "luisa_nb trace"
MAX_RETURNED_BYTES = 256 * 2**20
"""Larger traces stay on the worker; the report says where."""


def test_folder(folder: Path, nodeid: str) -> Path:
    """A new folder for the trace of test ``nodeid`` in ``folder``: the test's path and
    parameters, with everything but letters, digits, ``.``, ``-`` and ``_`` made ``_``."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_")[:200] or "test"
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def attach(report: pytest.TestReport, path: Path) -> None:
    """Put the saved trace's bytes in ``report`` (on a worker)."""
    if path.stat().st_size <= MAX_RETURNED_BYTES:
        encoded = base64.b64encode(path.read_bytes()).decode("ascii")
        report.user_properties.append((BYTES_PROPERTY, encoded))


def sent(report: pytest.TestReport) -> bool:
    return any(name == BYTES_PROPERTY for name, _ in getattr(report, "user_properties", ()))


def receive(report: pytest.TestReport, folder: Path) -> Path:
    """Write the trace a worker attached to ``report`` into ``folder`` (on the
    controller), and make the report name that file."""
    properties = report.user_properties
    encoded = next(value for name, value in properties if name == BYTES_PROPERTY)
    path = test_folder(folder, report.nodeid) / TRACE_FILE_NAME
    path.write_bytes(base64.b64decode(encoded))
    worker_path = next(value for name, value in properties if name == PATH_PROPERTY)
    properties[:] = [
        (PATH_PROPERTY, str(path)) if name == PATH_PROPERTY else (name, value)
        for name, value in properties
        if name != BYTES_PROPERTY
    ]
    report.sections = [
        (title, text.replace(worker_path, str(path)) if title == SECTION else text)
        for title, text in report.sections
    ]
    return path
