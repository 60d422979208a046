"""The IPython magics in a real shell: bad options, cells that raise, hostile names in
what a traced cell displays, and loading and unloading the extension out of order.

In a shell, errors reach the user through the shell. A bad option must be one line of
``UsageError`` (no traceback); a cell that raises must show the user's exception, then
``CellError``, with the trace closed and the default device back. A case that sees the
shell show anything else raises what the shell caught (raw, unless a luisa_nb error).
"""

from __future__ import annotations

import random

from IPython.core.error import UsageError

import luisa_nb as lnb
from luisa_nb.recording import recorder

from ..cases import Case, case
from ..html_pages import check_markup, shows
from ..ipython_shell import Shell, extension_loaded
from ..oracles import expect, fail
from ..values import HOSTILE_NAMES, random_name

BAD_LINES = (
    "%%luisa_trace --backend", "%%luisa_trace --backend ''", "%%luisa_trace --backend nope",
    "%%luisa_trace --backend cpu:later", "%%luisa_trace --staging x",
    "%%luisa_trace --capture most", "%%luisa_trace --save /no/such/folder/t.lnbtrace",
    "%%luisa_trace --save /", "%%luisa_trace --frobnicate",
    '%%luisa_trace --backend "cpu', "%%luisa_trace --token x",
    "%%luisa_trace --backend remote://127.0.0.1:1", "%%luisa_trace --backend luisa:nonsense",
    "%%luisa_trace --backend <!--<script>", "%%luisa_trace --capture \u2028",
    "%luisa_trace", "%luisa_trace --backend cpu", "%luisa_device nope", "%luisa_device ''",
    "%luisa_device cpu --staging later", "%luisa_device cpu:later",
    "%luisa_device cpu --token secret", "%luisa_device remote://127.0.0.1:1",
    "%luisa_device luisa:nonsense", "%luisa_device " + "x" * 5000, "%%luisa_compare",
    "%%luisa_compare cpu", "%%luisa_compare cpu:execute gpu:submit",
    "%%luisa_compare cpu:execute cpu:sumbit", "%luisa_compare cpu dx",
    "%%luisa_compare cpu:execute cpu:submit --token x", "%luisa_hazards no_such_variable",
    "%luisa_hazards 3", "%luisa_hazards x y", "%luisa_hazards lnb",
)  # fmt: skip
CELL_ERRORS = {
    "ValueError": "raise ValueError('from the cell')",
    "KeyboardInterrupt": "raise KeyboardInterrupt",
    "SystemExit": "raise SystemExit(3)",
    "a luisa_nb error": "lnb.default_device().create_buffer(-1)",
    "a SyntaxError": "x = (",
    "an exception whose str() raises": (
        "class Odd(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n"
        "raise Odd()"
    ),
    "a failed command": (
        "s = lnb.default_device().default_stream\ns.add_callback(lambda: 1 / 0)\ns.synchronize()"
    ),
    "a trace left recording": "t = lnb.trace()\nt.__enter__()",
    "a magic inside": "get_ipython().run_cell_magic('luisa_trace', '', 'x = 1')",
    "the default device closed": "lnb.default_device().close()\nraise ValueError('closed')",
}
MAGICS = (
    "%%luisa_trace",
    "%%luisa_trace --backend dx --staging submit",
    "%%luisa_compare cpu:execute cpu:submit",
)
NAMED = ("buffer", "host array", "range", "stream")
SEQUENCES = (
    "load twice", "unload twice", "a magic after unload", "reload", "unload, then load",
    "unload inside a traced cell",
)  # fmt: skip
SEED_CELL = """\
import numpy as np
dev = lnb.default_device()
x = dev.create_buffer(64, np.float32, name={buffer!r})
z = dev.create_buffer(64, np.float32, name="z")
z_data = lnb.name(np.full(64, 123.0, np.float32), {array!r})
stream = dev.create_stream({stream!r})
with lnb.range({range!r}):
    stream.submit([z.copy_from_async(z_data), z.copy_to_async(z_data),
                   z.copy_from_async(z_data), z.copy_to_buffer_async(x)])
    stream.synchronize()
"""
"""LuisaCompute #143 in short: under staging="submit" a stale upload whose hazard names
the host array, the buffers and the stream."""


def bad_option(line: str) -> None:
    with extension_loaded() as shell:
        run = shell.run(line + ("\nx = 1" if line.startswith("%%") else ""))
        if run.error is None:
            fail(f"{line[:60]!r} was accepted")
        if not isinstance(run.error, UsageError):
            raise run.error
        shown = run.stdout + run.stderr
        expect("Traceback" not in shown, f"{line[:60]!r} showed a traceback")
        expect(
            run.stderr.startswith("UsageError: ") and run.stderr.strip().count("\n") == 0,
            f"{line[:60]!r} showed {run.stderr[:80]!r}, not one line of UsageError",
        )


def raising_cell(magic: str, error: str) -> None:
    with extension_loaded() as shell:
        before = lnb.default_device()
        run = shell.run(f"{magic}\n{CELL_ERRORS[error]}")
        expect(run.error is not None, f"the cell that raises {error} succeeded")
        if type(run.error).__name__ != "CellError":
            raise run.error
        shown = run.stdout + run.stderr
        expect("CellError: the cell under" in shown, "no CellError line was shown")
        expect(recorder.active_trace() is None, "a trace is still recording after the cell")
        if error != "the default device closed":
            expect(lnb.default_device() is before, "the default device was not put back")
        after = shell.run("%%luisa_trace --backend cpu\ny = 1")
        if after.error is not None:
            raise after.error


def hostile_name(named: str, name: str) -> None:
    """A traced cell whose buffer, host array, range or stream has a hostile name: every
    HTML output keeps the name out of its markup, and one shows it."""
    names = {key: name if key == named else key for key in NAMED}
    cell = SEED_CELL.format(
        buffer=names["buffer"], array=names["host array"], range=names["range"],
        stream=names["stream"],
    )  # fmt: skip
    with extension_loaded() as shell:
        run = shell.run("%%luisa_trace --backend cpu --staging submit\n" + cell)
        if run.error is not None:
            raise run.error
        shown = [shell.run("%luisa_hazards"), shell.run("lnb.last_trace()")]
        pages = [*run.pages, *(page for other in shown for page in other.pages)]
        found = False
        for number, page in enumerate(pages):
            text, data = check_markup(page, name, f"output {number} of the cell")
            found = found or shows(text, name) or any(shows(item, name) for item in data)
        expect(found, f"no output of the cell shows the {named} name {name[:40]!r}")


def extension_sequence(sequence: str) -> None:
    with extension_loaded() as shell:
        steps = {
            "load twice": ["%load_ext luisa_nb"],
            "unload twice": ["%unload_ext luisa_nb", "%unload_ext luisa_nb", "%load_ext luisa_nb"],
            "a magic after unload": ["%unload_ext luisa_nb", "%luisa_device"],
            "reload": ["%reload_ext luisa_nb"],
            "unload, then load": ["%unload_ext luisa_nb", "%load_ext luisa_nb"],
            "unload inside a traced cell": ["%%luisa_trace\n%unload_ext luisa_nb"],
        }[sequence]
        for step in steps:
            run = shell.run(step)
            if run.error is not None and not isinstance(run.error, UsageError):
                raise run.error
        _still_works(shell, sequence)


def real_luisa_twice() -> None:
    """A real luisa-python backend that does not exist is refused every time it is asked
    for, and traced cells keep working."""
    with extension_loaded() as shell:
        for attempt in ("first", "second"):
            run = shell.run("%luisa_device luisa:nonsense")
            expect(isinstance(run.error, UsageError), f"the {attempt} request was accepted")
        _still_works(shell, "asking for luisa:nonsense twice")


def _still_works(shell: Shell, sequence: str) -> None:
    shell.run("%load_ext luisa_nb")
    run = shell.run("%%luisa_trace --backend cpu\nb = lnb.default_device().create_buffer(4)")
    if run.error is not None:
        raise run.error
    expect(lnb.last_trace() is not None, f"no trace after {sequence}")


def catalogue() -> list[Case]:
    cases = [
        case(bad_option, f"{line[:60]!r}", line, isolated=_starts_real_luisa(line))
        for line in BAD_LINES
    ]
    cases += [
        case(raising_cell, f"{magic} on a cell with {error}", magic, error, timeout=20)
        for magic in MAGICS
        for error in CELL_ERRORS
    ]
    cases += [
        case(hostile_name, f"a {named} named {name!r:.60} in the shell", named, name, timeout=20)
        for named in NAMED
        for name in HOSTILE_NAMES
    ]
    cases += [case(extension_sequence, f"extension: {s}", s) for s in SEQUENCES]
    cases.append(case(real_luisa_twice, "%luisa_device luisa:nonsense twice", isolated=True))
    return cases


def _starts_real_luisa(line: str) -> bool:
    """Whether ``line`` initializes real luisa-python, which a process does once: the
    worker that ran it is replaced."""
    return "luisa:" in line


def variant(rng: random.Random) -> Case:
    if rng.random() < 0.7:
        named, name = rng.choice(NAMED), random_name(rng)
        return case(hostile_name, f"a {named} named {name!r:.60} in the shell", named, name,
                    timeout=20)  # fmt: skip
    magic, error = rng.choice(MAGICS), rng.choice(list(CELL_ERRORS))
    return case(raising_cell, f"{magic} on a cell with {error}", magic, error, timeout=20)
