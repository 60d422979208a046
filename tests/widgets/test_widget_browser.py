"""The static pages in a real browser: Debian chromium driven by Playwright (Python).

Screenshots are saved under each test's tmp_path; their paths are printed (``-s``).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from helpers.browser import choose_hazard, missing_browser_reason
from helpers.synthetic import synthetic_trace

from luisa_nb.report import write_report
from luisa_nb.views.theme import KIND_COLOURS
from luisa_nb.widgets import DiffView
from luisa_nb.widgets.html_page import MODULE_TYPE, module_source, stylesheet

COLORS = {name: tuple(int(color[i : i + 2], 16) for i in (1, 3, 5)) for name, color in KIND_COLOURS}

if reason := missing_browser_reason():
    pytest.skip(reason, allow_module_level=True)


def screenshot(page, path: Path) -> None:
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")


def pixel(page, x: float, y: float) -> tuple[int, int, int]:
    return tuple(
        page.evaluate(
            """([x, y]) => {
              const canvas = document.querySelector('.lnb-timeline-canvas');
              const ratio = canvas.width / canvas.getBoundingClientRect().width;
              const context = canvas.getContext('2d');
              const [px, py] = [Math.round(x * ratio), Math.round(y * ratio)];
              const d = context.getImageData(px, py, 1, 1).data;
              return [d[0], d[1], d[2]];
            }""",
            [x, y],
        )
    )


def close_to(color, wanted, tolerance=6) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(color, wanted, strict=True))


def timeline(page, expression: str):
    return page.evaluate(
        f"() => {{ const t = globalThis.__luisa_nb.timelines[0]; return {expression}; }}"
    )


def click_canvas(page, x: float, y: float) -> None:
    box = page.locator(".lnb-timeline-canvas").bounding_box()
    page.mouse.click(box["x"] + x, box["y"] + y)


def test_seed_report_draws_lanes_arrow_and_links_selection(seed, open_page, tmp_path):
    report = write_report(seed.trace, tmp_path / "seed-report.html")
    page = open_page(report)
    timeline(page, "t.fit()")  # the page opens on the hazard; the whole trace is one click away
    stats = timeline(page, "t.stats")
    assert stats["laneRecords"] == [1, 5]  # host lane: the synchronize; stream: 5 commands
    assert stats["arrows"] == 1 and stats["markers"] == 3  # 2 host reads + 1 host write
    assert stats["firstDrawMs"] < 1000
    # the inspector opens on the hazard the timeline opens on, before any click
    page.wait_for_selector(f".lnb-inspector[data-command='{seed.upload}'] .lnb-diff")
    # every bar sits in its lane, in its kind's colour
    kinds = dict(
        zip(
            seed.ids,
            ["upload", "dispatch", "download", "upload", "copy", "synchronize"],
            strict=True,
        )
    )
    host_lane_bottom = 22 + 46
    for record_id, kind in kinds.items():
        box = timeline(page, f"t.barRect({record_id})")
        in_host_lane = box["y"] < host_lane_bottom
        assert in_host_lane == (kind == "synchronize"), (record_id, box)
        # left of the bar's label, if it has one
        inside = pixel(page, box["x"] + min(2, box["w"] / 2), box["y"] + box["h"] / 2)
        assert close_to(inside, COLORS[kind]), (record_id, kind, inside)
    red = page.evaluate(
        """() => {
          const canvas = document.querySelector('.lnb-timeline-canvas');
          const d = canvas.getContext('2d').getImageData(0, 22, canvas.width, 46).data;
          let count = 0;
          for (let i = 0; i < d.length; i += 4) {
            if (d[i] > 190 && d[i + 1] < 80 && d[i + 2] < 80) count++;
          }
          return count;
        }"""
    )
    assert red > 50, "the hazard arrow is drawn on the host lane"
    screenshot(page, tmp_path / "report-initial.png")

    # hover a bar: the tooltip names the record
    box = timeline(page, f"t.barRect({seed.upload})")
    canvas = page.locator(".lnb-timeline-canvas").bounding_box()
    page.mouse.move(canvas["x"] + box["x"] + box["w"] / 2, canvas["y"] + box["y"] + box["h"] / 2)
    tooltip = page.locator(".lnb-tooltip")
    assert tooltip.is_visible() and f"#{seed.upload} upload z <- z_data" in tooltip.inner_text()
    assert "host read" in tooltip.inner_text()

    # choose the hazard in the list: both commands selected, the inspector shows the bytes
    choose_hazard(page, 0)
    inspector = page.locator(".lnb-inspector")
    assert inspector.get_attribute("data-command") == str(seed.upload)
    rows = inspector.locator("tbody tr")
    first = [rows.nth(i).locator("td").all_inner_texts() for i in range(3)]
    assert [row[1:3] for row in first] == [
        ["0.0", "123.0"],
        ["1001.0", "123.0"],
        ["2002.0", "123.0"],
    ]
    assert "lnb-differs" in rows.nth(0).get_attribute("class")
    assert "1,024 of 1,024 elements differ" in inspector.inner_text()
    selected = page.locator(".lnb-table-row.lnb-selected").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.id))"
    )
    assert sorted(selected) == [seed.download, seed.upload]
    assert "lnb-selected" in page.locator(".lnb-hazard").get_attribute("class")
    screenshot(page, tmp_path / "report-hazard-selected.png")

    # click the dispatch bar: the hazard is dropped, the inspector has nothing to show
    box = timeline(page, f"t.barRect({seed.dispatch})")
    click_canvas(page, box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
    selected = page.locator(".lnb-table-row.lnb-selected").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.id))"
    )
    assert selected == [seed.dispatch]
    assert inspector.get_attribute("data-command") == ""
    assert "lnb-selected" not in page.locator(".lnb-hazard").get_attribute("class")

    # click the arrow itself: the hazard again
    point = timeline(page, "t.arrowPoint(0)")
    click_canvas(page, point["x"], point["y"])
    assert inspector.get_attribute("data-command") == str(seed.upload)

    # Ctrl + wheel zooms about the cursor, drag pans
    before = timeline(page, "t.view()")
    click_x = canvas["x"] + 600
    page.mouse.move(click_x, canvas["y"] + 10)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -400)
    page.keyboard.up("Control")
    page.wait_for_function(f"() => globalThis.__luisa_nb.timelines[0].view().t0 !== {before['t0']}")
    zoomed = timeline(page, "t.view()")
    assert zoomed["t1"] - zoomed["t0"] < 0.8 * (before["t1"] - before["t0"])
    page.mouse.move(click_x, canvas["y"] + 10)
    page.mouse.down()
    page.mouse.move(click_x - 200, canvas["y"] + 10, steps=4)
    page.mouse.up()
    panned = timeline(page, "t.view()")
    assert panned["t0"] > zoomed["t0"]
    assert page.errors == []


def test_live_paging_protocol_in_the_browser(open_page, tmp_path):
    """The diff module with no embedded values asks the kernel for pages: loaded and
    rendered as anywidget does (its default export, the stylesheet in the page), with a
    stand-in model that answers with the messages and buffers DiffView.page_message
    produces."""
    expected = np.arange(600, dtype=np.float32).reshape(20, 30)
    actual = expected.copy()
    actual[3, 4] = -1
    actual[19, 29] = np.nan
    view = DiffView(expected, actual, page_size=100)
    replies = {}
    for mode in ("all", "differing"):
        for number in range(view.summary["pages"][mode]):
            message, buffers = view.page_message({"type": "page", "mode": mode, "page": number})
            encoded = [base64.b64encode(b).decode() for b in buffers]
            replies[f"{mode}/{number}"] = {"message": message, "buffers": encoded}
    state = {"summary": view.summary, "heatmap": base64.b64encode(view.heatmap).decode()}
    page_text = f"""<!DOCTYPE html><html><head><style>{stylesheet()}</style></head><body>
<div class="lnb-root" id="root"><div id="mount"></div>
<script type="{MODULE_TYPE}" data-module="diff">{module_source("diff")}</script>
<script type="module">
const state = {json.dumps(state)};
const replies = {json.dumps(replies)};
const bytes = (text) => new DataView(Uint8Array.from(atob(text), (c) => c.charCodeAt(0)).buffer);
const handlers = {{}};
globalThis.sent = [];
const model = {{
  get: (key) => key === "heatmap" ? bytes(state.heatmap) : state[key],
  set() {{}}, save_changes() {{}},
  on: (name, f) => (handlers[name] = f), off() {{}},
  send(content) {{
    sent.push(content);
    const reply = replies[content.mode + "/" + content.page];
    const message = {{ ...reply.message, request: content.request }};
    setTimeout(() => handlers["msg:custom"](message, reply.buffers.map(bytes)), 5);
  }},
}};
const source = document.querySelector('script[data-module="diff"]').textContent;
const module = await import(URL.createObjectURL(new Blob([source], {{ type: "text/javascript" }})));
module.default.render({{ model, el: document.getElementById("mount") }});
document.getElementById("root").dataset.ready = "1";
</script></div></body></html>"""
    path = tmp_path / "live-diff.html"
    path.write_text(page_text, encoding="utf-8")
    page = open_page(path)
    diff = page.locator(".lnb-diff")
    page.wait_for_selector(".lnb-diff[data-rows='100']")
    assert "2 of 600 elements differ" in diff.inner_text()
    assert page.locator(".lnb-heatmap-canvas").count() == 1
    page.locator(".lnb-diff select").select_option("differing")
    page.wait_for_selector(".lnb-diff[data-mode='differing'][data-rows='2']")
    cells = diff.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.innerText))"
    )
    assert cells == [["(3, 4)", "94.0", "-1.0", "-95"], ["(19, 29)", "599.0", "nan", "nan"]]
    page.locator(".lnb-diff select").select_option("all")
    page.wait_for_selector(".lnb-diff[data-mode='all'][data-page='0']")
    page.click(".lnb-toolbar button:has-text('▶')")
    page.wait_for_selector(".lnb-diff[data-page='1']")
    assert diff.locator("tbody tr").first.get_attribute("data-index") == "100"
    assert [m["mode"] for m in page.evaluate("() => sent")] == ["all", "differing", "all", "all"]
    screenshot(page, tmp_path / "live-diff.png")
    assert page.errors == []


def test_hundred_thousand_commands_draw_in_under_a_second(open_page, tmp_path):
    report = write_report(synthetic_trace(100_000), tmp_path / "large.html")
    page = open_page(report, width=1600)
    first = timeline(page, "t.stats.firstDrawMs")  # the page opens on the first hazard
    stats = timeline(page, "(t.fit(), t.stats)")  # Fit draws every record
    assert stats["records"] == 100_001 and stats["arrows"] == 3
    assert max(first, stats["lastDrawMs"]) < 1000, stats
    assert stats["rects"] < 20_000, "zoomed out, bars are aggregated per pixel column"
    rows = page.locator(".lnb-table").get_attribute("data-rendered")
    assert int(rows) < 100, "the table renders only the rows in view"
    timeline(page, "t.setView(0, 10)")  # far from the hazards
    choose_hazard(page, 2)
    view = timeline(page, "t.view()")
    arrow = page.evaluate("() => globalThis.__luisa_nb.pages[0].selection.hazards[2].arrow")
    ends = sorted((arrow["from"]["time"], arrow["to"]["time"]))
    assert view["t0"] <= ends[0] and ends[1] <= view["t1"], "choosing a hazard brings it into view"
    assert timeline(page, "t.stats.arrows") >= 1
    screenshot(page, tmp_path / "large-hazard.png")
    assert page.errors == []
