"""Timeline draw time in headless Chromium, and bytes sent to the browser per command.

    python benchmarks/bench_widgets.py [--counts 1000 10000 100000] [--repeats 3]

For each size, a synthetic trace (4 streams looping upload -> dispatch -> download, with
three stale uploads) goes through the same path as ``luisa-nb report``: view data ->
static page -> Chromium (Debian ``/usr/bin/chromium`` driven by Playwright, from a
``file://`` URL). The page reports, with ``performance.now()``:

- first draw: the timeline renderer's first full draw (all records in view, aggregated
  per pixel column), as measured inside ``draw()``;
- to first draw: from navigation start to the end of that draw (parsing, base64 decoding,
  module loading included);
- redraw + frame: a zoom to the middle tenth and back to the whole trace, each timed
  until the next animation frame (so rasterisation is included).

Bytes per command: the live widget's payload (packed columns + JSON summary) and the
static page's size, each divided by the number of commands. Needs Playwright (Python)
and Chromium; prints a table with ``timing.print_table``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from timing import print_table

from luisa_nb.report import report_html
from luisa_nb.widgets.model import BYTES_PER_RECORD, Analysis, build_timeline
from luisa_nb.widgets.pages import timeline_state

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.browser import launch_chromium  # the test suite's helpers
from helpers.synthetic import synthetic_trace


def measure_page(browser, path: Path, width: int) -> dict[str, float]:
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(path.as_uri())
    page.wait_for_selector(".lnb-root[data-ready='1']", timeout=60_000)
    page.wait_for_function(
        "() => globalThis.__luisa_nb?.timelines?.[0]?.stats.firstDrawMs !== null"
    )
    result = page.evaluate(
        """async () => {
          const frame = () => new Promise((done) => requestAnimationFrame(() => done()));
          const entry = globalThis.__luisa_nb.timelines[0];
          const stats = {...entry.stats};
          const whole = entry.view();
          const span = whole.t1 - whole.t0;
          await frame();
          let began = performance.now();
          entry.setView(whole.t0 + 0.45 * span, whole.t0 + 0.55 * span);
          await frame();
          const zoomed = performance.now() - began;
          began = performance.now();
          entry.setView(whole.t0, whole.t1);
          await frame();
          const full = performance.now() - began;
          return {
            first: stats.firstDrawMs, toFirst: stats.firstDrawnAt, zoomed, full,
            records: stats.records, rects: stats.rects, arrows: stats.arrows,
            decode: globalThis.__luisa_nb.pages[0].decodedMs,
          };
        }"""
    )
    page.close()
    return result


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
            model = build_timeline(trace, analysis)
            model_seconds = time.perf_counter() - began - analysis_seconds
            state, buffers = timeline_state(model)
            summary_bytes = len(json.dumps(state, separators=(",", ":")))
            live = summary_bytes + len(buffers["data"])
            began = time.perf_counter()
            page_text = report_html(trace)
            report_seconds = time.perf_counter() - began
            path = Path(folder) / f"timeline-{count}.html"
            path.write_text(page_text, encoding="utf-8")
            runs = [measure_page(browser, path, arguments.width) for _ in range(arguments.repeats)]

            def median(key: str, runs=runs) -> float:
                return statistics.median(run[key] for run in runs)

            assert runs[0]["records"] == count + 1, runs[0]
            rows.append(
                [
                    count,
                    median("first"),
                    median("toFirst"),
                    median("decode"),
                    median("zoomed"),
                    median("full"),
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
                    model_seconds * 1000,
                    report_seconds * 1000,
                ]
            )
        browser.close()
    print_table(
        f"Timeline in headless Chromium ({arguments.width} px wide, median of "
        f"{arguments.repeats} loads; ms)",
        [
            "commands",
            "first draw",
            "to first draw",
            "decode",
            "zoom+frame",
            "fit+frame",
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
            "model ms",
            "report ms",
        ],
        sizes,
    )


if __name__ == "__main__":
    main()
