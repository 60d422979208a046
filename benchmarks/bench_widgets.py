"""Timeline draw time in headless Chromium, light and dark, and bytes sent to the
browser per command.

    python benchmarks/bench_widgets.py [--counts 1000 10000 100000] [--repeats 3]

For each size, a synthetic trace (4 streams looping upload -> dispatch -> download, with
three stale uploads) goes through the same path as ``luisa-nb report``: view data ->
static page -> Chromium (Debian ``/usr/bin/chromium`` driven by Playwright, from a
``file://`` URL), once as written (light) and once with JupyterLab Dark's theme variables
on ``<body>`` (dark). The page reports, with ``performance.now()``:

- first draw: the timeline renderer's first draw (the view it opens on: the first
  hazard), as measured inside ``draw()``;
- to first draw: from navigation start to the end of that draw (parsing, base64 decoding,
  module loading included);
- fit draw, fit+frame: Fit (every record in view, aggregated per pixel column), inside
  ``draw()`` and until the next animation frame (rasterisation included);
- zoom, pan: the median over 20 steps (zooming in by 0.8 about the middle from the whole
  trace; panning by 2 % of the whole trace), inside ``draw()`` and until the next frame.

Bytes per command: the live widget's payload (packed columns + JSON summary) and the
static page's size, each divided by the number of commands. Needs Playwright (Python)
and Chromium; prints tables with ``timing.print_table`` and the load average.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from timing import load_average, print_table

from luisa_nb.report import report_html
from luisa_nb.views.timeline import BYTES_PER_RECORD, Analysis, build_timeline
from luisa_nb.widgets.pages import timeline_state

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.browser import launch_chromium  # the test suite's helpers
from helpers.synthetic import synthetic_trace

#: JupyterLab Dark's values of the theme variables the widgets follow.
DARK_BODY = (
    "--jp-layout-color0:#111111;--jp-layout-color1:#212121;--jp-layout-color2:#424242;"
    "--jp-layout-color3:#616161;--jp-ui-font-color1:rgba(255,255,255,0.87);"
    "--jp-ui-font-color2:rgba(255,255,255,0.54);--jp-border-color2:#424242;"
    "background:#111111;color:rgba(255,255,255,0.87)"
)
THEMES = ("light", "dark")
STEPS = 20

MEASURE = """async (steps) => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => done()));
  const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
  const entry = globalThis.__luisa_nb.timelines[0];
  const first = { ...entry.stats };
  await frame();
  let began = performance.now();
  entry.fit();
  await frame();
  const fitFrame = performance.now() - began;
  const fitted = { ...entry.stats };
  const whole = entry.view();
  const span = whole.t1 - whole.t0;
  const middle = (whole.t0 + whole.t1) / 2;
  const timed = async (views) => {
    const draws = [];
    const frames = [];
    for (const [t0, t1] of views) {
      began = performance.now();
      entry.setView(t0, t1);
      await frame();
      frames.push(performance.now() - began);
      draws.push(entry.stats.lastDrawMs);
    }
    return [median(draws), median(frames)];
  };
  const zooms = [];
  for (let k = 1; k <= steps; k++) {
    const half = (span * Math.pow(0.8, k)) / 2;
    zooms.push([middle - half, middle + half]);
  }
  const [zoomDraw, zoomFrame] = await timed(zooms);
  const pans = [];
  for (let k = 1; k <= steps; k++) {
    const shift = 0.02 * k * span;
    pans.push([whole.t0 + shift, whole.t1 + shift]);
  }
  const [panDraw, panFrame] = await timed(pans);
  return {
    first: first.firstDrawMs, toFirst: first.firstDrawnAt, fitDraw: fitted.lastDrawMs, fitFrame,
    zoomDraw, zoomFrame, panDraw, panFrame, records: fitted.records, rects: fitted.rects,
    arrows: fitted.arrows, decode: globalThis.__luisa_nb.pages[0].decodedMs,
  };
}"""


def measure_page(browser, path: Path, width: int) -> dict[str, float]:
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(path.as_uri())
    page.wait_for_selector(".lnb-root[data-ready='1']", timeout=60_000)
    page.wait_for_function(
        "() => globalThis.__luisa_nb?.timelines?.[0]?.stats.firstDrawMs !== null"
    )
    result = page.evaluate(MEASURE, STEPS)
    page.close()
    return result


def themed(page_text: str, theme: str) -> str:
    """The static page as written (light), or with JupyterLab Dark's variables on <body>."""
    if theme == "light":
        return page_text
    return page_text.replace("</head>", f"<style>body{{{DARK_BODY}}}</style></head>", 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3, help="page loads per size (median)")
    parser.add_argument("--width", type=int, default=1600, help="viewport width in pixels")
    arguments = parser.parse_args()
    from playwright.sync_api import sync_playwright

    rows, sizes = [], []
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        for count in arguments.counts:
            trace = synthetic_trace(count)
            began = time.perf_counter()
            analysis = Analysis.of(trace)
            analysis_seconds = time.perf_counter() - began
            data = build_timeline(trace, analysis)
            view_data_seconds = time.perf_counter() - began - analysis_seconds
            state, buffers = timeline_state(data)
            summary_bytes = len(json.dumps(state, separators=(",", ":")))
            live = summary_bytes + len(buffers["data"])
            began = time.perf_counter()
            page_text = report_html(trace)
            report_seconds = time.perf_counter() - began
            for theme in THEMES:
                path = Path(folder) / f"timeline-{count}-{theme}.html"
                path.write_text(themed(page_text, theme), encoding="utf-8")
                runs = [
                    measure_page(browser, path, arguments.width) for _ in range(arguments.repeats)
                ]

                def median(key: str, runs=runs) -> float:
                    return statistics.median(run[key] for run in runs)

                assert runs[0]["records"] == count + 1, runs[0]
                rows.append(
                    [
                        count,
                        theme,
                        median("first"),
                        median("toFirst"),
                        median("decode"),
                        median("fitDraw"),
                        median("fitFrame"),
                        median("zoomDraw"),
                        median("zoomFrame"),
                        median("panDraw"),
                        median("panFrame"),
                        int(runs[0]["rects"]),
                        int(runs[0]["arrows"]),
                    ]
                )
            sizes.append(
                [
                    count,
                    BYTES_PER_RECORD,
                    summary_bytes,
                    live / count,
                    len(page_text.encode()) / count,
                    analysis_seconds * 1000,
                    view_data_seconds * 1000,
                    report_seconds * 1000,
                ]
            )
        browser.close()
    print_table(
        f"Timeline in headless Chromium ({arguments.width} px wide, median of "
        f"{arguments.repeats} loads; zoom and pan: median of {STEPS} steps; ms; "
        f"{load_average()})",
        [
            "commands",
            "theme",
            "first draw",
            "to first draw",
            "decode",
            "fit draw",
            "fit+frame",
            "zoom draw",
            "zoom+frame",
            "pan draw",
            "pan+frame",
            "rects",
            "arrows",
        ],
        rows,
    )
    print_table(
        "Bytes sent to the browser per command",
        [
            "commands",
            "packed B/rec",
            "JSON B",
            "live B/cmd",
            "report B/cmd",
            "analysis ms",
            "view data ms",
            "report ms",
        ],
        sizes,
    )


if __name__ == "__main__":
    main()
