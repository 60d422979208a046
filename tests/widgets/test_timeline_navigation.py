"""The timeline's navigation and theme, in headless Debian chromium on static pages: where
it opens, what Fit, the hazard list and the command table do to the view, which record
the pointer picks, wheel and keys, the ruler, bar labels, the legend, never-run and
failed commands, and readable colours in JupyterLab's dark theme."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.browser import choose_hazard, missing_browser_reason
from helpers.synthetic import synthetic_trace

from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.recording import (
    Access,
    BufferInfo,
    CommandKind,
    CommandRecord,
    DeviceRange,
    HostRange,
    Status,
    StreamInfo,
    SyncKind,
    SyncRecord,
)
from luisa_nb.report import write_report
from luisa_nb.views.theme import KIND_COLOURS
from luisa_nb.views.timeline import build_timeline

if reason := missing_browser_reason():
    pytest.skip(reason, allow_module_level=True)

LABEL_WIDTH = 120
AXIS_HEIGHT = 22
US = 1000
ORIGIN = 1_000_000_000
#: JupyterLab Dark's values of the theme variables the widgets follow.
DARK = {
    "--jp-layout-color0": "#111111",
    "--jp-layout-color1": "#212121",
    "--jp-layout-color2": "#424242",
    "--jp-layout-color3": "#616161",
    "--jp-ui-font-color0": "rgba(255, 255, 255, 1)",
    "--jp-ui-font-color1": "rgba(255, 255, 255, 0.87)",
    "--jp-ui-font-color2": "rgba(255, 255, 255, 0.54)",
    "--jp-border-color1": "#616161",
    "--jp-border-color2": "#424242",
    "--jp-brand-color1": "#1976d2",
    "--jp-error-color1": "#d32f2f",
    "--jp-warn-color1": "#f57c00",
    "--jp-warn-color3": "#e65100",
    "--jp-success-color1": "#388e3c",
}
DARK_BODY = "".join(f"{name}:{value};" for name, value in DARK.items())
DARK_BODY += "background:#111111;color:rgba(255,255,255,0.87);"
MINIMUM_CONTRAST = 4.5
KIND_RGB = {
    name: tuple(int(color[i : i + 2], 16) for i in (1, 3, 5)) for name, color in KIND_COLOURS
}


def handmade_trace() -> AnalyzedTrace:
    """Two streams. "main": upload x, dispatch, download into out, a 50 ns upload of out
    that read it at submission (a STALE_UPLOAD) and a copy right after it. "side": an
    upload, a failed dispatch, then two commands skipped. A host synchronize. Times in µs
    from the origin."""
    trace = AnalyzedTrace(capture="none")
    trace.metadata.started = ORIGIN
    for stream, name in enumerate(("main", "side")):
        trace.streams[stream] = StreamInfo(stream, "cpu", name)
        trace.buffers[stream + 1] = BufferInfo(stream + 1, 4096, "<f4", 1024, "cpu", name)
    x = HostRange(0x1000_0000, 4096, "<f4", (1024,), "x")
    out = HostRange(0x2000_0000, 4096, "<f4", (1024,), "out")
    y = HostRange(0x3000_0000, 4096, "<f4", (1024,), "y")

    def at(us: float | None) -> int | None:
        return None if us is None else ORIGIN + round(us * US)

    upload, dispatch, download, copy = (
        CommandKind.UPLOAD,
        CommandKind.DISPATCH,
        CommandKind.DOWNLOAD,
        CommandKind.COPY,
    )
    ok, failed, skipped = Status.OK, Status.FAILED, Status.SKIPPED
    rows = [  # id, kind, stream, submitted, started, finished, status, host, staging, host µs
        (1, upload, 0, 1, 2, 12, ok, x, "execute", 2),
        (2, dispatch, 0, 1, 12, 40, ok, None, "execute", None),
        (3, download, 0, 1, 40, 60, ok, out, "execute", 60),
        (4, upload, 0, 5, 60, 60.05, ok, out, "submit", 5),
        (5, copy, 0, 5, 60.05, 75, ok, None, "execute", None),
        (6, upload, 1, 2, 3, 10, ok, y, "execute", 3),
        (7, dispatch, 1, 2, 10, 14, failed, None, "execute", None),
        (8, download, 1, 5, None, None, skipped, y, "execute", None),
        (9, dispatch, 1, 6, None, None, skipped, None, "execute", None),
    ]
    for (
        record_id,
        kind,
        stream,
        submitted,
        started,
        finished,
        status,
        host,
        staging,
        touched,
    ) in rows:
        access = Access.READ if kind is download else Access.WRITE
        record = CommandRecord(
            id=record_id,
            seq=record_id,
            kind=kind,
            stream=stream,
            submission=1,
            index=record_id,
            label="step" if kind is dispatch else "",
            device_ranges=(DeviceRange(stream + 1, 0, 4096, access),),
            host=host,
            staging=staging,
            enqueued=at(submitted - 0.5),
            submitted=at(submitted),
            started=at(started),
            finished=at(finished),
            status=status,
        )
        if touched is not None and kind is upload:
            record.host_read = at(touched)
        elif touched is not None:
            record.host_write = at(touched)
        trace.add(record)
    host_wait = SyncRecord(10, 10, SyncKind.SYNCHRONIZE, None, issued=at(7), completed=at(76))
    host_wait.status = ok
    trace.add(host_wait)
    trace.metadata.stopped = at(76)
    return trace


@pytest.fixture(scope="module")
def reports(tmp_path_factory, seed, execute_seed):
    """Static pages, written once: name -> path."""
    folder = tmp_path_factory.mktemp("timeline-pages")
    pages = {
        "seed": write_report(seed.trace, folder / "seed.html"),
        "latent": write_report(execute_seed.trace, folder / "latent.html"),
        "handmade": write_report(handmade_trace(), folder / "handmade.html"),
        "synthetic": write_report(synthetic_trace(2000), folder / "synthetic.html"),
        "clean": write_report(synthetic_trace(200, stale=0), folder / "clean.html"),
    }
    light = pages["handmade"].read_text(encoding="utf-8")
    dark = light.replace("</head>", f"<style>body{{{DARK_BODY}}}</style></head>", 1)
    assert dark != light
    pages["handmade-dark"] = folder / "handmade-dark.html"
    pages["handmade-dark"].write_text(dark, encoding="utf-8")
    return pages


@pytest.fixture
def open_page(browser, reports):
    opened = []

    def open_(name: str, height: int = 900):
        page = browser.new_page(viewport={"width": 1280, "height": height})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.goto(reports[name].as_uri())
        page.wait_for_selector(".lnb-root[data-ready='1']", timeout=20_000)
        page.errors = errors
        opened.append(page)
        return page

    yield open_
    for page in opened:
        assert page.errors == []
        page.close()


def timeline(page, expression: str):
    return page.evaluate(
        f"() => {{ const t = globalThis.__luisa_nb.timelines[0]; return {expression}; }}"
    )


def canvas_box(page) -> dict:
    return page.locator(".lnb-timeline-canvas").bounding_box()


def hover(page, x: float, y: float) -> str:
    """Move the pointer to canvas point (x, y); the tooltip's text ("" when hidden)."""
    box = canvas_box(page)
    page.mouse.move(box["x"] + x, box["y"] + y)
    tooltip = page.locator(".lnb-tooltip")
    return tooltip.inner_text() if tooltip.is_visible() else ""


def pixels(page, x: float, y: float, w: float, h: float) -> list[tuple[int, int, int]]:
    """The RGB pixels of the canvas region (x, y, w, h), in CSS pixels."""
    flat = page.evaluate(
        """([x, y, w, h]) => {
          const canvas = document.querySelector('.lnb-timeline-canvas');
          const ratio = canvas.width / canvas.getBoundingClientRect().width;
          const d = canvas.getContext('2d').getImageData(
            Math.round(x * ratio), Math.round(y * ratio),
            Math.max(Math.round(w * ratio), 1), Math.max(Math.round(h * ratio), 1)).data;
          const out = [];
          for (let i = 0; i < d.length; i += 4) out.push(d[i], d[i + 1], d[i + 2]);
          return out;
        }""",
        [x, y, w, h],
    )
    return [tuple(flat[i : i + 3]) for i in range(0, len(flat), 3)]


def theme_rgb(page, key: str) -> tuple[int, int, int]:
    """The timeline's theme colour `key` (a --lnb-* property) as RGB."""
    return tuple(
        page.evaluate(
            """(key) => {
              const ctx = document.createElement('canvas').getContext('2d');
              ctx.fillStyle = globalThis.__luisa_nb.timelines[0].geometry().theme[key];
              ctx.fillRect(0, 0, 1, 1);
              return Array.from(ctx.getImageData(0, 0, 1, 1).data.slice(0, 3));
            }""",
            key,
        )
    )


def near(color, wanted, tolerance: int = 10) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(color[:3], wanted[:3], strict=True))


def luminance(rgb) -> float:
    def channel(value: float) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = rgb[:3]
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a, b) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def parse_color(text: str) -> tuple[float, float, float, float]:
    numbers = [float(n) for n in re.findall(r"[\d.]+", text)]
    if not text.startswith("rgb") or len(numbers) < 3:
        raise AssertionError(f"not a computed colour: {text!r}")
    return (*numbers[:3], numbers[3] if len(numbers) > 3 else 1.0)


def over(top, below) -> tuple[float, float, float]:
    alpha = top[3]
    return tuple(top[i] * alpha + below[i] * (1 - alpha) for i in range(3))


def text_contrast(page, selector: str) -> float:
    """The contrast of the first `selector` element's text against the backgrounds it is
    drawn on (its own and its ancestors', composited, white below all)."""
    colors = page.evaluate(
        """(selector) => {
          const node = document.querySelector(selector);
          const backgrounds = [];
          for (let e = node; e; e = e.parentElement) {
            backgrounds.push(getComputedStyle(e).backgroundColor);
          }
          return { text: getComputedStyle(node).color, backgrounds };
        }""",
        selector,
    )
    background = (255.0, 255.0, 255.0)
    for layer in reversed(colors["backgrounds"]):
        background = over(parse_color(layer), background)
    return contrast(over(parse_color(colors["text"]), background), background)


BACKGROUND_IS = """(rgb) => {
  const canvas = document.querySelector('.lnb-timeline-canvas');
  const ratio = canvas.width / canvas.getBoundingClientRect().width;
  const [x, y] = [Math.round(3 * ratio), Math.round(25 * ratio)];
  const d = canvas.getContext('2d').getImageData(x, y, 1, 1).data;
  return d[0] === rgb[0] && d[1] === rgb[1] && d[2] === rgb[2];
}"""


def screenshot(page, path: Path) -> None:
    page.locator(".lnb-timeline").screenshot(path=str(path))
    print(f"screenshot: {path}")


def inside(page, record_id: int) -> bool:
    """Whether record `record_id`'s bar lies in the plot, off its edges."""
    box = timeline(page, f"t.barRect({record_id})")
    plot_right = canvas_box(page)["width"]
    return box["x"] >= LABEL_WIDTH + 2 and box["x"] + box["w"] <= plot_right - 2


def arrow_share(page, index: int) -> float:
    """The hazard arrow's length as a share of the plot's width."""
    path = timeline(page, f"t.arrowPath({index})")
    return abs(path["x2"] - path["x1"]) / timeline(page, "t.geometry().plotWidth")


def covers_trace(page) -> bool:
    """Whether the view shows the whole trace."""
    view = timeline(page, "t.view()")
    first, last = timeline(page, "t.extent()")
    return view["t0"] <= first and last <= view["t1"]


def test_opens_on_the_first_hazard_and_fit_shows_everything(open_page):
    page = open_page("synthetic")
    hazard = page.evaluate("() => globalThis.__luisa_nb.pages[0].selection.hazards[0]")
    download, upload = hazard["command_ids"]
    assert inside(page, download) and inside(page, upload)
    assert arrow_share(page, 0) > 0.3, "the arrow is long enough to see at a glance"
    assert not covers_trace(page)
    opened = timeline(page, "t.stats.records")
    page.click(".lnb-timeline .lnb-toolbar button:has-text('Fit')")
    assert covers_trace(page)
    assert timeline(page, "t.stats.records") == 2001 > opened

    clean = open_page("clean")
    assert clean.evaluate("() => globalThis.__luisa_nb.pages[0].selection.hazards.length") == 0
    assert covers_trace(clean), "with no hazard, the timeline opens on the whole trace"


def test_choosing_a_hazard_or_a_command_brings_it_into_view(open_page, seed):
    page = open_page("synthetic")
    timeline(page, "t.setView(0, 5)")
    choose_hazard(page, 2)
    download, upload = page.evaluate(
        "() => globalThis.__luisa_nb.pages[0].selection.hazards[2].command_ids"
    )
    assert inside(page, download) and inside(page, upload)
    assert arrow_share(page, 2) > 0.3
    # when it is already comfortably in view, choosing it keeps the zoom
    shown = timeline(page, "t.view()")
    choose_hazard(page, 1)
    assert timeline(page, "t.view()") != shown
    span = shown["t1"] - shown["t0"]
    timeline(page, f"t.setView({shown['t0'] - 0.1 * span}, {shown['t1'] + 0.1 * span})")
    kept = timeline(page, "t.view()")
    choose_hazard(page, 2)
    assert timeline(page, "t.view()") == kept

    seed_page = open_page("seed")
    timeline(seed_page, "t.setView(t.stats.view.t1, t.stats.view.t1 + 1)")
    assert not inside(seed_page, seed.first_upload)
    seed_page.click(f".lnb-table-row[data-id='{seed.first_upload}']")
    assert inside(seed_page, seed.first_upload)
    assert timeline(seed_page, f"t.barRect({seed.first_upload}).w") >= 4


def test_hover_picks_the_bar_under_the_pointer(open_page, seed):
    page = open_page("handmade")
    box = timeline(page, "t.barRect(4)")  # the 50 ns stale upload, drawn 3 px wide
    assert box["w"] == 3, "narrower than a pixel at this zoom"
    middle = box["y"] + box["h"] / 2
    for dx in (-1, 0, 1):
        text = hover(page, box["x"] + box["w"] / 2 + dx, middle)
        assert text.startswith("#4 upload"), (dx, text)
    download = timeline(page, "t.barRect(3)")
    assert hover(page, download["x"] + download["w"] / 2, middle).startswith("#3 download")
    # the host read marker under the arrow's head is the upload's, the arrow's body the hazard
    head = timeline(page, "t.arrowPath(0)")
    text = hover(page, head["x2"], head["y2"])
    assert text.startswith("#4 upload") and "host read" in text, text
    point = timeline(page, "t.arrowPoint(0)")
    assert hover(page, point["x"], point["y"]).startswith("STALE_UPLOAD")

    seed_page = open_page("seed")
    box = timeline(seed_page, f"t.barRect({seed.upload})")
    text = hover(seed_page, box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
    assert text.startswith(f"#{seed.upload} upload z <- z_data"), text


def test_plain_wheel_scrolls_the_page_ctrl_wheel_zooms_shift_wheel_pans(open_page):
    page = open_page("seed", height=600)
    box = canvas_box(page)
    page.mouse.move(box["x"] + 700, box["y"] + 40)
    before = timeline(page, "t.view()")
    pointer = timeline(page, "t.stats.cursor.x")
    anchor = timeline(page, f"t.geometry().timeOf({pointer})")
    page.keyboard.down("Control")
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    page.wait_for_function(f"() => globalThis.__luisa_nb.timelines[0].view().t0 !== {before['t0']}")
    zoomed = timeline(page, "t.view()")
    assert zoomed["t1"] - zoomed["t0"] < 0.7 * (before["t1"] - before["t0"])
    assert timeline(page, f"t.geometry().timeOf({pointer})") == pytest.approx(anchor)

    page.keyboard.down("Shift")
    page.mouse.wheel(0, 200)
    page.keyboard.up("Shift")
    page.wait_for_function(f"() => globalThis.__luisa_nb.timelines[0].view().t0 !== {zoomed['t0']}")
    panned = timeline(page, "t.view()")
    assert panned["t0"] > zoomed["t0"]
    assert panned["t1"] - panned["t0"] == pytest.approx(zoomed["t1"] - zoomed["t0"])

    assert page.evaluate("() => window.scrollY") == 0
    page.mouse.wheel(0, 250)
    page.wait_for_function("() => window.scrollY > 0")
    assert timeline(page, "t.view()") == panned, "a plain wheel is the page's"


def test_keys_zoom_pan_and_fit_when_focused(open_page):
    page = open_page("seed")
    frame = page.locator(".lnb-timeline-frame")
    assert frame.get_attribute("tabindex") == "0"
    hint = page.locator(".lnb-timeline .lnb-hint")
    assert all(key in hint.inner_text() for key in ("W/S", "A/D", "F"))
    start = timeline(page, "t.view()")
    page.keyboard.press("w")
    assert timeline(page, "t.view()") == start, "keys act only when the timeline has focus"
    frame.focus()
    assert page.evaluate("() => document.activeElement.className") == "lnb-timeline-frame"
    assert frame.evaluate("e => getComputedStyle(e).outlineStyle") != "none"

    def span(view):
        return view["t1"] - view["t0"]

    page.keyboard.press("w")
    zoomed = timeline(page, "t.view()")
    assert span(zoomed) == pytest.approx(0.75 * span(start))
    page.keyboard.press("s")
    assert span(timeline(page, "t.view()")) == pytest.approx(span(start))
    page.keyboard.press("d")
    right = timeline(page, "t.view()")
    assert right["t0"] - start["t0"] == pytest.approx(0.2 * span(start))
    page.keyboard.press("a")
    assert timeline(page, "t.view()")["t0"] == pytest.approx(start["t0"])
    page.keyboard.press("f")
    assert covers_trace(page)
    page.keyboard.press("w")
    page.keyboard.press("w")
    assert not covers_trace(page)
    page.keyboard.press("0")
    assert covers_trace(page)


def test_ruler_cursor_and_axis(open_page):
    page = open_page("seed")
    box = canvas_box(page)
    view = timeline(page, "t.view()")
    per_pixel = (view["t1"] - view["t0"]) / timeline(page, "t.geometry().plotWidth")
    hover(page, 600, 40)
    cursor = timeline(page, "t.stats.cursor")
    assert abs(cursor["x"] - 600) <= 1
    assert cursor["time"] == pytest.approx(view["t0"] + (cursor["x"] - LABEL_WIDTH) * per_pixel)
    assert cursor["text"].endswith(("ms", "µs"))

    page.keyboard.down("Shift")
    page.mouse.move(box["x"] + 400, box["y"] + 60)
    page.mouse.down()
    page.mouse.move(box["x"] + 700, box["y"] + 60, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    measure = timeline(page, "t.stats.measure")
    assert measure["duration"] == pytest.approx(300 * per_pixel, rel=0.01)
    assert measure["text"].startswith("Δ ")
    assert timeline(page, "t.view()") == view, "measuring does not pan"
    page.keyboard.press("Escape")
    assert timeline(page, "t.stats.measure") is None

    ruler = page.locator(".lnb-timeline .lnb-toolbar button:has-text('Ruler')")
    ruler.click()
    assert ruler.get_attribute("aria-pressed") == "true"
    page.mouse.move(box["x"] + 300, box["y"] + 60)
    page.mouse.down()
    page.mouse.move(box["x"] + 500, box["y"] + 60, steps=4)
    page.mouse.up()
    assert timeline(page, "t.stats.measure.duration") == pytest.approx(200 * per_pixel, rel=0.01)

    # deep in, tick labels still differ from one another
    centre = (view["t0"] + view["t1"]) / 2
    timeline(page, f"t.setView({centre}, {centre + 0.002})")
    labels = timeline(page, "t.stats.axis")
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels


def test_bars_carry_their_text_when_wide_enough(open_page):
    page = open_page("handmade")
    model = build_timeline(handmade_trace())
    labelled = {item["id"]: item["text"] for item in timeline(page, "t.stats.labelled")}
    assert {2, 3, 5} <= set(labelled) and 4 not in labelled
    for record_id, text in labelled.items():
        full = model.description(record_id).split(" ", 1)[1]
        assert text == full or (text.endswith("…") and full.startswith(text[:-1])), text
    assert labelled[3] == "download main -> out"
    timeline(page, "t.setView(35, 37)")  # inside the dispatch: its text from the plot's edge
    assert timeline(page, "t.stats.labelled") == [{"id": 2, "text": "dispatch step(main)"}]
    box = timeline(page, "t.barRect(2)")
    box["x"], box["w"] = LABEL_WIDTH, 100
    region = pixels(page, box["x"] + 4, box["y"] + 3, min(box["w"] - 8, 60), box["h"] - 6)
    ink = [p for p in region if contrast(p, KIND_RGB["dispatch"]) > 3]
    assert len(ink) > 20, "text drawn on the bar, readable on its colour"

    many = open_page("synthetic")
    timeline(many, "t.setView(0, 30)")
    assert timeline(many, "t.stats.labels") > 0
    timeline(many, "t.fit()")
    assert timeline(many, "t.stats.labels") == 0, "no text on bars too narrow for it"


def test_legend_lists_every_mark_drawn(open_page):
    page = open_page("handmade")
    marks = page.locator(".lnb-timeline .lnb-legend [data-mark]").evaluate_all(
        "items => items.map(i => [i.dataset.mark, i.textContent])"
    )
    assert [mark for mark, _ in marks] == [
        "kind:upload",
        "kind:download",
        "kind:copy",
        "kind:dispatch",
        "kind:synchronize",
        "host-read",
        "host-write",
        "failed",
        "not-run",
        "hazard",
    ]
    assert dict(marks)["not-run"] == "skipped (did not run)"
    assert dict(marks)["host-read"] == "▼host read"

    latent = open_page("latent")
    marks = latent.locator(".lnb-timeline .lnb-legend [data-mark]").evaluate_all(
        "items => items.map(i => i.dataset.mark)"
    )
    assert "latent" in marks and "hazard" not in marks and "failed" not in marks
    swatch = latent.locator(".lnb-legend [data-mark='latent'] svg").evaluate(
        "e => getComputedStyle(e).color"
    )
    amber, red = theme_rgb(latent, "latent"), theme_rgb(latent, "hazard")
    assert not near(amber, red, 40)
    assert near(parse_color(swatch), amber, 1)
    point = timeline(latent, "t.arrowPoint(0)")
    drawn = pixels(latent, point["x"] - 2, point["y"] - 2, 5, 5)
    assert any(near(p, amber) for p in drawn), "the arrow in the latent colour"
    assert not any(near(p, red, 40) for p in drawn)


def test_failed_and_never_run_commands(open_page):
    model = build_timeline(handmade_trace())
    row = {int(record_id): index for index, record_id in enumerate(model.columns["id"])}
    start, duration = model.columns["start"], model.columns["duration"]
    failed_end = start[row[7]] + duration[row[7]]
    assert start[row[8]] == pytest.approx(failed_end), "where it stands in its stream"
    assert start[row[9]] == pytest.approx(failed_end)
    assert duration[row[8]] == 0

    page = open_page("handmade")
    timeline(page, "t.setView(0, 20)")
    failed = timeline(page, "t.barRect(7)")
    skipped = timeline(page, "t.barRect(8)")
    assert skipped["x"] + skipped["w"] / 2 == pytest.approx(failed["x"] + failed["w"], abs=1.5)
    text = hover(page, skipped["x"] + 1, skipped["y"] + skipped["h"] / 2)
    assert text.startswith("#8 download") and "did not run" in text, text
    stripe = pixels(page, failed["x"] + failed["w"] / 2, failed["y"] + 1, 1, 1)[0]
    assert near(stripe, theme_rgb(page, "hazard"), 2), "a failed bar has a red stripe on top"
    body = pixels(page, failed["x"] + 2, failed["y"] + failed["h"] - 3, 1, 1)[0]
    assert near(body, KIND_RGB["dispatch"], 2)
    # a skipped one is outlined and hatched: its kind's colour and the background alternate
    region = set(pixels(page, skipped["x"], skipped["y"], skipped["w"], skipped["h"]))
    assert any(near(p, KIND_RGB["download"], 2) for p in region)
    assert any(near(p, theme_rgb(page, "bg"), 30) for p in region)


def test_dark_theme_canvas_and_controls_are_readable(open_page, tmp_path):
    page = open_page("handmade-dark")
    background = pixels(page, 3, AXIS_HEIGHT + 3, 1, 1)[0]
    assert background == (17, 17, 17), "the canvas is drawn on the theme's background"
    for what, region in {
        "lane label": (4, AXIS_HEIGHT + 10, 60, 26),
        "axis text": (LABEL_WIDTH + 2, 0, 1000, AXIS_HEIGHT - 4),
        "records count": (4, 0, 100, AXIS_HEIGHT - 2),
    }.items():
        best = max(contrast(p, background) for p in pixels(page, *region))
        assert best >= MINIMUM_CONTRAST, (what, best)
    for selector in (
        ".lnb-timeline .lnb-toolbar button",
        ".lnb-timeline .lnb-legend span",
        ".lnb-timeline .lnb-hint",
    ):
        assert text_contrast(page, selector) >= MINIMUM_CONTRAST, selector
    box = timeline(page, "t.barRect(t.stats.labelled[0].id)")
    text = pixels(page, box["x"] + 4, box["y"] + 3, min(box["w"] - 8, 50), box["h"] - 6)
    kind = pixels(page, box["x"] + 1, box["y"] + box["h"] / 2, 1, 1)[0]
    assert max(contrast(p, kind) for p in text) >= 3, "bar text readable on the kind colour"

    # a live switch: the light page turns dark and the canvas follows
    light = open_page("handmade")
    assert pixels(light, 3, AXIS_HEIGHT + 3, 1, 1)[0] == (255, 255, 255)
    draws = timeline(light, "t.stats.draws")
    light.evaluate(f"() => document.body.setAttribute('style', {DARK_BODY!r})")
    light.wait_for_function(f"() => globalThis.__luisa_nb.timelines[0].stats.draws > {draws}")
    assert pixels(light, 3, AXIS_HEIGHT + 3, 1, 1)[0] == (17, 17, 17)
    # back to light, then dark again the way JupyterLab does it: a stylesheet in <head>
    light.evaluate("() => document.body.removeAttribute('style')")
    light.wait_for_function(BACKGROUND_IS, arg=[255, 255, 255], timeout=5000)
    light.evaluate(
        """(css) => {
          const sheet = document.createElement('style');
          sheet.textContent = css;
          document.head.append(sheet);
        }""",
        f"body{{{DARK_BODY}}}",
    )
    light.wait_for_function(BACKGROUND_IS, arg=[17, 17, 17], timeout=5000)
    for name, shown in (("light", light), ("dark", page)):
        screenshot(shown, tmp_path / f"timeline-{name}.png")
