"""The contents panel live in JupyterLab, driven by Debian chromium: notebook 01's program
runs in the kernel under ``%%luisa_trace --capture full``, which shows its trace in the
trace viewer; a click selects a command, and the arrow keys step through the others
while the kernel replays each and the panel shows the buffers before and after."""

from __future__ import annotations

import json
from pathlib import Path

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

NOTEBOOK_01 = Path(__file__).parents[2] / "notebooks" / "01_seed_bug.ipynb"
MAGIC = "%%luisa_trace --backend cpu --staging submit"


def notebook_01_program() -> str:
    """The body of notebook 01's first traced cell (the seed program)."""
    notebook = nbformat.read(NOTEBOOK_01, as_version=4)
    (source,) = [c.source for c in notebook.cells if c.source.startswith(MAGIC)][:1]
    return source.split("\n", 1)[1]


@pytest.fixture
def lab(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    arguments = MAGIC.removeprefix("%%luisa_trace ") + " --capture full"
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import numpy as np\nimport luisa_nb as lnb\n"
            "get_ipython().run_line_magic('load_ext', 'luisa_nb')\n"
            f"get_ipython().run_cell_magic('luisa_trace', {arguments!r}, "
            f"{json.dumps(notebook_01_program())})"
        )
    ]
    nbformat.write(notebook, tmp_path / "contents.ipynb")
    with jupyter_lab(tmp_path) as server:
        yield server.url("lab/tree/contents.ipynb")


def shown(page, command_id: int, buffer: str) -> list[list[str]]:
    """The first rows (index, before, after) of ``buffer`` once the panel shows
    ``command_id`` and its first page arrived from the kernel."""
    diff = f".lnb-contents[data-command='{command_id}'] [data-buffer='{buffer}'] .lnb-diff"
    page.wait_for_selector(f"{diff}[data-rows='256']", timeout=60_000)
    rows = page.locator(f"{diff} tbody tr").evaluate_all(
        "rows => rows.slice(0, 3).map(r => [...r.cells].slice(0, 3).map(c => c.innerText))"
    )
    return rows


def test_click_a_command_and_step_with_the_arrow_keys(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1600, "height": 1100})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        open_lab_notebook(page, lab)
        run_cell(page)
        page.wait_for_selector(".lnb-timeline[data-draws]", timeout=120_000)
        records = page.locator(".lnb-table-row[data-id]").evaluate_all(
            "rows => rows.filter(r => r.offsetParent)"
            "  .map(r => [Number(r.dataset.id), r.lastChild.innerText])"
        )
        # the program uploads x and y, then submits the five commands of the seed
        ids = [i for i, text in sorted(records) if not text.startswith("synchronize")][2:]
        assert len(ids) == 5, records
        first_upload, dispatch, download, upload, copy = ids

        # fit, then click the first upload's bar: the panel shows z before and after it
        page.locator(".lnb-timeline-frame").focus()
        page.keyboard.press("f")
        box = page.evaluate(f"() => globalThis.__luisa_nb.timelines[0].barRect({first_upload})")
        canvas = page.locator(".lnb-timeline-canvas").bounding_box()
        page.mouse.click(canvas["x"] + box["x"] + box["w"] / 2, canvas["y"] + box["y"] + 3)
        assert shown(page, first_upload, "z") == [
            ["0", "0.0", "123.0"],
            ["1", "0.0", "123.0"],
            ["2", "0.0", "123.0"],
        ]
        # ArrowRight on the timeline: the dispatch, after which z == x + y
        page.keyboard.press("ArrowRight")
        assert shown(page, dispatch, "z") == [
            ["0", "123.0", "0.0"],
            ["1", "123.0", "1001.0"],
            ["2", "123.0", "2002.0"],
        ]
        panel = page.locator(".lnb-contents")
        assert (
            panel.locator(".lnb-contents-title")
            .inner_text()
            .startswith(f"#{dispatch} dispatch vecadd")
        )
        x = panel.locator("[data-buffer='x'] .lnb-stats")
        assert "all 1,024 elements are equal" in x.inner_text()

        # in the panel: ArrowRight twice, to the download and then the stale upload
        panel.locator(".lnb-contents-title").click()
        page.keyboard.press("ArrowRight")
        assert shown(page, download, "z")[1] == ["1", "1001.0", "1001.0"]
        page.keyboard.press("ArrowRight")
        assert shown(page, upload, "z") == [
            ["0", "0.0", "123.0"],
            ["1", "1001.0", "123.0"],
            ["2", "2002.0", "123.0"],
        ]  # the stale bytes the device got
        assert f"after #{download}" in panel.inner_text()
        page.keyboard.press("ArrowRight")
        assert shown(page, copy, "x")[1] == ["1", "1.0", "123.0"]
        page.keyboard.press("ArrowLeft")
        shown(page, upload, "z")
        selected = page.locator(".lnb-table-row.lnb-selected").evaluate_all(
            "rows => rows.map(r => Number(r.dataset.id))"
        )
        assert selected == [upload]  # the other views follow the panel
        shot = tmp_path / "contents-panel.png"
        panel.screenshot(path=str(shot))
        page.screenshot(path=str(tmp_path / "contents-viewer.png"), full_page=True)
        print(f"screenshot: {shot}")
        browser.close()
    assert errors == []
