"""Start-up of a short luisa-python program: luisa_nb against real luisa-python 0.3.7.

    python benchmarks/bench_luisa_startup.py [--runs 15]

Each row is a fresh interpreter running one snippet, the rows interleaved run by run, so
that both runtimes meet the same load. It prints the median and the fastest wall time and
CPU time (user + system, of the process) of each row, and the ratio of each luisa_nb row
to its real luisa-python row, with the load average. The snippets: an interpreter doing
nothing, ``import numpy`` (both runtimes import it), ``import luisa``, and a program that
initialises the CPU device, dispatches a kernel with a device print, synchronizes and
exits. luisa_nb's modules are compiled to bytecode first, as ``pip install`` does (an
environment with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile them on every start).
Real luisa-python needs ``clang++`` (``LUISA_CLANG_PATH``); without it its rows are left out.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import luisa_nb

PROGRAM = """
import luisa
from luisa.mathtypes import *

luisa.init("cpu", support_gui=False)
values = luisa.Buffer(64, float)


@luisa.func
def fill():
    i = dispatch_id().x
    values.write(i, float(i) * 0.5)
    if i == 3:
        print("thread", i, values.read(i))


fill(dispatch_size=64)
luisa.synchronize()
print(values.numpy().sum())
"""
NB_LAUNCHER = (
    "import runpy, sys\n"
    "from luisa_nb.luisa.alias import as_luisa\n"
    "with as_luisa():\n"
    "    runpy.run_path(sys.argv[1], run_name='__main__')\n"
)
REAL_LAUNCHER = "import runpy, sys\nrunpy.run_path(sys.argv[1], run_name='__main__')\n"


def timed(arguments: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``python ARGUMENTS``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *arguments], env=environment, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    compileall.compile_dir(Path(luisa_nb.__file__).parent, quiet=1)
    clang = shutil.which("clang++")
    environment = {**os.environ, "LUISA_CLANG_PATH": clang or ""}
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "program.py"
        program.write_text(PROGRAM)
        rows = {
            "python (nothing)": ["-c", "pass"],
            "import numpy": ["-c", "import numpy"],
            "import luisa_nb.luisa": ["-c", "import luisa_nb.luisa"],
            "program on luisa_nb": ["-c", NB_LAUNCHER, str(program)],
        }
        if clang:
            rows["import luisa (real)"] = ["-c", "import luisa"]
            rows["program on real luisa"] = ["-c", REAL_LAUNCHER, str(program)]
        for arguments in rows.values():  # warm the file cache and the kernel caches
            timed(arguments, environment)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
        for _ in range(runs):
            for name, arguments in rows.items():
                times[name].append(timed(arguments, environment))
    references = {
        "import luisa_nb.luisa": "import luisa (real)",
        "program on luisa_nb": "program on real luisa",
    }
    print(f"{runs} runs each; load average {os.getloadavg()[0]:.2f}")
    print(
        f"{'':24} {'wall med':>9} {'wall min':>9} {'cpu med':>8} {'cpu min':>8}  "
        "ratio: wall med, cpu med"
    )
    wall = {name: statistics.median(w for w, _ in values) for name, values in times.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in times.items()}
    for name, values in times.items():
        reference = references.get(name)
        ratio = (
            f"{wall[name] / wall[reference]:.2f}x, {cpu[name] / cpu[reference]:.2f}x {reference}"
            if reference in times
            else ""
        )
        print(
            f"{name:24} {wall[name]:9.3f} {min(w for w, _ in values):9.3f} {cpu[name]:8.3f} "
            f"{min(c for _, c in values):8.3f}  {ratio}"
        )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
