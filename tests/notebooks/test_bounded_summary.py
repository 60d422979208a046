"""The summary above a traced cell's viewer stays about one screen whatever the trace:
a few places with findings, "and N more" linking to the viewer's finding list, one
staged-vs-expected table."""

from __future__ import annotations

import re

import numpy as np

import luisa_nb as lnb
from luisa_nb.ipython.display import SUMMARY_FINDINGS, TraceSummary
from luisa_nb.widgets.viewer import TraceViewer


def _places(count: int, steps: int):
    """``count`` buffers, each uploaded ``steps`` times from an array just downloaded into,
    with no synchronize between: ``count`` places with ``steps`` stale uploads each."""
    device = lnb.create_device("cpu", staging="submit")
    source = device.create_buffer(4, np.float32, name="source")
    targets = [device.create_buffer(4, np.float32, name=f"t{index}") for index in range(count)]
    array = np.zeros(4, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        for target in targets:
            for _ in range(steps):
                stream.submit([source.copy_to_async(array), target.copy_from_async(array)])
        stream.synchronize()
    return trace


def test_the_summary_lists_a_few_places_and_links_to_the_rest():
    trace = _places(SUMMARY_FINDINGS + 4, steps=3)
    assert len(trace.findings) == SUMMARY_FINDINGS + 4
    assert len(trace.hazards) == 3 * (SUMMARY_FINDINGS + 4)
    viewer = TraceViewer(trace)
    html = TraceSummary(trace, commands=False, more_link=f"#{viewer.anchor}")._repr_html_()
    findings = html.split("lnb-ipython-staged")[0]
    assert findings.count("<tr>") == SUMMARY_FINDINGS + 1  # the header and the first places
    assert f"<a href='#{viewer.anchor}'>and 4 more findings</a>" in html
    assert f"{len(trace.hazards)} at {len(trace.findings)} places" in html
    assert len(re.findall("lnb-ipython-staged", html)) == 1, "one staged-vs-expected table"
    assert f'id="{viewer.anchor}"' in viewer._repr_html_(), "the twin's list is the target"
    assert viewer.hazard_list.anchor == viewer.anchor, "and so is the live list"
    text = repr(TraceSummary(trace, commands=False))
    assert "and 4 more (see the trace viewer)" in text
    assert text.count("fix:") == SUMMARY_FINDINGS


def test_the_staged_table_reads_expected_then_staged():
    trace = _places(1, steps=1)
    html = TraceSummary(trace, commands=False)._repr_html_()
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", html.split("lnb-ipython-staged")[1])
    assert headers == ["index", "expected", "staged"], "as the inspector shows them"


def test_a_large_trace_twin_holds_a_window_of_it():
    trace = _places(1, steps=1500)  # 3,000 records and a synchronize
    viewer = TraceViewer(trace)
    html = viewer._repr_html_()
    assert "This copy shows 2,000 of the 3,001 records" in html
    assert len(html) < 1_000_000
    assert viewer.timeline_data.count == 3001, "the widget holds every record"
