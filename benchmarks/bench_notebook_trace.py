"""Wall time from running a ``%%luisa_trace`` cell to its drawn timeline, in JupyterLab.

    python benchmarks/bench_notebook_trace.py [--counts 1000 100000] [--hazards 20000]
                                              [--repeats 3] [--themes light dark]
                                              [--baseline PATH]

A notebook whose cells build N commands with the public API runs in JupyterLab (from
PyPI) driven by headless Debian chromium, in the light and the dark theme. Two kinds of
cell: "uploads" (a command list of N 4-element uploads and one synchronize, on the cpu
backend) and "hazards" (N/4 steps, each in its own ``lnb.range`` and command list: a
download into a host array and three uploads, the first of them from that array, with no
synchronize between: N commands, N/4 stale uploads at one place, N/4 ranges). The page
measures, on its own clock:

- run to drawn: from the ``execute_request`` leaving the page to the end of the first
  draw of the cell's timeline (``.lnb-timeline[data-draws]``): the cell's code, the trace
  analysis, the widget state crossing the kernel's socket and the first canvas draw;
- cell: from the request to the kernel's ``idle`` for it (the kernel side alone);
- first draw: the timeline renderer's own first ``draw()``;
- kernel CPU: the CPU seconds the kernel process spent on the cell (Linux ``/proc``),
  which the load of a shared machine changes far less than the wall times.

The kernel runs the luisa_nb of this checkout. With ``--baseline PATH`` (another checkout,
its C extensions built, e.g. ``git archive main`` unpacked), each theme is measured with
that one's first, then this one's, in the same run, and the table gives this checkout's
time as a ratio of the baseline's.

Needs JupyterLab, Playwright (Python) and chromium; prints a table with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
from timing import load_average, print_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.browser import jupyter_lab, launch_chromium  # the test suite's helpers

THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}

SETUP = "%load_ext luisa_nb\nimport numpy as np\nimport luisa_nb as lnb"
CELL = """%%luisa_trace --backend cpu
device = lnb.default_device()
small = np.arange(4, dtype=np.float32)
target = device.create_buffer(4, np.float32, name="target")
stream = device.default_stream
stream.submit([target.copy_from_async(small) for _ in range({count})])
stream.synchronize()"""
HAZARD_CELL = """%%luisa_trace --backend cpu:submit
device = lnb.default_device()
small = np.arange(4, dtype=np.float32)
history = np.zeros(4, np.float32)
source = device.create_buffer(4, np.float32, name="source")
target = device.create_buffer(4, np.float32, name="target")
stream = device.default_stream
for step in range({count} // 4):
    with lnb.range(f"step {{step}}"):
        stream.submit([source.copy_to_async(history), target.copy_from_async(history),
                       target.copy_from_async(small), target.copy_from_async(small)])
stream.synchronize()"""

# Runs the cell at ``index`` and resolves with the page's timings once its timeline drew.
RUN_AND_WAIT = """async (index) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session.kernel;
  const cell = panel.content.widgets[index];
  const marks = {};
  let request = null;
  const listener = (_, {msg, direction}) => {
    const type = msg.header.msg_type;
    if (direction === "send" && type === "execute_request" && request === null) {
      request = msg.header.msg_id;
      marks.sent = performance.now();
    } else if (direction === "recv" && msg.parent_header?.msg_id === request &&
               type === "status" && msg.content.execution_state === "idle") {
      marks.idle = performance.now();
    }
  };
  kernel.anyMessage.connect(listener);
  const drawn = new Promise((resolve) => {
    const check = () => {
      const timeline = cell.node.querySelector(".lnb-timeline[data-draws]");
      if (!timeline) return false;
      marks.drawn = performance.now();
      marks.firstDrawMs = Number(timeline.dataset.firstDrawMs);
      marks.records = Number(timeline.dataset.records);
      resolve();
      return true;
    };
    const observer = new MutationObserver(() => check() && observer.disconnect());
    observer.observe(cell.node, {childList: true, subtree: true, attributes: true,
                                 attributeFilter: ["data-draws"]});
  });
  panel.content.activeCellIndex = index;
  await window.jupyterapp.commands.execute("notebook:run-cell");
  await drawn;
  kernel.anyMessage.disconnect(listener);
  return marks;
}"""


def write_notebook(root: Path, cases: list[tuple[str, int]]) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    cells = [SETUP] + [
        (HAZARD_CELL if kind == "hazards" else CELL).format(count=count) for kind, count in cases
    ]
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path = root / "bench.ipynb"
    nbformat.write(notebook, path)
    return path


def settings_for(theme: str, folder: Path) -> Path:
    themes = folder / "@jupyterlab" / "apputils-extension"
    themes.mkdir(parents=True)
    (themes / "themes.jupyterlab-settings").write_text(json.dumps({"theme": THEMES[theme]}))
    tracker = folder / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    return folder


CHECKOUT = Path(__file__).resolve().parents[1]


def kernel_cpu(server_pid: int) -> float:
    """CPU seconds (user + system) of the processes the server started (its kernels) so
    far; NaN where ``/proc`` cannot say."""
    try:
        children = Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split()
        total = 0.0
        for pid in children:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")
    return total


@contextmanager
def kernel_code(path: Path) -> Iterator[None]:
    """Kernels started meanwhile import luisa_nb from the checkout at ``path``."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), before]))
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def measure(
    theme: str, cases: list[tuple[str, int]], repeats: int, code: Path = CHECKOUT
) -> list[list[object]]:
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory(prefix="lnb-bench-") as temp, kernel_code(code):
        root = Path(temp) / "lab"
        root.mkdir()
        notebook = write_notebook(root, cases)
        settings = settings_for(theme, Path(temp) / "settings")
        with jupyter_lab(root, settings=settings, timeout=90) as lab, sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(lab.url(f"lab/tree/{notebook.name}"), timeout=60_000)
            page.wait_for_function(
                "() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session"
                "?.kernel?.status === 'idle'",
                timeout=60_000,
            )
            page.evaluate(
                "() => { const p = window.jupyterapp.shell.currentWidget;"
                " p.content.activeCellIndex = 0;"
                " return window.jupyterapp.commands.execute('notebook:run-cell'); }"
            )
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.session"
                ".kernel.status === 'idle'"
            )
            for index, (kind, count) in enumerate(cases, start=1):
                runs, cpu = [], []
                for _ in range(repeats):
                    before = kernel_cpu(lab.process.pid)
                    runs.append(page.evaluate(RUN_AND_WAIT, index))
                    page.wait_for_function(  # the kernel's CPU counts up to its idle
                        "() => window.jupyterapp.shell.currentWidget.sessionContext.session"
                        ".kernel.status === 'idle'"
                    )
                    cpu.append(kernel_cpu(lab.process.pid) - before)
                drawn = [run["drawn"] - run["sent"] for run in runs]
                cell = [run["idle"] - run["sent"] for run in runs if "idle" in run]
                rows.append(
                    [
                        theme,
                        kind,
                        count,
                        runs[-1]["records"],
                        statistics.median(drawn),
                        min(drawn),
                        statistics.median(cell) if cell else float("nan"),
                        statistics.median(run["firstDrawMs"] for run in runs),
                        statistics.median(cpu) * 1000,
                    ]
                )
            browser.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 100000])
    parser.add_argument("--hazards", type=int, nargs="*", default=[20000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--themes", nargs="+", choices=list(THEMES), default=list(THEMES))
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="PATH",
        help="also measure the luisa_nb of the checkout at PATH, first, in the same run",
    )
    arguments = parser.parse_args()
    cases = [("uploads", count) for count in arguments.counts]
    cases += [("hazards", count) for count in arguments.hazards]
    codes = {"this": CHECKOUT}
    if arguments.baseline is not None:
        codes = {"baseline": arguments.baseline.resolve(), **codes}
    rows = []
    for theme in arguments.themes:
        for name, path in codes.items():
            rows += [[name, *row] for row in measure(theme, cases, arguments.repeats, path)]
    # the references: the first cell's run to drawn, in the same code, theme and run; and
    # the baseline's run to drawn of the same cell
    first = {(row[0], row[1]): row[5] for row in reversed(rows)}
    baseline = {tuple(row[1:4]): row[5] for row in rows if row[0] == "baseline"}
    print_table(
        f"%%luisa_trace cell to drawn timeline, JupyterLab + chromium, 1280 px "
        f"(median of {arguments.repeats}; ratio: run to drawn against the first cell's; "
        f"against baseline: against the baseline's run to drawn of the same cell; "
        f"{load_average()})",
        [
            "code",
            "theme",
            "cell",
            "commands",
            "records drawn",
            "run to drawn ms",
            "best ms",
            "cell ms",
            "first draw ms",
            "kernel CPU ms",
            "ratio",
            "against baseline",
        ],
        [
            [
                *row,
                row[5] / first[row[0], row[1]],
                row[5] / baseline[tuple(row[1:4])] if baseline else float("nan"),
            ]
            for row in rows
        ],
    )


if __name__ == "__main__":
    main()
