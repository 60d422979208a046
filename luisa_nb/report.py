"""The trace report: one self-contained HTML page (no network, no kernel) with the
timeline, the hazards with their messages and fixes, the command table, and for each
stale upload its staged bytes against the bytes stream order says it should send.

``luisa-nb report TRACE -o report.html`` writes it from a saved trace. The page runs the
same ES modules as the notebook widgets, with the data inlined (binary arrays as base64).
"""

from __future__ import annotations

import os
from pathlib import Path

from luisa_nb.recording import Trace
from luisa_nb.recording.atomic_files import atomic_write
from luisa_nb.recording.file_paths import MISSING_FOLDER, checked_path, file_errors
from luisa_nb.widgets.pages import trace_page


def _as_trace(trace: Trace | str | os.PathLike[str]) -> Trace:
    if isinstance(trace, Trace):
        return trace
    from luisa_nb.analysis import AnalyzedTrace

    return AnalyzedTrace.load(trace)


def report_html(trace: Trace | str | os.PathLike[str], *, title: str | None = None) -> str:
    """The report of ``trace`` (a trace, or the path of a saved one) as an HTML document."""
    trace = _as_trace(trace)
    return trace_page(trace, title=title)


def write_report(
    trace: Trace | str | os.PathLike[str], path: str | os.PathLike[str], *, title: str | None = None
) -> Path:
    """Write :func:`report_html` of ``trace`` to ``path`` (UTF-8, replacing any file there
    only once the page is complete); returns the path. A path that cannot be written
    raises :class:`~luisa_nb.errors.TraceFileError`."""
    doing = "write the report to"
    path = checked_path(path, doing)
    page = report_html(trace, title=title).encode("utf-8")
    with file_errors(path, doing, MISSING_FOLDER), atomic_write(path) as file:
        file.write(page)
    return path
