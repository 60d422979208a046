"""A bug inside a loop, in JupyterLab (from PyPI) driven by Debian chromium: a
``%%luisa_trace`` cell whose loop makes 5,000 stale uploads shows about one screen of
output above the viewer, one finding with its count, and no megabytes of HTML that the
widget holds anyway."""

from __future__ import annotations

import nbformat
import pytest
from helpers.browser import jupyter_lab, launch_chromium, missing_browser_reason, run_all_cells

if reason := missing_browser_reason(lab=True):
    pytest.skip(reason, allow_module_level=True)

SCREEN = 1000
"""The browser window's height in CSS pixels: "one screen"."""
LOOP = """%%luisa_trace --backend cpu --staging submit
device = lnb.default_device()
a = device.create_buffer(4, np.float32, name="a")
b = device.create_buffer(4, np.float32, name="b")
h = np.zeros(4, np.float32)
a.copy_from(np.ones(4, np.float32))  # written, so downloading it reads no uninitialized bytes
stream = device.default_stream
for step in range(5000):
    stream.submit([a.copy_to_async(h), b.copy_from_async(h)])
stream.synchronize()"""

# The traced cell's outputs as the notebook would save them, and where its viewer starts.
MEASURE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cell = panel.content.widgets[1];
  const area = cell.node.querySelector(".jp-Cell-outputArea");
  const viewer = cell.node.querySelector(".lnb-viewer");
  return {
    above: viewer.getBoundingClientRect().top - area.getBoundingClientRect().top,
    outputs: JSON.stringify(cell.model.outputs.toJSON()).length,
  };
}"""


@pytest.fixture
def lab(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext luisa_nb\nimport numpy as np\nimport luisa_nb as lnb"),
        nbformat.v4.new_code_cell(LOOP),
    ]
    nbformat.write(notebook, tmp_path / "loop.ipynb")
    with jupyter_lab(tmp_path, timeout=90) as server:
        yield server.url("lab/tree/loop.ipynb")


def test_a_loop_of_stale_uploads_is_one_finding_one_screen_above_the_viewer(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": SCREEN})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        run_all_cells(page, lab, timeout=90)
        page.wait_for_selector(".lnb-viewer .lnb-timeline[data-draws]", timeout=120_000)
        page.wait_for_selector(".lnb-viewer .lnb-finding", timeout=30_000)
        measured = page.evaluate(MEASURE)
        assert measured["above"] <= SCREEN, measured
        assert measured["outputs"] < 1_500_000, "the outputs repeat what the widget holds"
        findings = page.locator(".lnb-viewer .lnb-finding")
        assert findings.count() == 1
        assert findings.first.get_attribute("data-count") == "5000"
        assert findings.first.get_attribute("data-kind") == "STALE_UPLOAD"
        assert "\N{MULTIPLICATION SIGN}5000" in findings.first.inner_text()
        timeline = page.locator(".lnb-viewer .lnb-timeline")
        assert timeline.get_attribute("data-hazard-labels") == "1", "one label per place"
        assert int(timeline.get_attribute("data-arrows")) >= 1
        findings.first.locator(".lnb-expand").click()
        occurrences = page.locator(".lnb-viewer .lnb-occurrence")
        assert occurrences.count() == 200, "the occurrences, a page at a time"
        shot = tmp_path / "loop-of-stale-uploads.png"
        page.screenshot(path=str(shot))
        print(f"screenshot: {shot}")
        browser.close()
    assert errors == []
