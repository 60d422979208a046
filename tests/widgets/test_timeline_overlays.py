"""The timeline's overlays and the command table's filter, range column and details, in
a static page in headless Debian chromium."""

from __future__ import annotations

import pytest
from helpers.browser import launch_chromium, missing_browser_reason
from helpers.streams import streams_trace

from luisa_nb.recording.naming import describe_sync
from luisa_nb.report import write_report
from luisa_nb.views.timeline import build_timeline

if reason := missing_browser_reason():
    pytest.skip(reason, allow_module_level=True)

# widgets.css: range colours by depth (--lnb-range-1, -2) and the compile blocks' (--lnb-compile)
RANGE_COLORS = [(0x8E, 0x44, 0xAD), (0x16, 0xA0, 0x85)]
COMPILE_COLOR = (0xF0, 0xA8, 0x30)


@pytest.fixture(scope="module")
def program():
    trace = streams_trace(pause=0.01)
    return trace, build_timeline(trace)


@pytest.fixture(scope="module")
def page(program, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    trace, _ = program
    report = write_report(trace, tmp_path_factory.mktemp("overlays") / "overlays.html")
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(report.as_uri())
        page.wait_for_selector(".lnb-root[data-ready='1']", timeout=20_000)
        page.errors = errors
        yield page
        browser.close()


def pixel(page, x: float, y: float) -> tuple[int, int, int]:
    return tuple(
        page.evaluate(
            """([x, y]) => {
              const canvas = document.querySelector('.lnb-timeline-canvas');
              const ratio = canvas.width / canvas.getBoundingClientRect().width;
              const d = canvas.getContext('2d')
                .getImageData(Math.floor(x * ratio), Math.floor(y * ratio), 1, 1).data;
              return [d[0], d[1], d[2]];
            }""",
            [x, y],
        )
    )


def colors_along(page, start: float, end: float, y: float) -> list[tuple[int, int, int]]:
    """The pixels at five points across the middle of the times ``[start, end]``, at ``y``
    (several, so that a grid line under one of them does not decide), with the timeline
    zoomed to show that span across half its width."""
    show(page, start, end)
    left, right = geometry(page, "[g.xOf(args[0]), g.xOf(args[1])]", start, end)
    return [pixel(page, left + (right - left) * k / 10, y) for k in (3, 4, 5, 6, 7)]


def show(page, start: float, end: float) -> None:
    """Zoom the timeline so that the times ``[start, end]`` fill half its width."""
    pad = (end - start) / 2
    page.evaluate(
        "([t0, t1]) => globalThis.__luisa_nb.timelines[0].setView(t0, t1)",
        [start - pad, end + pad],
    )


def drawn_along(page, start: float, end: float, y: float, color) -> bool:
    return any(close_to(found, color) for found in colors_along(page, start, end, y))


def geometry(page, expression: str, *arguments):
    """``expression`` evaluated with ``g``, the timeline's geometry, and ``args``."""
    return page.evaluate(
        f"(args) => {{ const g = globalThis.__luisa_nb.timelines[0].geometry(); "
        f"return {expression}; }}",
        list(arguments),
    )


def close_to(color, wanted, tolerance=8) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(color, wanted, strict=True))


def ids_of(trace, kind):
    return [r.id for r in trace.records if r.kind.value == kind]


def test_overlays_are_drawn_where_their_times_and_lanes_say(page, program):
    _, model = program
    summary = model.summary()
    stats = page.evaluate("() => globalThis.__luisa_nb.timelines[0].stats.overlays")
    assert stats["ranges"] == 2 and stats["lists"] == 1 and stats["links"] == 1
    assert stats["activity"] == len(summary["host_activity"])
    step, produce = summary["ranges"]

    # "produce" (depth 1) on the producer lane: a 2-pixel bracket 2 pixels below its top
    [(lane, start, end)] = produce["spans"]
    top = geometry(page, "g.laneTop(args[0])", lane)
    assert drawn_along(page, start, end, top + 3, RANGE_COLORS[1])
    # "step" (depth 0) on the consumer lane, at the lane's top
    lane, start, end = step["spans"][1]
    top = geometry(page, "g.laneTop(args[0])", lane)
    assert drawn_along(page, start, end, top + 1, RANGE_COLORS[0])
    # on the host lane, each range's row starts with a solid line over its host interval
    host_top = geometry(page, "g.laneTop(0)")
    for depth, item in enumerate((step, produce)):
        assert drawn_along(page, *item["host"], host_top + 1 + depth * 8, RANGE_COLORS[depth])
    # but not below the lane's top, where the lane's own background is
    assert not drawn_along(page, *step["host"], host_top + 30, RANGE_COLORS[0])

    # the widest compile block, at its right end on the host bars' bottom row
    block = max(
        (b for b in summary["host_activity"] if b["kind"] == "compile"),
        key=lambda b: b["end"] - b["start"],
    )
    show(page, block["start"], block["end"])
    right = geometry(page, "g.xOf(args[0])", block["end"])
    bar_y, bar_h = geometry(page, "g.barBox(0)")
    assert close_to(pixel(page, right - 2, bar_y + bar_h - 1), COMPILE_COLOR)

    # the command list's bracket: a dark line 3 pixels above the producer lane's bottom
    [bracket] = summary["lists"]
    bottom = geometry(page, "g.laneTop(1) + g.laneHeight(1)")
    colors = colors_along(page, bracket["start"], bracket["end"], bottom - 3)
    assert any(sum(color) < 400 for color in colors), colors

    # the event arrow, halfway from the signal to the wait, in the link colour (blue)
    [link] = summary["links"]
    show(page, link["from"]["time"], link["to"]["time"])
    middle = geometry(
        page,
        "[(g.xOf(args[0].time) + g.xOf(args[1].time)) / 2, "
        "(g.barBox(args[0].lane)[0] + g.barBox(args[0].lane)[1] / 2 "
        "+ g.barBox(args[1].lane)[0] + g.barBox(args[1].lane)[1] / 2) / 2]",
        link["from"],
        link["to"],
    )
    red, green, blue = pixel(page, *middle)
    assert blue > red + 40, (red, green, blue)
    assert page.errors == []


def filter_rows(page, text: str) -> None:
    """Type ``text`` into the table's filter and wait until the rows follow it."""
    page.locator(".lnb-table-search").fill(text)
    wanted = text.strip().lower()
    page.wait_for_function(
        "(wanted) => document.querySelector('.lnb-table').dataset.filter === wanted", arg=wanted
    )


def shown_ids(page):
    return page.locator(".lnb-table-body .lnb-table-row").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.id))"
    )


def test_filter_keeps_matching_rows_and_counts_them(page, program):
    trace, _ = program
    total = len(trace.records)
    filter_rows(page, "dispatch")
    assert shown_ids(page) == ids_of(trace, "dispatch")
    assert page.locator(".lnb-table-count").inner_text() == f"2 of {total}"
    filter_rows(page, "factor=2.0")  # a scalar argument in the dispatch's label
    assert shown_ids(page) == ids_of(trace, "dispatch")[:1]
    [download] = ids_of(trace, "download")
    filter_rows(page, f"#{download}")
    assert shown_ids(page) == [download]
    filter_rows(page, "PRODUCE")  # any case; the range "produce" holds the download and signal
    assert shown_ids(page) == sorted(
        [*ids_of(trace, "dispatch")[:1], download, *ids_of(trace, "signal"),
         *(s.id for s in trace.syncs if describe_sync(trace, s) == "synchronize producer")]
    )  # fmt: skip
    filter_rows(page, "")
    assert page.locator(".lnb-table-count").inner_text() == f"{total} of {total}"


def test_range_column_names_the_innermost_range(page, program):
    trace, _ = program
    filter_rows(page, "")
    ranges = dict(
        zip(
            shown_ids(page),
            page.locator(".lnb-table-body .lnb-table-range").all_inner_texts(),
            strict=True,
        )
    )
    [download], [wait] = ids_of(trace, "download"), ids_of(trace, "wait")
    assert ranges[download] == "produce" and ranges[wait] == "step"
    assert all(ranges[s.id] == "" for s in trace.syncs if s.kind.value == "synchronize")


def test_details_show_every_field_of_the_selected_record(page, program):
    trace, model = program
    [download] = ids_of(trace, "download")
    record = next(r for r in trace.records if r.id == download)
    filter_rows(page, f"#{download}")
    page.locator(".lnb-table-body .lnb-table-row").first.click()
    details = page.locator(".lnb-table-details")
    assert details.get_attribute("data-id") == str(download)
    fields = dict(
        zip(
            details.locator("dt").all_inner_texts(),
            details.locator("dd").all_inner_texts(),
            strict=True,
        )
    )
    row = int((model.columns["id"] == download).nonzero()[0][0])
    start = float(model.columns["start"][row])
    assert fields["record"] == f"#{download} download data -> result"
    assert fields["kind"] == "download"
    assert fields["stream"] == f"producer (stream {record.stream})"
    assert fields["submission"] == f"command list {record.submission}"
    assert fields["start"] == format_time(start)
    assert fields["device range"] == "read data (256 B at byte 0)"
    assert fields["host range"] == "result: 256 B of <f4 [64]"
    assert fields["host write"] == format_time(start + float(model.columns["host"][row]))
    assert fields["status"] == "ok"
    assert fields["range"] == "step \N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} produce"
    assert fields["hazards"] == "none"
    assert "error" not in fields
    assert page.errors == []


def format_time(us: float) -> str:
    """The table's time format."""
    scale = abs(us)
    if scale >= 1e6:
        return f"{us / 1e6:.3f} s"
    if scale >= 1e3:
        return f"{us / 1e3:.3f} ms"
    return f"{us:.{1 if scale >= 100 else 2}f} µs"
