"""``luisa-nb repro``: for the seed, notebook 06's renderer and a stale upload buried in
5,000 commands, a program of at most 25 lines that fails on real luisa-python and passes
with the fix (``--confirm``; skipped where luisa-python cannot run)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from luisa_nb.cli import main
from luisa_nb.seed import run_seed
from tests.helpers.buried import buried_stale_upload
from tests.luisa.running import require_real_luisa, run_python

ROOT = Path(__file__).resolve().parents[1]
RENDERER = ROOT / "notebooks" / "06_luisa_renderer.ipynb"
MOST_LINES = 25
RUNS = 2


def renderer_program(path: Path) -> Path:
    """Notebook 06's renderer as a luisa-python program: its code cells up to the traced
    render loop, without the IPython lines."""
    cells = [c for c in json.loads(RENDERER.read_text())["cells"] if c["cell_type"] == "code"]
    lines = [
        line
        for cell in cells[:3]
        for line in "".join(cell["source"]).splitlines()
        if not line.startswith("%")
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def traces(submit_device, tmp_path_factory):
    folder = tmp_path_factory.mktemp("traces")
    seed = run_seed(submit_device).trace.save(folder / "seed.lnbtrace")
    buried = buried_stale_upload(submit_device).save(folder / "buried.lnbtrace")
    renderer = folder / "renderer.lnbtrace"
    program = renderer_program(folder / "renderer.py")
    command = [sys.executable, "-m", "luisa_nb.cli", "run", "--trace", str(renderer), str(program)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert "STALE_UPLOAD" in done.stdout
    return {"seed": seed, "renderer": renderer, "buried": buried}


@pytest.mark.parametrize("name", ["seed", "renderer", "buried"])
def test_repro_writes_a_short_program(name, traces, tmp_path, capsys):
    output = tmp_path / "repro.py"
    assert main(["repro", str(traces[name]), "-o", str(output)]) == 0
    text = output.read_text()
    assert len(text.splitlines()) <= MOST_LINES
    assert text.count("copy_to(") == 1 and "sync=False" in text
    assert "import luisa\n" in text
    out = capsys.readouterr().out
    assert re.search(r"reproducer written to .*: STALE_UPLOAD #\d+ <- #\d+", out)
    assert "in the trace, stale: stale on every backend that stages at submit" in out


@pytest.mark.parametrize("name", ["seed", "renderer", "buried"])
def test_repro_confirm_fails_on_real_luisa_and_passes_with_the_fix(name, traces, capsys):
    require_real_luisa()
    runs = str(RUNS)
    assert main(["repro", str(traces[name]), "--confirm", "--runs", runs]) == 0
    out = capsys.readouterr().out
    assert f"real luisa-python: stale in all {RUNS} runs" in out
    assert "with the fix it passes" in out


def test_repro_prints_the_lnb_program_and_names_a_bad_finding(traces, capsys):
    assert main(["repro", str(traces["seed"]), "--api", "lnb"]) == 0
    assert 'lnb.create_device("cpu:submit")' in capsys.readouterr().out
    assert main(["repro", str(traces["seed"]), "--finding", "99"]) == 2
    assert "finding 99 does not exist" in capsys.readouterr().err


def test_reproducers_of_random_programs_fail_on_real_luisa_and_pass_with_the_fix(submit_device):
    require_real_luisa()
    from luisa_nb.analysis import HazardKind
    from luisa_nb.conformance.generator import random_program
    from luisa_nb.conformance.runner import run_program
    from luisa_nb.testing.reproducers import confirm, reproducer

    confirmed = []
    for index in range(60):
        trace = run_program(submit_device, random_program(index), traced=True).trace
        findings = [h for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
        if findings:
            confirmed.append(confirm(reproducer(trace, findings[-1]), runs=1))
        if len(confirmed) == 4:
            break
    assert len(confirmed) == 4
    assert all(each.outcome == "stale" and each.fixed_passed for each in confirmed), confirmed


TRACED_ON_REAL_LUISA = """
import sys
import numpy as np
import luisa
import luisa_nb as lnb

lnb.instrument_luisa()
luisa.init("cpu", support_gui=False)
frame = luisa.Buffer(512, float)
previous = luisa.Buffer(512, float)
history = np.zeros(512, np.float32)
with lnb.trace() as trace:
    for value in (1.0, 2.0, 3.0):
        frame.copy_from(np.full(512, value, np.float32))
        frame.copy_to(history, sync=False)
        luisa.execute()
        previous.copy_from(history)
    luisa.synchronize()
trace.save(sys.argv[1])
"""


def test_a_trace_of_real_luisa_gives_a_reproducer_for_real_luisa(tmp_path, capsys):
    """A trace recorded on real luisa-python (instrumented), with the download and the
    upload in different lists: the reproducer merges them into one list."""
    require_real_luisa()
    path = tmp_path / "real.lnbtrace"
    run_python("-c", TRACED_ON_REAL_LUISA, str(path))
    assert main(["repro", str(path), "--confirm", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    assert "luisa.execute()" not in out
    assert "stale in all 2 runs" in out and "with the fix it passes" in out
