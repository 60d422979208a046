"""Commands of a runtime that reports no command times (real luisa-python) are drawn as
one block per command list, labelled so, in the view data, the matplotlib picture and the
browser's timeline; the mark survives a save and load. The trace here is luisa_nb's own,
its stream marked as such; tests/luisa checks that real luisa-python's streams are."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.recording.records import TIMES_NOT_REPORTED
from luisa_nb.views.timeline import build_timeline, windowed


@pytest.fixture(scope="module")
def trace():
    dev = lnb.create_device("cpu")
    stream = dev.create_stream("untimed")
    data = dev.create_buffer(256, np.float32, name="data")
    host = np.arange(256, dtype=np.float32)
    back = np.zeros(256, np.float32)
    with lnb.trace() as recorded:
        stream.submit([data.copy_from_async(host), data.copy_to_async(back)])
        stream.submit([data.copy_from_async(back)])
        stream.synchronize()
    recorded.streams[stream.id].times_reported = False
    return recorded


def test_each_list_is_one_block_spanning_its_commands(trace):
    data = build_timeline(trace)
    untimed_lane = next(n for n, lane in enumerate(data.lanes) if lane.get("times"))
    assert data.lanes[untimed_lane]["times"] == TIMES_NOT_REPORTED
    blocks = data.overlays["untimed"]
    assert [block["commands"] for block in blocks] == [2, 1]
    columns = data.columns
    for block in blocks:
        rows = (columns["lane"] == untimed_lane) & (columns["submission"] == block["submission"])
        starts = columns["start"][rows]
        ends = starts + columns["duration"][rows]
        assert np.allclose(starts, block["start"]) and np.allclose(ends, block["end"], atol=1e-2)
    assert data.summary()["untimed"] == blocks
    assert blocks[0] in windowed(data, 2).overlays["untimed"], "a static twin keeps them"


def test_a_timed_stream_has_no_blocks():
    dev = lnb.create_device("cpu")
    buffer = dev.create_buffer(16, np.float32)
    with lnb.trace() as timed:
        buffer.copy_from(np.ones(16, np.float32))
    data = build_timeline(timed)
    assert data.overlays["untimed"] == [] and not any("times" in lane for lane in data.lanes)


def test_the_mark_survives_save_and_load(trace, tmp_path):
    loaded = lnb.load_trace(trace.save(tmp_path / "untimed.lnbtrace"))
    assert [info.times_reported for info in loaded.streams.values()] == [
        info.times_reported for info in trace.streams.values()
    ]
    assert False in [info.times_reported for info in loaded.streams.values()]
    assert [b["commands"] for b in build_timeline(loaded).overlays["untimed"]] == [2, 1]


def test_arrow_has_no_start_or_finish_for_untimed_commands(trace):
    pytest.importorskip("pyarrow", reason="the Arrow table needs pyarrow (luisa_nb[data])")
    from luisa_nb.recording.frames import trace_arrow

    table = trace_arrow(trace).to_pydict()
    commands = [row for row, kind in enumerate(table["record"]) if kind == "command"]
    assert [table["times_reported"][row] for row in commands] == [False] * 3
    assert [table["started"][row] for row in commands] == [None] * 3
    assert all(table["enqueued"][row] is not None for row in commands)
    syncs = [row for row, kind in enumerate(table["record"]) if kind == "sync"]
    assert syncs and all(table["times_reported"][row] for row in syncs)


def test_the_picture_draws_and_names_the_blocks(trace):
    pytest.importorskip("matplotlib")
    from luisa_nb.views.figure import timeline_figure

    figure = timeline_figure(build_timeline(trace))
    [legend] = figure.legends
    assert TIMES_NOT_REPORTED in [text.get_text() for text in legend.get_texts()]
    [axes] = figure.axes
    labels = [text.get_text() for text in axes.texts]
    assert f"2 commands: {TIMES_NOT_REPORTED}" in labels


def test_the_browser_draws_a_block_per_list(trace, tmp_path):
    from helpers.browser import launch_chromium, missing_browser_reason

    if reason := missing_browser_reason():
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    from luisa_nb.report import write_report

    report = write_report(trace, tmp_path / "untimed.html")
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(report.as_uri())
        page.wait_for_selector(".lnb-root[data-ready='1']", timeout=20_000)
        drawn = page.evaluate("() => globalThis.__luisa_nb.timelines[0].stats.overlays.untimed")
        browser.close()
    assert drawn == 2
