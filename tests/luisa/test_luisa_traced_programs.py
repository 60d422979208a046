"""The repository's luisa-python benchmark programs on real luisa-python, traced: under
``luisa-nb run --device luisa:cpu`` each prints the checksum it prints uninstrumented,
its commands are in the trace, and no finding is reported (there is none to report).
LuisaCompute's own programs get the same check in test_luisa_originals.py."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

from tests.luisa.running import require_real_luisa, run_python

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
SURVEY = runpy.run_path(str(BENCHMARKS / "bench_luisa_originals.py"))
PROGRAMS = {  # small sizes: a few seconds each, most of it luisa-python's start
    "luisa_mandelbrot.py": ["cpu", "128", "64", "30", "1"],
    "luisa_shading.py": ["cpu", "64", "32", "1"],
    "luisa_rays.py": ["cpu", "256", "64", "64", "1"],
    "luisa_autodiff.py": ["cpu", "1024", "1"],
}
CHECKSUM = re.compile(r"checksum (\S+)")


def checksum(output: str) -> str:
    [found] = CHECKSUM.findall(output)
    return found


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_benchmark_program_traced_on_real_luisa_is_unchanged(name):
    require_real_luisa()
    program = str(BENCHMARKS / name)
    plain = run_python(program, *PROGRAMS[name], timeout=180)
    traced = run_python(
        "-m", "luisa_nb.cli", "run", "--device", "luisa:cpu", program, *PROGRAMS[name],
        timeout=180,
    )  # fmt: skip
    output, commands, findings = SURVEY["traced_report"](traced)
    assert commands is not None and commands >= 2, traced[-2000:]
    assert findings == []
    assert checksum(output) == checksum(plain)
