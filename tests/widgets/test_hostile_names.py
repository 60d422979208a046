"""Names are text in every view: a buffer, host array, stream or range name that reads as
markup, as the end of a script, as a JavaScript template or as mathtext shows as the text
it is, in the report, the notebook's HTML view and the IPython summary, from a live trace
and from a saved one, and every script on the page still runs."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.analysis.comparison import Run
from luisa_nb.comparing import ViewableComparison
from luisa_nb.ipython.display import TraceSummary
from luisa_nb.report import report_html, write_report
from luisa_nb.widgets import DiffView
from luisa_nb.widgets.html_page import STATIC, escape
from luisa_nb.widgets.pages import trace_fragment

HOSTILE = "<!--<script>x</script>\"'`b` ${a}$ $\\frac{$ \u2028\u2029 &amp; </style>]]>"
NAMES = {
    "buffer": f"buffer {HOSTILE}",
    "array": f"array {HOSTILE}",
    "stream": f"stream {HOSTILE}",
    "range": f"range {HOSTILE}",
}
SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script", re.S | re.I)


@pytest.fixture(scope="module")
def live():
    """A stale upload whose buffer, host array, stream and range have hostile names."""
    device = lnb.create_device("cpu", staging="submit")
    buffer = device.create_buffer(256, np.float32, name=NAMES["buffer"])
    data = np.arange(256, dtype=np.float32)
    lnb.name(data, NAMES["array"])
    stream = device.create_stream(name=NAMES["stream"])
    with AnalyzedTrace() as trace, lnb.range(NAMES["range"]):
        stream.submit(
            [buffer.copy_from_async(data), buffer.copy_to_async(data), buffer.copy_from_async(data)]
        )
        stream.synchronize()
    (hazard,) = trace.hazards
    return SimpleNamespace(trace=trace, upload=hazard.command_ids[-1])


@pytest.fixture(scope="module", params=["live", "saved"])
def traced(request, live, tmp_path_factory):
    if request.param == "live":
        return live
    path = live.trace.save(tmp_path_factory.mktemp("hostile") / "hostile.lnbtrace")
    return SimpleNamespace(trace=AnalyzedTrace.load(path), upload=live.upload)


def outside_scripts(page: str) -> str:
    return SCRIPT.sub("", page)


def check_scripts_end_where_they_should(page: str) -> None:
    """No script's content can start a comment or another script, so each ends at its own
    ``</script>``: the page has exactly the scripts it wrote."""
    for content in SCRIPT.findall(page):
        assert "<!--" not in content and "<script" not in content.lower()
        assert "\u2028" not in content and "\u2029" not in content
    assert len(SCRIPT.findall(page)) == page.lower().count("<script")


def test_the_report_holds_names_as_text(traced):
    page = report_html(traced.trace)
    check_scripts_end_where_they_should(page)
    visible = outside_scripts(page)
    for name in NAMES.values():
        assert name not in page
    for kind in ("buffer", "array", "stream"):
        assert escape(NAMES[kind]) in visible, kind


def test_the_notebook_views_hold_names_as_text(traced):
    fragment = trace_fragment(traced.trace)
    check_scripts_end_where_they_should(fragment)
    summary = TraceSummary(traced.trace)._repr_html_()
    assert "<script" not in summary and "<!--" not in summary
    for kind in ("buffer", "array", "stream"):
        assert escape(NAMES[kind]) in outside_scripts(fragment), kind
        assert escape(NAMES[kind]) in summary, kind


def test_the_compare_table_and_a_diff_view_hold_names_as_text():
    names = (f"reference {HOSTILE}", f"actual {HOSTILE}")
    runs = [Run(config, {NAMES["array"]: np.arange(4.0) + i}) for i, config in enumerate(names)]
    table = ViewableComparison(runs)._repr_html_()
    assert "<script" not in table and "<!--" not in table
    assert escape(NAMES["array"]) in table and escape(names[1]) in table
    view = DiffView(np.zeros(4), np.ones(4), names=names, title=NAMES["array"])._repr_html_()
    check_scripts_end_where_they_should(view)
    assert escape(NAMES["array"]) in outside_scripts(view)


def test_a_lone_surrogate_in_a_name_shows_as_a_replacement_character(tmp_path):
    """A name read from a file may hold one; no UTF-8 page and no font can."""
    device = lnb.create_device("cpu")
    buffer = device.create_buffer(16, np.float32, name="half \udc80 a pair")
    stream = device.create_stream(name="stream \ud800")
    with AnalyzedTrace() as trace:
        buffer.copy_from(np.zeros(16, np.float32), sync=True, stream=stream)
    saved = trace.save(tmp_path / "surrogates.lnbtrace")
    page = write_report(saved, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "half \ufffd a pair" in page and "stream \ufffd" in page


def test_renderers_never_parse_html():
    """The ES modules (sources and bundles) put every text in with textContent, never as
    markup."""
    for module in STATIC.rglob("*.js"):
        source = module.read_text(encoding="utf-8")
        assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", source)


def test_a_saved_trace_keeps_the_names_and_findings(live, tmp_path):
    loaded = AnalyzedTrace.load(live.trace.save(tmp_path / "hostile.lnbtrace"))
    assert {info.name for info in loaded.buffers.values()} == {NAMES["buffer"]}
    assert NAMES["stream"] in {info.name for info in loaded.streams.values()}
    assert [r.name for r in loaded.ranges] == [NAMES["range"]]
    assert [h.message for h in loaded.hazards] == [h.message for h in live.trace.hazards]


# -- in a browser --------------------------------------------------------------------------

VISIBLE_TEXT = """() => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => node.parentElement.closest("script, style")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  const parts = [];
  while (walker.nextNode()) parts.push(walker.currentNode.textContent);
  return parts.join("\\n");
}"""


def open_page(browser, path):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.goto(path.as_uri())
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lnb-root')].every((r) => r.dataset.ready === '1')"
        " && document.querySelectorAll('.lnb-root').length > 0",
        timeout=20_000,
    )
    return page, errors


@pytest.mark.parametrize("view", ["report", "notebook"])
def test_every_script_runs_and_names_show_as_text(browser, traced, tmp_path, view):
    if view == "report":
        html = report_html(traced.trace)
    else:  # what a notebook shows below the cell: the summary, then the trace's HTML view
        summary = TraceSummary(traced.trace)._repr_html_()
        html = f"<!DOCTYPE html><meta charset='utf-8'>{summary}{trace_fragment(traced.trace)}"
    path = tmp_path / f"{view}.html"
    path.write_text(html, encoding="utf-8")
    page, errors = open_page(browser, path)
    try:
        assert page.evaluate("document.scripts.length") == html.lower().count("<script")
        timeline = "globalThis.__luisa_nb.timelines[0]"
        assert page.evaluate(f"{timeline}.stats.draws") > 0
        text = page.evaluate(VISIBLE_TEXT)
        for kind, name in NAMES.items():
            assert name in text, kind
        bar = page.evaluate(f"{timeline}.barRect({traced.upload})")
        canvas = page.locator(".lnb-timeline-canvas").bounding_box()
        page.mouse.move(canvas["x"] + bar["x"] + bar["w"] / 2, canvas["y"] + bar["y"] + 4)
        tooltip = page.locator(".lnb-tooltip").text_content()
        assert NAMES["buffer"] in tooltip and NAMES["array"] in tooltip
        assert page.locator(".lnb-tooltip script, .lnb-legend script").count() == 0
        assert errors == []
    finally:
        page.close()
