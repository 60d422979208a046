"""The IPython extension in a real ``InteractiveShell``: the magics, what they display,
their errors, and unloading."""

from __future__ import annotations

import html

import pytest
from notebook_support import EXTENSION, SEED_CELL, WIRED

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.analysis.comparison import Comparison
from luisa_nb.ipython import display as extension_display
from luisa_nb.ipython.state import STATE, last_trace
from luisa_nb.recording import recorder
from luisa_nb.views.theme import MARK_BG, MARK_FG, MARK_STYLE

pytest.importorskip("IPython")


def test_ipython_seed_trace_shows_the_stale_upload(ipython):
    before = lnb.default_device()
    shown = ipython.run("%%luisa_trace --backend cpu --staging submit\n" + SEED_CELL)
    assert shown.success, shown.stdout + shown.stderr
    trace = last_trace()
    assert [h.kind for h in trace.hazards] == [HazardKind.STALE_UPLOAD]
    stale = trace.hazards[0]
    assert html.escape(stale.message) in shown.html
    assert html.escape(stale.fix) in shown.html
    assert f"upload #{stale.command_ids[-1]} staged <b>1024</b> element(s)" in shown.html
    assert "STALE_UPLOAD" in shown.plain
    # the cell ran on a new cpu device with staging="submit"; the default came back after
    assert ipython.user_ns["dev"].staging == "submit"
    assert lnb.default_device() is before
    assert ipython.user_ns["x"].numpy()[0] == 123.0
    if extension_display.trace_viewer() is not None:
        assert len(shown.outputs) >= 2  # the summary, then the widgets' trace viewer


def test_ipython_trace_without_widgets_shows_the_command_table(ipython, monkeypatch):
    monkeypatch.setattr(extension_display, "trace_viewer", lambda: None)
    shown = ipython.run("%%luisa_trace --backend cpu --staging submit\n" + SEED_CELL)
    assert "lnb-ipython-commands" in shown.html
    assert "download z -&gt; z_data" in shown.html
    assert ">written<" in shown.html and ">read<" in shown.html


def test_ipython_trace_hands_the_trace_to_the_viewer(ipython, monkeypatch):
    seen = []
    monkeypatch.setattr(
        extension_display,
        "trace_viewer",
        lambda: lambda trace, anchor: seen.append((trace, anchor)),
    )
    shown = ipython.run("%%luisa_trace --backend cpu --staging submit\n" + SEED_CELL)
    ((trace, anchor),) = seen
    assert trace is last_trace()
    assert anchor.startswith("lnb-findings-")
    assert "lnb-ipython-commands" not in shown.html  # the viewer replaces the command table
    assert "STALE_UPLOAD" in shown.html


def test_ipython_trace_help_lists_the_options(ipython):
    for query in ("%luisa_trace?", "%%luisa_trace?"):
        shown = ipython.run(query)
        options = ("--backend NAME", "--staging", "--token", "--capture", "--save PATH", "submit")
        for option in options:
            assert option in shown.stdout, (query, shown.stdout)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("%%luisa_trace --backend cdu", "did you mean 'cpu'?"),
        ("%%luisa_trace --staging sumbit", "argument --staging: invalid choice: 'sumbit'"),
        ("%%luisa_trace --capture most", "argument --capture: invalid choice"),
        ("%%luisa_trace --frobnicate", "unrecognized arguments: --frobnicate"),
        ("%%luisa_trace --save /no/such/folder/t.lnbtrace", "does not exist"),
        ("%%luisa_compare cpu:execute", "two or more configurations"),
        ("%%luisa_compare cpu:execute cpu:sumbit", "did you mean cpu:submit?"),
        ("%%luisa_compare cpu:execute gpu:submit", "no backend named 'gpu'"),
        ("%luisa_device cdu", "did you mean 'cpu'?"),
        ("%luisa_device cpu --staging later", "invalid choice: 'later'"),
        ("%luisa_device cpu:later", "'later' is not a staging policy"),
        ("%luisa_device cpu --token secret", "backend 'cpu' does not take these options"),
        ("%luisa_device remote://127.0.0.1:1", "remote://127.0.0.1:1 needs token=..."),
        ("%%luisa_trace --backend cpu-submit", "no backend named 'cpu-submit'"),
        ("%%luisa_compare cpu:execute cpu:submit --token secret", "--token is for remote://"),
        ("%luisa_hazards no_such_variable", "is not a variable holding a luisa_nb trace"),
    ],
)
def test_ipython_bad_arguments_are_one_line_usage_errors(ipython, line, message):
    ipython.user_ns.pop("cell_ran", None)
    code = line + ("\ncell_ran = True" if line.startswith("%%") else "")
    shown = ipython.run(code)
    assert not shown.success
    assert shown.stderr.startswith("UsageError: "), shown.stderr
    assert message in shown.stderr
    assert "Traceback" not in shown.stdout + shown.stderr
    assert "cell_ran" not in ipython.user_ns


def test_ipython_a_user_exception_looks_normal_and_the_trace_closes(ipython):
    shown = ipython.run(
        "%%luisa_trace --backend cpu\n"
        "import numpy as np\n"
        "import luisa_nb as lnb\n"
        "buffer = lnb.default_device().create_buffer(4, np.float32, name='buffer')\n"
        "buffer.fill(1.0)\n"
        "raise ValueError('boom from the cell')"
    )
    assert not shown.success
    assert "ValueError" in shown.stdout and "boom from the cell" in shown.stdout
    assert "luisa_nb/ipython" not in shown.stdout  # no frame of the extension
    assert shown.stdout.count("Traceback") == 1 and "CellError" not in shown.stdout
    error = ipython.shell.last_execution_result.error_in_exec
    assert type(error) is ValueError and str(error) == "boom from the cell"  # the cell's own
    assert recorder.active_trace() is None
    assert "fill buffer" in shown.html  # what ran before the exception is shown
    after = ipython.run("with lnb.trace() as t:\n    buffer.fill(2.0)\nlen(t.commands)")
    assert after.success, after.stdout
    assert "1" in after.stdout


def test_ipython_a_failed_command_shows_the_users_lines_and_the_command(ipython):
    """No frame of luisa_nb's runtime, backends or kernels: the cell's line, then one
    message naming the command that failed."""
    shown = ipython.run(
        "%%luisa_trace --backend cpu\n"
        "import numpy as np\n"
        "import luisa_nb as lnb\n"
        "from luisa_nb.kernels import dispatch_id\n"
        "@lnb.kernel\n"
        "def overrun(a):\n"
        "    a.write(dispatch_id().x + 100, 1.0)\n"
        "target = lnb.default_device().create_buffer(16, np.float32, name='target')\n"
        "overrun(target, dispatch_size=16)\n"
        "lnb.default_device().synchronize()"
    )
    assert not shown.success
    output = shown.stdout + shown.stderr
    lines = output.split("trace of ")[0].strip().splitlines()
    assert not [line for line in lines if "luisa_nb" + "/" in line and "File" in line]
    assert "lnb.default_device().synchronize()" in output
    failure = [line for line in lines if line.startswith("luisa_nb.errors.CommandFailedError")]
    assert len(failure) == 1 and "(dispatch overrun[16]) failed on stream" in failure[0]
    assert "writes index 100 of buffer 'a'" in failure[0]
    assert "The above exception" not in output
    assert len(lines) <= 8, lines


def test_ipython_compare_has_help_as_a_line_magic(ipython):
    """``%luisa_compare?`` finds the magic; as a line it says how to use the cell form."""
    helped = ipython.run("%luisa_compare?")
    assert "Run the cell once per configuration" in helped.stdout, helped.stdout
    shown = ipython.run("%luisa_compare cpu dx")
    assert not shown.success and "%%luisa_compare is a cell magic" in shown.stderr


def test_ipython_a_line_traces_one_statement(ipython):
    ipython.run("import numpy as np\nimport luisa_nb as lnb\nh = np.ones(8, np.float32)")
    statement = "b = lnb.default_device().create_buffer(8, np.float32); b.copy_from(h)"
    shown = ipython.run(f"%luisa_trace --backend dx --staging execute  {statement}")
    assert shown.success, shown.stdout + shown.stderr
    assert len(last_trace().commands) == 1
    assert "on dx, staging=execute" in shown.html
    missing = ipython.run("%luisa_trace --backend cpu")
    assert "needs a statement" in missing.stderr


def test_ipython_trace_save(ipython, tmp_path):
    path = tmp_path / "seed.lnbtrace"
    shown = ipython.run(f"%%luisa_trace --backend cpu --staging submit --save {path}\n" + SEED_CELL)
    assert f"trace saved to {path}" in shown.stdout
    assert [h.kind for h in lnb.load_trace(path).hazards] == [HazardKind.STALE_UPLOAD]


def test_ipython_no_magic_inside_an_open_trace(ipython):
    with lnb.trace():
        shown = ipython.run("%%luisa_trace\n1")
    assert "a trace is already recording" in shown.stderr


def test_ipython_device_magic_sets_the_default_device(ipython):
    shown = ipython.run("%luisa_device dx --staging execute")
    assert shown.success, shown.stderr
    device = lnb.default_device()
    assert (device.name, device.staging) == ("dx", "execute")
    assert "lnb.default_device() is now <Device 'dx' staging='execute'>" in shown.stdout
    assert "simulation of LuisaCompute's DX12 backend" in shown.stdout
    assert "<Device 'dx'" in ipython.run("%luisa_device").stdout
    shown = ipython.run("%luisa_device metal:submit")
    assert shown.success, shown.stderr
    assert (lnb.default_device().name, lnb.default_device().staging) == ("metal", "submit")


def test_ipython_compare_stops_at_a_run_that_raises_with_the_cells_error(ipython):
    shown = ipython.run(
        "%%luisa_compare cpu:execute cpu:submit\n"
        "import numpy as np\n"
        "import luisa_nb as lnb\n"
        "buffer = lnb.default_device().create_buffer(4, np.float32, name='buffer')\n"
        "buffer.fill(1.0)\n"
        "raise KeyError('boom under compare')"
    )
    assert not shown.success
    assert shown.stdout.count("Traceback") == 1 and "CellError" not in shown.stdout
    assert type(ipython.shell.last_execution_result.error_in_exec) is KeyError
    assert "cpu:execute: trace of 1 command" in shown.plain  # the failed run's trace
    assert "cpu:submit" not in shown.plain
    assert recorder.active_trace() is None


def test_ipython_compare_marks_the_arrays_that_differ(ipython):
    shown = ipython.run("%%luisa_compare cpu:execute cpu:submit\n" + SEED_CELL)
    assert shown.success, shown.stdout + shown.stderr
    comparison = STATE.last_comparison
    assert comparison.configs == ["cpu:execute", "cpu:submit"]
    x, z_data = comparison.difference("x"), comparison.difference("z_data")
    assert (x.equal, x.differing, x.size) == (False, 1024, 1024)
    assert z_data.equal
    assert comparison.difference("y").equal
    assert [h.kind for h in comparison.run("cpu:submit").trace.hazards] == [HazardKind.STALE_UPLOAD]
    assert "1024 of 1024 differ" in shown.html
    assert "cpu:submit: <span style='color:var(--lnb-ok,#2e7d32)'>equal</span>" in shown.html
    assert "x [cpu:submit vs cpu:execute]: 1024 of 1024 elements differ" in shown.plain
    if extension_display.diff_view_class() is not None:  # one DiffView each for x and z
        views = [o for o in shown.outputs if "application/vnd.jupyter.widget-view+json" in o]
        assert len(views) == 2


def test_ipython_compare_shows_a_diff_view_per_differing_array(ipython, monkeypatch):
    made = []

    class FakeDiffView:
        def __init__(self, expected, actual, *, names, title):
            made.append((expected[:2].tolist(), actual[:2].tolist(), names, title))

        def _repr_html_(self):
            return "<p>fake diff view</p>"

    monkeypatch.setattr(extension_display, "diff_view_class", lambda: FakeDiffView)
    monkeypatch.setattr(extension_display, "DIFF_VIEWS", 1)
    shown = ipython.run("%%luisa_compare cpu:execute cpu:submit\n" + SEED_CELL)
    assert made == [
        (
            [0.0, 1001.0],
            [123.0, 123.0],
            ("cpu:execute", "cpu:submit"),
            "x: cpu:submit against cpu:execute",
        )
    ]
    assert "<p>fake diff view</p>" in shown.html
    assert "1 more differing array(s): see the table above" in shown.stdout


def test_ipython_hazards_magic_shows_a_table(ipython):
    ipython.run("%%luisa_trace --backend cpu --staging submit\n" + SEED_CELL)
    shown = ipython.run("%luisa_hazards")
    assert shown.success
    assert "<table" in shown.html
    for header in ("kind", "commands", "message", "fix"):
        assert f">{header}</th>" in shown.html
    stale = last_trace().hazards[0]
    assert " → ".join(f"#{i}" for i in stale.command_ids) in shown.html
    assert f"fix: {stale.fix}" in shown.plain
    ipython.user_ns["saved"] = last_trace()
    assert "hazards of saved" in ipython.run("%luisa_hazards saved").html


def test_ipython_a_trace_as_the_last_expression_is_shown(ipython):
    shown = ipython.run(
        "import numpy as np\nimport luisa_nb as lnb\n"
        "b = lnb.default_device().create_buffer(4, np.float32)\n"
        "with lnb.trace() as t:\n    b.fill(1.0)\nt"
    )
    assert "lnb-ipython-summary" in shown.html
    assert "trace of 1 command and 0 sync points" in shown.html


def _hooks(shell) -> tuple:
    manager = shell.magics_manager
    formatter = shell.display_formatter.ipython_display_formatter
    return (
        {kind: dict(table) for kind, table in manager.magics.items()},
        dict(manager.registry),
        dict(formatter.type_printers),
    )


def test_ipython_unload_removes_every_hook():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    before = _hooks(shell)
    shell.run_line_magic("load_ext", EXTENSION)
    loaded = _hooks(shell)
    assert {"luisa_device", "luisa_hazards", "luisa_trace"} <= set(loaded[0]["line"])
    assert {"luisa_trace", "luisa_compare"} <= set(loaded[0]["cell"])
    assert "LuisaMagics" in loaded[1]
    assert lnb.AnalyzedTrace in loaded[2] and Comparison in loaded[2]
    shell.run_line_magic("unload_ext", EXTENSION)
    assert _hooks(shell) == before
    assert not STATE.loaded
    shell.run_line_magic("load_ext", EXTENSION)  # loads again after an unload
    assert "luisa_trace" in shell.magics_manager.magics["cell"]
    shell.run_line_magic("unload_ext", EXTENSION)
    assert _hooks(shell) == before


@pytest.mark.skipif(
    not WIRED,
    reason="luisa_nb/__init__.py does not re-export load_ipython_extension, "
    "unload_ipython_extension, last_trace and compare yet (docs/notebooks.md says how)",
)
def test_ipython_load_ext_luisa_nb_and_top_level_names():
    from luisa_nb.comparing import compare
    from luisa_nb.ipython import load_ipython_extension, unload_ipython_extension

    assert lnb.load_ipython_extension is load_ipython_extension
    assert lnb.unload_ipython_extension is unload_ipython_extension
    assert lnb.last_trace is last_trace
    assert lnb.compare is compare


def test_ipython_marked_values_keep_a_dark_text_colour_in_any_theme(ipython):
    """Pale marks with the theme's text colour are white on pink in a dark theme."""
    shown = ipython.run("%%luisa_trace --backend cpu --staging submit\n" + SEED_CELL)
    assert MARK_STYLE == "background:var(--lnb-mark-bg,#ffd6d6);color:var(--lnb-mark-fg,#7f0000)"
    assert (MARK_BG.dark, MARK_FG.dark) == ("#ffd6d6", "#7f0000")  # the same in a dark theme
    assert MARK_STYLE in shown.html
