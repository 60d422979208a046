"""The live widgets in JupyterLab (from PyPI) driven by Debian chromium: the anywidget
ES modules load from the package, selection round-trips through the kernel, and pages
of values arrive as binary custom messages. Opens a *saved* trace, so the kernel needs
no device."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python) is not installed")
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed")
pytest.importorskip("ipykernel", reason="ipykernel is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip(f"Debian chromium is not installed at {CHROMIUM}", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def lab(tmp_path, seed):
    seed.trace.save(tmp_path / "seed.lnbtrace")
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import luisa_nb as lnb\nfrom luisa_nb.widgets import TraceViewer\n"
            "viewer = TraceViewer(lnb.load_trace('seed.lnbtrace'))\nviewer"
        )
    ]
    nbformat.write(notebook, tmp_path / "viewer.ipynb")
    port = free_port()
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
        "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=",
        f"--ServerApp.root_dir={tmp_path}", f"--LabApp.workspaces_dir={tmp_path}",
        "--LabApp.news_url=None", "--allow-root",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    log = (tmp_path / "server.log").open("w")
    environment = {"JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    server = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **environment}
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if server.poll() is not None:
                break
            time.sleep(0.2)
    else:
        server.terminate()
        pytest.fail("JupyterLab did not start in 60 s; see " + str(tmp_path / "server.log"))
    yield f"http://127.0.0.1:{port}/lab/tree/viewer.ipynb"
    server.terminate()
    server.wait(20)
    log.close()


def test_trace_viewer_in_jupyterlab(lab, seed, tmp_path):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(lab)
        page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=60_000)
        idle = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
        page.wait_for_selector(idle, timeout=60_000)
        page.wait_for_timeout(500)
        for _ in range(3):  # a kernel or news dialog may ask first
            if not page.locator(".jp-Dialog").count():
                break
            page.locator(".jp-Dialog .jp-mod-accept").first.click()
        page.click(".jp-Notebook .jp-Cell .cm-content")
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector(".lnb-timeline[data-draws]", timeout=60_000)
        timeline = page.locator(".lnb-timeline")
        assert timeline.get_attribute("data-lane-records") == "[1,5]"
        assert timeline.get_attribute("data-arrows") == "1"
        page.click(".lnb-hazard[data-hazard-index='0']")  # -> kernel -> every view
        page.wait_for_selector(".lnb-diff tbody tr", timeout=30_000)
        rows = page.locator(".lnb-diff tbody tr")
        assert rows.nth(0).locator("td").all_inner_texts()[1:3] == ["0.0", "123.0"]
        assert rows.nth(1).locator("td").all_inner_texts()[1:3] == ["1001.0", "123.0"]
        selected = page.locator(".lnb-table-row.lnb-selected").evaluate_all(
            "rows => rows.map(r => Number(r.dataset.id))"
        )
        assert sorted(selected) == [seed.download, seed.upload]
        page.click(".lnb-diff .lnb-toolbar button:has-text('▶')")  # a page from the kernel
        page.wait_for_selector(".lnb-diff[data-page='1']", timeout=30_000)
        assert rows.nth(0).locator("td").all_inner_texts()[:3] == ["256", "256256.0", "123.0"]
        shot = tmp_path / "jupyterlab-viewer.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
        browser.close()
    assert errors == []
