"""The live widgets in JupyterLab (from PyPI) driven by Debian chromium: the anywidget
ES modules load from the package, selection round-trips through the kernel, and pages
of values arrive as binary custom messages. Opens a *saved* trace, so the kernel needs
no device."""

from __future__ import annotations

import nbformat
import pytest
from helpers.browser import (
    jupyter_lab,
    launch_chromium,
    missing_browser_reason,
    open_lab_notebook,
    run_cell,
)

if reason := missing_browser_reason(lab=True):
    pytest.skip(reason, allow_module_level=True)


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
    with jupyter_lab(tmp_path) as server:
        yield server.url("lab/tree/viewer.ipynb")


def test_trace_viewer_in_jupyterlab(lab, seed, tmp_path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        open_lab_notebook(page, lab)
        run_cell(page)
        try:  # a loaded machine can take a while to start the kernel and import numpy
            page.wait_for_selector(".lnb-timeline[data-draws]", timeout=120_000)
        except PlaywrightTimeout:
            prompt = page.locator(".jp-Cell .jp-InputPrompt").first.inner_text()
            output = page.locator(".jp-Cell .jp-OutputArea").first.inner_text()
            pytest.fail(f"no timeline drawn; the cell's prompt reads {prompt!r}, output {output!r}")
        timeline = page.locator(".lnb-timeline")
        assert timeline.get_attribute("data-lane-records") == "[1,5]"
        assert timeline.get_attribute("data-arrows") == "1"
        page.click(".lnb-hazard[data-hazard-index='0']")  # -> kernel -> every view
        page.wait_for_selector(".lnb-diff tbody tr", timeout=30_000)
        rows = page.locator(".lnb-diff tbody tr")
        assert rows.nth(0).locator("td").all_inner_texts()[1:3] == ["0.0", "123.0"]
        assert rows.nth(1).locator("td").all_inner_texts()[1:3] == ["1001.0", "123.0"]
        page.wait_for_function(  # the table hears of the selection after the diff view
            "() => document.querySelectorAll('.lnb-table-row.lnb-selected').length >= 2",
            timeout=30_000,
        )
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
