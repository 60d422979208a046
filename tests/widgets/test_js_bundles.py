"""The widgets' JavaScript: ES modules under ``static/src``, bundled by esbuild into one
committed module per view under ``static/bundles`` (``js/build.mjs``).

The freshness check rebuilds the bundles with the esbuild that ``js/package-lock.json``
pins (``npm ci --prefix js``) and compares; it skips where that is not installed, unless
``LUISA_NB_REQUIRE_ESBUILD`` is set (CI sets it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import Path

import pytest

from luisa_nb.widgets.html_page import BUNDLES, STATIC, module_source

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "js"
VIEWS = ("page", "timeline", "table", "hazards", "diff", "contents")
MAX_LINES = 400


def source_modules() -> list[Path]:
    return sorted(
        path
        for path in STATIC.rglob("*")
        if path.suffix in (".js", ".mjs") and BUNDLES not in path.parents
    )


def test_no_source_module_is_over_400_lines():
    sources = source_modules()
    assert len(sources) >= 10
    lengths = {
        str(p.relative_to(STATIC)): len(p.read_text(encoding="utf-8").splitlines()) for p in sources
    }
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


def test_each_view_has_one_self_contained_bundle():
    """A bundle imports nothing (the static page runs it from a Blob URL, offline)."""
    assert sorted(p.stem for p in BUNDLES.glob("*.js")) == sorted(VIEWS)
    for view in VIEWS:
        source = module_source(view)
        assert source.startswith("// Generated from luisa_nb/widgets/static/src by js/build.mjs")
        assert not re.search(r"^\s*import\b|\bimport\s*\(", source, re.MULTILINE), view
    assert re.findall(r"^export \{([^}]*)\};", module_source("page"), re.MULTILINE) == [
        "\n  boot\n"
    ]


def test_the_bundles_and_stylesheet_ship_as_package_data():
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    patterns = json.loads(re.search(r'^"luisa_nb.widgets" = (\[.*\])$', config, re.M)[1])
    package = STATIC.parent
    shipped = [
        p
        for p in package.rglob("*")
        if any(fnmatch(str(p.relative_to(package)), g) for g in patterns)
    ]
    assert sorted(p.name for p in shipped) == sorted([*(f"{v}.js" for v in VIEWS), "widgets.css"])


def esbuild_missing_reason() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (JS / "node_modules" / "esbuild" / "package.json").is_file():
        return "esbuild is not installed: run `npm ci --prefix js`"
    return None


def test_the_committed_bundles_are_what_the_sources_build_to(tmp_path):
    if reason := esbuild_missing_reason():
        if os.environ.get("LUISA_NB_REQUIRE_ESBUILD"):
            pytest.fail(f"LUISA_NB_REQUIRE_ESBUILD is set but {reason}")
        pytest.skip(reason)
    done = subprocess.run(
        ["node", str(JS / "build.mjs"), str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    built = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.glob("*.js")}
    committed = {p.name: p.read_text(encoding="utf-8") for p in BUNDLES.glob("*.js")}
    assert sorted(built) == sorted(committed)
    stale = [name for name in built if built[name] != committed[name]]
    assert stale == [], "rebuild the bundles: `npm ci --prefix js && node js/build.mjs`"
