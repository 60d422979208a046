"""A long traced loop of new arrays, with the trace's capture limit and without it.

    LUISA_CLANG_PATH=/usr/bin/clang++ python benchmarks/bench_capture_limit.py \
        [--steps 20000] [--kib 64] [--repeats 2]

The loop of ``bench_notebook_loop.py`` (a new host array each step, uploaded, doubled by a
kernel, downloaded) on arrays of ``--kib`` KiB, traced with the default capture limit
(1 GiB), traced with ``capture_limit=None``, and untraced, the reference. Each run is a
process of its own, the forms taking turns, so that each starts with the same memory;
it reports how much the process's resident memory grew over the loop, the captured bytes
the trace kept, and the loop's wall time beside the untraced one. Prints the load average.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from timing import load_average, print_table

FORMS = {"untraced": "untraced", "default limit (1 GiB)": "default", "no limit": "none"}

ONE_RUN = """
import json, sys, time
sys.path.insert(0, {benchmarks!r})
import luisa_nb as lnb
from bench_notebook_loop import luisa_nb_loop

def resident_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20

form, steps, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
loop = luisa_nb_loop(steps, size)
options = {{"none": {{"capture_limit": None}}, "default": {{}}}}.get(form)
before, started = resident_mib(), time.perf_counter()
if options is None:
    loop()
    kept = 0
else:
    with lnb.trace(**options) as trace:
        loop()
    kept = sum(blob.nbytes for blob in trace.blobs.values())
seconds = time.perf_counter() - started
print(json.dumps([seconds, resident_mib() - before, kept / 2**20]))
"""


def run_once(form: str, steps: int, size: int) -> tuple[float, float, float]:
    """Seconds, resident MiB grown and MiB of captured bytes of one run in a new process."""
    code = ONE_RUN.format(benchmarks=str(Path(__file__).resolve().parent))
    done = subprocess.run(
        [sys.executable, "-c", code, form, str(steps), str(size)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, grown, kept = json.loads(done.stdout.splitlines()[-1])
    return seconds, grown, kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--kib", type=int, default=64, help="KiB of each step's new array")
    parser.add_argument("--repeats", type=int, default=2)
    arguments = parser.parse_args()
    size = arguments.kib * 1024 // 4
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in FORMS}
    for _ in range(arguments.repeats):
        for name, form in FORMS.items():
            results[name].append(run_once(form, arguments.steps, size))
    untraced = statistics.median(seconds for seconds, _, _ in results["untraced"])
    rows = []
    for name, runs in results.items():
        seconds = statistics.median(run[0] for run in runs)
        rows.append([name, seconds, seconds / untraced,
                     statistics.median(run[1] for run in runs),
                     statistics.median(run[2] for run in runs)])  # fmt: skip
    print_table(
        f"{arguments.steps} steps of {arguments.kib} KiB new arrays, median of "
        f"{arguments.repeats} runs each ({load_average()})",
        ["form", "seconds", "vs untraced", "resident MiB grown", "captured MiB"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
