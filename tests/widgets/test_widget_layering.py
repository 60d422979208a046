"""Widgets read a Trace plus analysis results, never the runtime or the backends."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import luisa_nb

PACKAGE = Path(luisa_nb.__file__).parent
FORBIDDEN = ("luisa_nb.runtime", "luisa_nb.backends")

# luisa_nb/__init__.py imports the runtime for its public API, so the check loads the
# widgets under a bare parent package (no __init__ run): what it finds is the widgets' own.
PROBE = """
import json, sys, types
package = types.ModuleType("luisa_nb")
package.__path__ = [sys.argv[1]]
sys.modules["luisa_nb"] = package
import luisa_nb.widgets
from luisa_nb.widgets import (
    CommandTable, DiffView, HazardList, StagingInspector, TimelineWidget, TraceViewer,
)
import luisa_nb.report
print(json.dumps(sorted(sys.modules)))
"""


def test_importing_the_widgets_loads_no_runtime_or_backend():
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(PACKAGE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.splitlines()[-1])
    assert "luisa_nb.widgets.viewer" in modules and "luisa_nb.analysis" in modules
    assert [m for m in modules if m.startswith(FORBIDDEN)] == []


def test_no_widget_module_names_the_runtime():
    sources = [*(PACKAGE / "widgets").glob("*.py"), PACKAGE / "report.py"]
    for source in sources:
        tree = ast.parse(source.read_text(), str(source))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            bad = [
                n
                for n in names
                if n.startswith(FORBIDDEN) or n == "luisa_nb"  # its __init__ does
            ]
            assert not bad, f"{source.name}:{node.lineno} imports {bad}"
