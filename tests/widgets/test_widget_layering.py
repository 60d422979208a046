"""Views and widgets read a Trace plus analysis results, never the runtime or the backends,
and the views package imports nothing of the widgets built on it."""

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
    CommandTableWidget, DiffView, HazardList, StagingInspector, TimelineWidget, TraceViewer,
)
import luisa_nb.report, luisa_nb.ipython.display
import luisa_nb.views.comparison, luisa_nb.views.fallbacks, luisa_nb.views.figure
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
    assert "luisa_nb.views.figure" in modules
    assert [m for m in modules if m.startswith(FORBIDDEN)] == []


def _imports(source: Path) -> list[tuple[int, str]]:
    tree = ast.parse(source.read_text(), str(source))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
    return found


def test_the_views_import_no_widget_and_no_comparison_runner():
    for source in (PACKAGE / "views").glob("*.py"):
        for line, name in _imports(source):
            assert not name.startswith(("luisa_nb.widgets", "luisa_nb.comparing")), (
                f"{source.name}:{line} imports {name}"
            )


def test_no_view_or_widget_module_names_the_runtime():
    sources = [
        *(PACKAGE / "widgets").glob("*.py"),
        *(PACKAGE / "views").glob("*.py"),
        PACKAGE / "report.py",
        PACKAGE / "ipython" / "display.py",
    ]
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
