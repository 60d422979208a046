"""Exports show the debugger everywhere: a notebook with the seed's trace viewer and a
``show(expected, actual)`` DiffView, executed with nbclient, then

- exported with nbconvert's ``HTMLExporter`` with and without stored widget state and
  opened from ``file://`` in headless chromium with every other request blocked: each
  view is drawn once, by the static twin, since the widget manager cannot load offline;
- opened with scripts off (what GitHub and an untrusted notebook show): the timeline is
  the fallback PNG figure, with lanes and the red hazard arrow;
- run live in JupyterLab (one copy of each view), then reopened untrusted there.
"""

from __future__ import annotations

import base64
import copy
import io
import re
from pathlib import Path

import numpy as np
import pytest
from helpers.browser import jupyter_lab, missing_browser_reason, run_all_cells

import luisa_nb as lnb
from luisa_nb.seed import run_seed
from luisa_nb.views.theme import HAZARD, KIND_COLOURS
from luisa_nb.views.timeline import build_timeline

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
nbconvert = pytest.importorskip("nbconvert")
pytest.importorskip("ipykernel", reason="ipykernel provides the python3 kernel")
pytest.importorskip("anywidget")
pytest.importorskip("matplotlib")

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
CELLS = [
    "import luisa_nb as lnb\n"
    "from luisa_nb.seed import expected_rows, run_seed\n\n"
    "seed = run_seed(lnb.create_device('cpu', staging='submit'))\n"
    "lnb.show(seed.trace)",
    "lnb.show(expected_rows(), seed.x)",
]
MISSING_BROWSER = missing_browser_reason()
MISSING_LAB = missing_browser_reason(lab=True)


def browser_test(test):
    """A test that drives chromium (marked ``browser``; skipped where it cannot run)."""
    skip = pytest.mark.skipif(MISSING_BROWSER is not None, reason=str(MISSING_BROWSER))
    return pytest.mark.browser(skip(test))


def _notebook():
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    return notebook


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook run top to bottom; nbclient stores the widget state, as
    ``jupyter nbconvert --execute`` does."""
    notebook = _notebook()
    folder = tmp_path_factory.mktemp("exports")
    nbclient.NotebookClient(
        notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": folder}}
    ).execute()
    nbformat.write(notebook, folder / "executed.ipynb")
    return notebook


@pytest.fixture(scope="module")
def exports(executed, tmp_path_factory) -> dict[str, Path]:
    """The executed notebook as nbconvert HTML, with and without its widget state."""
    folder = tmp_path_factory.mktemp("html")
    bare = copy.deepcopy(executed)
    bare.metadata.pop("widgets")
    paths = {}
    for name, notebook in (("with state", executed), ("without state", bare)):
        html, _ = nbconvert.HTMLExporter().from_notebook_node(notebook)
        paths[name] = folder / f"{name.replace(' ', '-')}.html"
        paths[name].write_text(html, encoding="utf-8")
    return paths


def _offline_page(browser, path: Path, *, scripts: bool = True):
    """A page of ``path`` where only ``file:``, ``data:`` and ``blob:`` URLs load; returns
    the page, the URLs it was refused and its uncaught errors."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 1000}, java_script_enabled=scripts
    )
    refused, errors = [], []

    def route(request_route):
        if request_route.request.url.startswith(("file:", "data:", "blob:")):
            request_route.continue_()
        else:
            refused.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    return page, refused, errors


def _outputs(cell, kind: str) -> list:
    if kind == "view":
        return [o for o in cell.outputs if WIDGET_VIEW in o.get("data", {})]
    return [o for o in cell.outputs if 'class="lnb-twin"' in o.get("data", {}).get("text/html", "")]


# -- what the kernel emits ------------------------------------------------------------------


def test_show_on_a_cells_last_line_displays_one_view(executed):
    for cell, text in zip(
        executed.cells,
        ["<TraceViewer: 5 commands, 1 sync points, 1 hazard(s)>", "<DiffView: 1024 of 1024"],
        strict=True,
    ):
        assert [o.output_type for o in cell.outputs] == ["display_data", "display_data"]
        (view,) = _outputs(cell, "view")
        (twin,) = _outputs(cell, "twin")
        model_id = view.data[WIDGET_VIEW]["model_id"]
        assert view.data["text/html"] == "" and view.data["text/plain"].startswith(text)
        assert f'data-lnb-twin="{model_id}"' in twin.data["text/html"]
        assert set(twin.data) == {"text/html"}  # a terminal prints the view's text once
        assert model_id in executed.metadata.widgets[WIDGET_STATE]["state"]


@pytest.mark.parametrize("after", ["", "\ndone = True"], ids=["last line", "not last"])
def test_show_displays_one_view_wherever_it_is_in_a_cell(ipython, after):
    code = "import numpy as np\nimport luisa_nb as lnb\nlnb.show(np.zeros(3), np.ones(3))"
    shown = ipython.run(code + after)
    assert shown.success, shown.stderr
    assert [WIDGET_VIEW in output for output in shown.outputs] == [True, False]
    assert 'class="lnb-twin"' in shown.outputs[1]["text/html"]
    assert "DiffView" not in shown.stdout  # no execute_result besides the display


def test_live_widget_modules_export_the_twin_hiding_render_only():
    """anywidget prefers a named ``render`` export to the default one: a widget's module
    exports only the default, whose render hides the static twins first."""
    from luisa_nb.widgets import CommandTableWidget, DiffView, HazardList, TimelineWidget

    views = {
        TimelineWidget: "timeline",
        CommandTableWidget: "table",
        HazardList: "hazards",
        DiffView: "diff",
    }
    for widget, view in views.items():
        assert re.findall(r"^export\b.*", widget._esm, re.MULTILINE) == ["export {"]
        exports = re.findall(r"^export \{([^}]*)\};", widget._esm, re.MULTILINE)
        assert [e.split() for e in exports] == [[f"{view}_default", "as", "default"]]
        assert "hideStaticTwins(props.model);" in widget._esm


def test_nbconvert_renders_the_widget_view_only_with_stored_state(exports):
    with_state = exports["with state"].read_text(encoding="utf-8")
    without_state = exports["without state"].read_text(encoding="utf-8")
    assert with_state.count(f'<script type="{WIDGET_VIEW}">') == 2
    assert without_state.count(f'<script type="{WIDGET_VIEW}">') == 0
    for page in (with_state, without_state):
        assert page.count('class="lnb-twin"') == 2
        assert page.count('data-lnb-view="timeline"') == 1


# -- nbconvert HTML, offline ----------------------------------------------------------------


@browser_test
@pytest.mark.parametrize("state", ["with state", "without state"])
def test_nbconvert_html_offline_shows_every_view_once(browser, exports, state):
    page, refused, errors = _offline_page(browser, exports[state])
    page.wait_for_selector(".lnb-timeline[data-draws]", timeout=30_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lnb-root')].every((r) => r.dataset.ready)",
        timeout=30_000,
    )
    viewer, diff = (page.locator(".jp-CodeCell").nth(i) for i in range(2))
    for cell, selector, count in [
        (viewer, ".lnb-timeline", 1),
        (viewer, ".lnb-hazards", 1),
        (viewer, ".lnb-table", 1),
        (diff, ".lnb-diff", 1),
        (diff, ".lnb-timeline", 0),
    ]:
        assert cell.locator(f"{selector} >> visible=true").count() == count, selector
    timeline = viewer.locator(".lnb-timeline")
    assert timeline.get_attribute("data-lane-records") == "[1,5]"
    assert timeline.get_attribute("data-arrows") == "1"
    assert viewer.locator(".lnb-hazards").get_attribute("data-count") == "1"
    rows = diff.locator(".lnb-diff tbody tr")
    assert rows.nth(0).locator("td").all_inner_texts()[1:3] == ["0.0", "123.0"]
    assert rows.nth(1).locator("td").all_inner_texts()[1:3] == ["1001.0", "123.0"]
    assert not [url for url in refused if url.startswith("file:")]
    assert any("html-manager" in url for url in refused) == (state == "with state")
    assert errors == []
    page.context.close()


# -- no scripts: the fallback figure --------------------------------------------------------


def _rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])


def _pixels_near(pixels: np.ndarray, colour: str, tolerance: int = 12) -> np.ndarray:
    return np.abs(pixels[..., :3].astype(int) - _rgb(colour)).max(axis=-1) <= tolerance


@browser_test
def test_exported_html_without_scripts_shows_the_figure(browser, exports):
    from matplotlib.image import imread

    page, refused, _ = _offline_page(browser, exports["without state"], scripts=False)
    viewer, diff = (page.locator(".jp-CodeCell").nth(i) for i in range(2))
    image = viewer.locator("img.lnb-fallback-image")
    assert image.count() == 1 and image.is_visible()
    assert image.evaluate("i => [i.complete, i.naturalWidth]") == [True, 960]
    assert viewer.locator(".lnb-timeline").count() == 0
    assert "STALE_UPLOAD" in viewer.inner_text()
    fallback_rows = diff.locator(".lnb-fallback-table tr")
    assert fallback_rows.nth(1).locator("td").all_inner_texts() == ["(0,)", "0.0", "123.0"]
    source = image.get_attribute("src")
    page.context.close()
    assert refused == [] and source.startswith("data:image/png;base64,")

    pixels = (imread(io.BytesIO(base64.b64decode(source.split(",", 1)[1]))) * 255).round()
    assert pixels.shape[1] == 960
    red = _pixels_near(pixels, HAZARD.light)
    assert red.sum() > 200  # the hazard arrow (and its legend line)
    colours = dict(KIND_COLOURS)
    rows = {name: np.flatnonzero(_pixels_near(pixels, colours[name]).sum(axis=1) > 20) for name in
            ("synchronize", "upload", "dispatch", "download", "copy")}  # fmt: skip
    assert all(found.size for found in rows.values()), rows
    # the host lane (the synchronize bar) sits above the stream lane, the arrow above both
    assert rows["synchronize"].min() < rows["dispatch"].min()
    assert np.flatnonzero(red.any(axis=1)).min() < rows["synchronize"].min()


def _arrows(axes) -> list:
    from matplotlib.patches import FancyArrowPatch

    return [patch for patch in axes.patches if isinstance(patch, FancyArrowPatch)]


def test_fallback_figure_has_an_axis_lane_labels_and_a_legend():
    from luisa_nb.views.figure import timeline_figure, timeline_figure_png

    data = build_timeline(run_seed(lnb.create_device("cpu", staging="submit")).trace)
    figure = timeline_figure(data)
    (axes,) = figure.axes
    assert [label.get_text() for label in axes.get_yticklabels()] == ["host", "default"]
    assert re.fullmatch(r"time since the trace started \((µs|ms)\)", axes.get_xlabel())
    (legend,) = figure.legends
    assert [text.get_text() for text in legend.get_texts()] == [
        "upload", "download", "copy", "dispatch", "synchronize",
        "host read", "host write", "hazard",
    ]  # fmt: skip
    assert len(_arrows(axes)) == 1
    png = timeline_figure_png(data)
    assert png == timeline_figure_png(data)
    assert b"tEXt" not in png and b"tIME" not in png  # no version, no time: reproducible


def test_fallback_figure_draws_per_pixel_column():
    from helpers.synthetic import synthetic_trace

    from luisa_nb.views.figure import COLUMNS, timeline_figure

    data = build_timeline(synthetic_trace(20_000, streams=4, stale=2))
    axes = timeline_figure(data).axes[0]
    bars, reads, writes = axes.collections
    assert len(bars.get_paths()) <= 5 * COLUMNS  # at most a bar per column per lane
    assert len(reads.get_offsets()) <= COLUMNS and len(writes.get_offsets()) <= COLUMNS
    assert len(_arrows(axes)) == 2  # the two stale uploads


def test_fallback_picture_without_matplotlib_is_a_note(monkeypatch):
    import builtins

    from luisa_nb.views.fallbacks import timeline_fallback, timeline_picture

    real_import = builtins.__import__

    def no_figure(name, *args, **kwargs):
        if name == "luisa_nb.views.figure":
            raise ImportError("no matplotlib here")
        return real_import(name, *args, **kwargs)

    data = build_timeline(run_seed(lnb.create_device("cpu", staging="submit")).trace)
    assert timeline_picture(data).startswith('<img class="lnb-fallback-image"')
    monkeypatch.setattr(builtins, "__import__", no_figure)
    assert timeline_picture(data) == (
        "<p class='lnb-note'>The picture of the timeline needs matplotlib (the "
        "<code>notebook</code> extra).</p>"
    )
    assert "around the first hazard, as the timeline opens; lanes from the top: host, default." in (
        timeline_fallback(data)
    )


def test_the_fallback_picture_opens_on_the_first_hazard_as_the_timeline_does():
    from helpers.synthetic import synthetic_trace

    from luisa_nb.seed import run_seed
    from luisa_nb.views.figure import opening_view, padded_extent
    from luisa_nb.views.timeline import build_timeline

    for trace in (
        run_seed(lnb.create_device("cpu", staging="submit")).trace,
        synthetic_trace(20_000, streams=4, stale=2),
    ):
        data = build_timeline(trace)
        low, high = opening_view(data)
        arrow = data.hazards[0]["arrow"]
        assert low <= min(arrow["from"]["time"], arrow["to"]["time"])
        assert max(arrow["from"]["time"], arrow["to"]["time"]) <= high
    whole = padded_extent(data)  # in a long trace, the hazard is a small part of it
    assert high - low < (whole[1] - whole[0]) / 2, "the hazard, not the whole trace"


# -- JupyterLab -----------------------------------------------------------------------------

VISIBLE_COUNTS = """() => {
  const count = (selector) => [...document.querySelectorAll(selector)]
    .filter((node) => node.getClientRects().length).length;
  return Object.fromEntries(
    [".lnb-timeline", ".lnb-table", ".lnb-hazards", ".lnb-diff", ".lnb-twin",
     ".lnb-fallback-image"].map((selector) => [selector, count(selector)]));
}"""


@pytest.mark.browser
@pytest.mark.skipif(MISSING_LAB is not None, reason=str(MISSING_LAB))
def test_jupyterlab_shows_one_copy_of_each_view(browser, executed, tmp_path):
    root = tmp_path / "lab"
    root.mkdir()
    nbformat.write(_notebook(), root / "live.ipynb")
    nbformat.write(executed, root / "saved.ipynb")
    settings = tmp_path / "settings"
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"windowingMode": "none"}')  # every cell's outputs in the page
    with jupyter_lab(root, settings=settings) as lab:
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        try:
            page = context.new_page()
            errors = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            run_all_cells(page, lab.url("lab/tree/live.ipynb"))
            page.wait_for_selector(".lnb-timeline[data-draws]", timeout=60_000)
            page.wait_for_selector(".lnb-diff tbody tr", timeout=60_000)
            page.wait_for_function(  # both widgets rendered live, both twins displayed
                "() => globalThis.__luisa_nb?.live?.size === 2 && "
                "document.querySelectorAll('.lnb-twin').length === 2",
                timeout=30_000,
            )
            # the viewer's inspector is a diff view too
            expected = {
                ".lnb-timeline": 1, ".lnb-table": 1, ".lnb-hazards": 1, ".lnb-diff": 2,
                ".lnb-twin": 0, ".lnb-fallback-image": 0,
            }  # fmt: skip
            assert page.evaluate(VISIBLE_COUNTS) == expected
            assert errors == []

            # saved by nbclient, so untrusted here: sanitised twins, no scripts
            page.goto(lab.url("lab/tree/saved.ipynb"), timeout=60_000)
            page.wait_for_selector("img.lnb-fallback-image", timeout=60_000)
            page.wait_for_function(
                "() => document.querySelectorAll('.lnb-twin').length === 2", timeout=30_000
            )
            shown = page.evaluate(VISIBLE_COUNTS)
            assert shown[".lnb-fallback-image"] == 1 and shown[".lnb-timeline"] == 0
            assert shown[".lnb-twin"] == 2
            texts = page.locator(".jp-OutputArea-output").all_inner_texts()
            assert not [text for text in texts if re.search(r"Error displaying widget", text)]
        finally:
            context.close()
