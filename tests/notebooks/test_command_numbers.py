"""A trace numbers its commands and sync points from 1 in the order they were made: the
same traced cell shows the same ids on its second run in one kernel as in a fresh one, in
every view and export (docs/recording.md, "Command ids")."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from notebook_support import SEED_CELL

import luisa_nb as lnb
from luisa_nb.analysis.perfetto import perfetto_bytes
from luisa_nb.analysis.reproducer import choose_finding
from luisa_nb.ipython.state import last_trace
from luisa_nb.report import report_html
from luisa_nb.testing.reproducers import reproducer
from luisa_nb.views.timeline import build_timeline
from luisa_nb.widgets.pages import trace_fragment
from luisa_nb.widgets.viewer import TraceViewer

pytest.importorskip("IPython")

TRACED_SEED = "%%luisa_trace --backend cpu --staging submit\n" + SEED_CELL
NUMBER = re.compile(r"#(\d+)\b")


def ids_shown(shell, folder: Path) -> dict[str, list]:
    """Run the seed program under ``%%luisa_trace`` in ``shell`` (a ``Shell`` of
    notebook_support) and collect the command ids each view and export of its trace shows."""
    shown = shell.run(TRACED_SEED)
    assert shown.success, shown.stdout + shown.stderr
    trace = last_trace()
    saved = lnb.load_trace(trace.save(folder / "trace.zip"))
    chrome = trace.to_chrome_trace()
    reproduced = reproducer(trace, choose_finding(trace.hazards))
    ids = {
        "records": [record.id for record in trace.records],
        "hazards": [list(hazard.command_ids) for hazard in trace.hazards],
        "findings": [list(group.first.command_ids) for group in trace.findings],
        "summary": NUMBER.findall(shown.plain + shown.html),
        "timeline": sorted(build_timeline(trace).record_ids.tolist()),  # in time order
        "twin": NUMBER.findall(trace_fragment(trace)),
        "viewer": [hazard["command_ids"] for hazard in TraceViewer(trace).timeline_data.hazards],
        "report": NUMBER.findall(report_html(trace)),
        "saved": [record.id for record in saved.records],
        "chrome": [e["args"]["id"] for e in chrome["traceEvents"] if "id" in e.get("args", {})],
        "perfetto": NUMBER.findall(perfetto_bytes(trace, trace.hazards).decode("latin-1")),
        "reproducer": NUMBER.findall(reproduced.text),
    }
    if importlib.util.find_spec("pyarrow") is not None:  # optional: both runs leave it out
        ids["arrow"] = trace.to_arrow().column("id").to_pylist()
    return ids


FRESH_RUN = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
from notebook_support import EXTENSION, Shell
from test_command_numbers import ids_shown
config = Config()
config.HistoryManager.hist_file = ":memory:"
shell = InteractiveShell.instance(config=config)
shell.run_line_magic("load_ext", EXTENSION)
print(json.dumps(ids_shown(Shell(shell), Path({folder!r}))))
"""


def fresh_kernel_ids(folder: Path) -> dict[str, list]:
    """:func:`ids_shown` in a new Python process (a fresh kernel)."""
    script = FRESH_RUN.format(tests=str(Path(__file__).parent), folder=str(folder))
    root = str(Path(__file__).parents[2])
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        cwd=folder,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_rerun_shows_the_ids_of_a_fresh_kernel(ipython, tmp_path):
    (tmp_path / "fresh").mkdir()
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    fresh = fresh_kernel_ids(tmp_path / "fresh")
    first = ids_shown(ipython, tmp_path / "first")
    with lnb.trace():  # commands and sync points outside the cell move the process's ids on
        lnb.default_device().synchronize()
    second = ids_shown(ipython, tmp_path / "second")
    assert json.loads(json.dumps(first)) == fresh
    assert json.loads(json.dumps(second)) == fresh
    # numbered from 1, in the order made, with no gaps
    assert fresh["records"] == list(range(1, len(fresh["records"]) + 1))
    assert fresh["hazards"] and fresh["hazards"][0][-1] in fresh["records"]
    stale = fresh["hazards"][0][-1]
    for view in ("summary", "twin", "report", "reproducer"):
        assert str(stale) in fresh[view], view
    assert fresh["saved"] == fresh["records"] and fresh["chrome"]
