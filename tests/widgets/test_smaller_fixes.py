"""The smaller fixes of the views, each in a real browser (Debian chromium, 1280 px): the
command filter matches enclosing ranges, ids, kinds and headers are not cut, a stale
upload's own bar is outlined at the opening zoom."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.browser import missing_browser_reason

import luisa_nb as lnb
from luisa_nb.report import write_report

if reason := missing_browser_reason():
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture
def open_report(open_page, tmp_path):
    """Opens the report of a trace, once its timeline drew."""

    def open_(trace, name: str):
        page = open_page(write_report(trace, tmp_path / f"{name}.html"))
        page.wait_for_selector(".lnb-timeline[data-draws]", timeout=20_000)
        return page

    return open_


def _nested_ranges_trace():
    device = lnb.create_device("cpu", staging="submit")
    a = device.create_buffer(4, np.float32, name="a")
    host = np.zeros(4, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        with lnb.range("solve"):
            for step in range(3):
                with lnb.range(f"step {step}"):
                    stream.submit([a.copy_to_async(host), a.copy_from_async(host)])
        stream.submit([a.copy_from_async(host)])
        stream.synchronize()
    return trace


def test_the_filter_matches_a_range_that_holds_the_innermost_one(open_report):
    page = open_report(_nested_ranges_trace(), "ranges")
    page.fill(".lnb-table-search", "solve")
    page.wait_for_selector(".lnb-table[data-filter='solve']")
    assert page.locator(".lnb-table").get_attribute("data-shown") == "6", (
        "every command inside 'solve', though each one's innermost range is 'step N'"
    )
    page.fill(".lnb-table-search", "step 1")
    page.wait_for_selector(".lnb-table[data-filter='step 1']")
    assert page.locator(".lnb-table").get_attribute("data-shown") == "2"
    assert page.errors == []


def test_ids_kinds_and_headers_are_not_cut_at_1280_px(open_report, seed):
    page = open_report(seed.trace, "seed")
    cut = page.evaluate(
        """() => [...document.querySelectorAll('.lnb-table-header span, .lnb-table-row span')]
            .filter((cell) => !cell.classList.contains('lnb-table-range'))
            .filter((cell) => cell !== cell.parentNode.lastElementChild)
            .filter((cell) => cell.scrollWidth > cell.clientWidth + 1)
            .map((cell) => cell.textContent)"""
    )
    assert cut == []
    widths = page.evaluate(
        """() => {
          const probe = document.createElement('span');
          probe.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap';
          const cell = document.querySelector('.lnb-table-row span');
          probe.style.font = getComputedStyle(cell).font;
          document.body.append(probe);
          probe.textContent = '#1234567';
          const id = probe.getBoundingClientRect().width;
          document.body.removeChild(probe);
          return {id, column: cell.clientWidth};
        }"""
    )
    assert widths["id"] + 8 <= widths["column"], "a 7-digit id fits its column"
    assert page.errors == []


def test_the_stale_upload_bar_is_outlined_at_the_opening_zoom(open_report, seed):
    page = open_report(seed.trace, "seed")
    timeline = page.locator(".lnb-timeline")
    assert timeline.get_attribute("data-outlined-bars") == "1"
    assert timeline.get_attribute("data-hazard-labels") == "1"
    assert page.errors == []
