"""Readable in any theme, on a laptop screen: the live widgets, a comparison table and
the IPython extension's hazard table in real JupyterLab (light, then dark, one server
and one page), and the static report under a dark colour-scheme preference, at 1280 px.
Text contrast is measured from computed styles (WCAG 2: at least 4.5 : 1 against the
background the text is drawn on)."""

from __future__ import annotations

import nbformat
import pytest
from helpers.browser import jupyter_lab, launch_chromium, missing_browser_reason, open_lab_notebook

from luisa_nb.report import write_report

if reason := missing_browser_reason(lab=True):
    pytest.skip(reason, allow_module_level=True)

WIDTH = 1280
THEMES = ("JupyterLab Light", "JupyterLab Dark")
MINIMUM_CONTRAST = 4.5
WHAT_CHARACTERS = 30
"""The command table's "what" column (the only one naming arrays) shows at least this
many characters of the trace's own descriptions ("dispatch vecadd(z, x, y) [1024]")."""

VIEWER_CELL = """\
import luisa_nb as lnb
from luisa_nb.widgets import DiffView, TraceViewer
viewer = TraceViewer(lnb.load_trace("seed.lnbtrace"))
viewer"""

DIFF_CELL = """\
import numpy as np
from luisa_nb.ipython.display import HazardTable
display(HazardTable(viewer.analysis.findings))
DiffView(np.arange(8.0), np.array([0.0, 1.0, 9.0, 3.0, 4.0, 7.0, 6.0, 7.0]), title="diff")"""

COMPARE_CELL = """\
from luisa_nb.seed import run_seed

def seed_program(device):
    run = run_seed(device)
    return {"z_data": run.z_data, "x": run.x}

lnb.compare(seed_program, ["cpu:execute", "cpu:submit"], trace=False)"""

#: What must be readable: name -> (selector, only elements with a background of their own).
TEXTS = {
    "hazard message": (".lnb-hazard-message", False),
    "hazard kind": (".lnb-hazard-title b", False),
    "command table": (".lnb-table-row span", False),
    "timeline buttons": (".lnb-timeline .lnb-toolbar button", False),
    "inspector headers": (".lnb-diff .lnb-values th", False),
    "differing values (DiffView)": (".lnb-diff tr.lnb-differs td", False),
    "differing values (comparison)": (".lnb-compare td", True),
    "verdicts": (".lnb-bad, .lnb-good, .lnb-latent", False),
    "comparison verdicts and hazards": (".lnb-compare td span, .lnb-compare li span", False),
    "hazard table of the IPython extension": (".lnb-ipython-hazards td", False),
}

CONTRAST = """([texts, marked]) => {
  const parse = (text) => {
    const m = /rgba?\\(([^)]*)\\)/.exec(text || "");
    if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => {
    const a = top[3] + bottom[3] * (1 - top[3]);
    if (a === 0) return [0, 0, 0, 0];
    const mix = (k) => (top[k] * top[3] + bottom[k] * bottom[3] * (1 - top[3])) / a;
    return [mix(0), mix(1), mix(2), a];
  };
  const background = (node) => {
    const layers = [];
    for (let n = node; n; n = n.parentElement) {
      const colour = parse(getComputedStyle(n).backgroundColor);
      if (colour[3] > 0) layers.push(colour);
      if (colour[3] >= 1) break;
    }
    return layers.reduceRight((below, layer) => over(layer, below), [255, 255, 255, 1]);
  };
  const luminance = ([r, g, b]) => {
    const linear = (c) => (c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  };
  const results = {};
  for (const [name, selector] of Object.entries(texts)) {
    let worst = null;
    let count = 0;
    for (const node of document.querySelectorAll(selector)) {
      if (!node.textContent.trim() || !node.getBoundingClientRect().width) continue;
      if (marked.includes(name) && parse(getComputedStyle(node).backgroundColor)[3] === 0) continue;
      let alpha = 1;
      for (let n = node; n; n = n.parentElement) alpha *= Number(getComputedStyle(n).opacity);
      const behind = background(node);
      const text = parse(getComputedStyle(node).color);
      const shown = over([text[0], text[1], text[2], text[3] * alpha], behind);
      const [light, dark] = [luminance(shown), luminance(behind)].sort((a, b) => b - a);
      const ratio = (light + 0.05) / (dark + 0.05);
      count += 1;
      if (!worst || ratio < worst.ratio) {
        worst = {
          ratio: Math.round(ratio * 100) / 100,
          text: node.textContent.trim().slice(0, 40),
          color: getComputedStyle(node).color,
          background: `rgb(${behind.slice(0, 3).map(Math.round).join(", ")})`,
        };
      }
    }
    results[name] = { count, worst };
  }
  return results;
}"""

WHAT_WIDTH = """() => {
  const cell = document.querySelector(".lnb-table-header span:last-child");
  const box = cell.getBoundingClientRect();
  let [left, right] = [Math.max(box.left, 0), Math.min(box.right, window.innerWidth)];
  for (let n = cell.parentElement; n; n = n.parentElement) {
    if (getComputedStyle(n).overflowX === "visible") continue;
    const clip = n.getBoundingClientRect();
    left = Math.max(left, clip.left + n.clientLeft);
    right = Math.min(right, clip.left + n.clientLeft + n.clientWidth);
  }
  const context = document.createElement("canvas").getContext("2d");
  const texts = [...document.querySelectorAll(".lnb-table-body .lnb-table-row span:last-child")];
  context.font = getComputedStyle(texts[0]).font;
  const characters = texts.map((node) => node.textContent).join("");
  const average = context.measureText(characters).width / characters.length;
  return Math.max(right - left, 0) / average;
}"""

KIND_COLOURS = """() => {
  const colour = (selector) => {
    const node = document.querySelector(selector);
    return node ? getComputedStyle(node).color : null;
  };
  const property = (name) => {
    const probe = document.createElement("span");
    probe.style.color = `var(${name})`;
    document.querySelector(".lnb-hazards").append(probe);
    const value = getComputedStyle(probe).color;
    probe.remove();
    return value;
  };
  return {
    "hazard list": colour(".lnb-hazard-title b"),
    "hazard table of the IPython extension": colour(".lnb-ipython-hazards td span"),
    "--lnb-hazard": property("--lnb-hazard"),
    "--lnb-latent": property("--lnb-latent"),
  };
}"""

RUN_ALL = """async () => {
  const notebook = window.jupyterapp.shell.currentWidget;
  await notebook.context.ready;
  await notebook.sessionContext.ready;
  void window.jupyterapp.commands.execute("notebook:run-all-cells");
}"""

CHANGE_THEME = "theme => void window.jupyterapp.commands.execute('apputils:change-theme', {theme})"


def _notebook(root) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(c) for c in (VIEWER_CELL, DIFF_CELL, COMPARE_CELL)]
    nbformat.write(notebook, root / "themes.ipynb")


def _open_and_run(page, url: str) -> None:
    open_lab_notebook(page, url)
    page.evaluate(RUN_ALL)
    page.wait_for_selector(".lnb-timeline[data-draws]", timeout=60_000)
    page.wait_for_selector(".lnb-compare td", timeout=60_000)
    page.click(".lnb-hazard[data-hazard-index='0']")  # fills the inspector through the kernel
    page.wait_for_function(
        "document.querySelectorAll('.lnb-diff tr.lnb-differs').length >= 2", timeout=30_000
    )
    page.mouse.move(1, 1)


def _measure(page) -> dict:
    texts = {name: selector for name, (selector, _) in TEXTS.items()}
    marked = [name for name, (_, own) in TEXTS.items() if own]
    return {
        "contrast": page.evaluate(CONTRAST, [texts, marked]),
        "what": page.evaluate(WHAT_WIDTH),
        "kinds": page.evaluate(KIND_COLOURS),
    }


@pytest.fixture(scope="module")
def measured(tmp_path_factory, seed, execute_seed) -> dict:
    """Contrast, the "what" column's width and the hazard kinds' colours, per theme, in one
    JupyterLab page; the same for the static report under a dark colour-scheme preference,
    and the kinds' colours in the report of a trace with a latent stale upload."""
    from playwright.sync_api import sync_playwright

    root = tmp_path_factory.mktemp("themes")
    seed.trace.save(root / "seed.lnbtrace")
    _notebook(root)
    report = write_report(seed.trace, root / "report.html")
    latent = write_report(execute_seed.trace, root / "latent.html")
    results = {}
    with jupyter_lab(root) as server, sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": WIDTH, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        _open_and_run(page, server.url("lab/tree/themes.ipynb"))
        for theme in THEMES:
            page.evaluate(CHANGE_THEME, theme)
            page.wait_for_function(
                "theme => document.body.dataset.jpThemeName === theme", arg=theme, timeout=30_000
            )
            page.wait_for_timeout(800)  # the theme's stylesheet applies
            results[theme] = _measure(page)
            shot = root / f"{theme.replace(' ', '-').lower()}.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot: {shot}")
        page.set_viewport_size({"width": 1400, "height": 900})
        page.wait_for_timeout(500)
        results["1400"] = _measure(page)
        static = browser.new_page(viewport={"width": WIDTH, "height": 900}, color_scheme="dark")
        static.goto(report.as_uri())
        static.wait_for_selector(".lnb-root[data-ready='1']", timeout=20_000)
        static.click(".lnb-hazard[data-hazard-index='0']")
        static.wait_for_selector(".lnb-diff tr.lnb-differs", timeout=20_000)
        static.mouse.move(1, 1)
        results["static"] = _measure(static)
        static.goto(latent.as_uri())
        static.wait_for_selector(".lnb-root[data-ready='1']", timeout=20_000)
        results["latent"] = static.evaluate(KIND_COLOURS)
        browser.close()
    assert errors == []
    return results


# The static report has no comparison table and no IPython table.
READABLE = [
    (theme, text)
    for theme in [*THEMES, "static"]
    for text in TEXTS
    if theme != "static" or ("comparison" not in text and "IPython" not in text)
]


@pytest.mark.parametrize(("theme", "text"), READABLE)
def test_text_is_readable_in_each_theme(measured, theme, text):
    found = measured[theme]["contrast"][text]
    assert found["count"], f"nothing matched {TEXTS[text][0]!r} in {theme}"
    assert found["worst"]["ratio"] >= MINIMUM_CONTRAST, f"{text} in {theme}: {found['worst']}"


@pytest.mark.parametrize("where", [THEMES[0], "1400", "static"])
def test_what_column_is_visible_on_a_laptop_screen(measured, where):
    assert measured[where]["what"] >= WHAT_CHARACTERS, measured[where]["what"]


@pytest.mark.parametrize("theme", THEMES)
def test_a_stale_upload_is_red_in_every_view(measured, theme):
    kinds = measured[theme]["kinds"]
    views = ("hazard list", "hazard table of the IPython extension")
    assert {kinds[view] for view in views} == {kinds["--lnb-hazard"]}, kinds
    assert kinds["--lnb-hazard"] != kinds["--lnb-latent"]


def test_a_latent_stale_upload_is_amber(measured):
    kinds = measured["latent"]
    assert kinds["hazard list"] == kinds["--lnb-latent"] != kinds["--lnb-hazard"], kinds
