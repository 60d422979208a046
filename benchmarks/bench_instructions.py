"""Instructions per command of the batched loops of bench_commands.py, untraced and
traced, counted by valgrind's callgrind: a count that the machine's load does not move,
unlike the times.

    python benchmarks/bench_instructions.py [--staging execute] [--only fresh]

Each loop runs in its own process under ``valgrind --tool=callgrind --separate-threads=yes``
with 2,000 and with 6,000 commands; the difference, over 4,000, is one command's cost
(start-up, compiling and stopping a trace fall out of it). Both threads (the user's and the
stream's worker) are added up. Kernels are built for ``-march=x86-64-v3`` (valgrind does
not know every instruction ``-march=native`` may pick) with ``OMP_NUM_THREADS=1``. Under
valgrind the threads take turns, and how many runs the worker joins into one decides
much of a one-submission-each loop's count (one dispatch per submission counted 33,732
traced in one run and 27,341 in another, below its untraced count): those loops are left
out. The fresh-array loop of bench_notebook_loop.py (``h = np.full(1024, ...)``,
upload, kernel, synchronous download) is counted per step, over 300 and 900 steps: its
synchronous download runs the step's work on the user's thread. Under valgrind every step
runs some 50 times slower, so for it every timed launch counts as quick
(``execution.QUICK_DISPATCH_NANOSECONDS``), as this small kernel's launches are at full
speed. Takes about five minutes; needs valgrind (Debian: ``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import load_average, print_table

COUNTS = (2_000, 6_000)
NOTEBOOK_LOOP = "fresh-array loop, per step"
NOTEBOOK_STEPS = (300, 900)
COMPILER_WRAPPER = """#!/bin/sh
# the kernel compiler, building for a CPU valgrind knows
for argument do
    shift
    [ "$argument" = "-march=native" ] && argument="-march=x86-64-v3"
    set -- "$@" "$argument"
done
exec {compiler} "$@"
"""


def run_child(loop: str, staging: str, count: int, traced: bool) -> None:
    """Run one loop of bench_commands.py ``count`` commands long (after a short warm-up)."""
    from bench_commands import loops

    import luisa_nb as lnb

    if loop == NOTEBOOK_LOOP:
        from bench_notebook_loop import luisa_nb_loop

        from luisa_nb.runtime import execution

        execution.QUICK_DISPATCH_NANOSECONDS = 10**12
        luisa_nb_loop(10)()
        function = luisa_nb_loop(count)
    else:
        loops(10, staging)[loop]()
        function = loops(count, staging)[loop]
    if traced:
        with lnb.trace():
            function()
    else:
        function()


def instructions(output: Path) -> int:
    """The instructions counted in every thread's file of one callgrind run."""
    total = 0
    for path in output.parent.glob(output.name + "*"):
        for line in path.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                total += int(line.split()[1])
                break
    return total


def count_loop(loop: str, staging: str, traced: bool, folder: Path, environment: dict) -> float:
    """Instructions per command (per step) of ``loop``."""
    counts = NOTEBOOK_STEPS if loop == NOTEBOOK_LOOP else COUNTS
    totals = []
    for count in counts:
        output = folder / f"{'traced' if traced else 'untraced'}-{loop.replace(' ', '_')}-{count}"
        command = [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            f"--callgrind-out-file={output}",
            sys.executable,
            __file__,
            "--child",
            loop,
            "--staging",
            staging,
            "--count",
            str(count),
            *(["--traced"] if traced else []),
        ]
        subprocess.run(command, env=environment, check=True, capture_output=True)
        totals.append(instructions(output))
    return (totals[1] - totals[0]) / (counts[1] - counts[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--staging", default="execute", choices=("execute", "submit"))
    parser.add_argument("--only", help="count only the loops whose name holds this text")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        run_child(arguments.child, arguments.staging, arguments.count, arguments.traced)
        return
    compiler = shutil.which(os.environ.get("CC", "cc").split()[0])
    if shutil.which("valgrind") is None or compiler is None:
        sys.exit("needs valgrind and a C compiler (Debian: apt-get install valgrind gcc)")
    from bench_commands import loops

    from luisa_nb.recording import row_appender

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        wrapper = folder / "cc"
        wrapper.write_text(COMPILER_WRAPPER.format(compiler=compiler))
        wrapper.chmod(0o755)
        environment = dict(
            os.environ,
            CC=str(wrapper),
            OMP_NUM_THREADS="1",
            LUISA_NB_CACHE_DIR=str(folder / "cache"),
            LUISA_NB_TIERED_COMPILE="0",  # every command on the optimised build
        )
        rows = []
        chosen = [name for name in loops(1, arguments.staging) if "batched" in name]
        if arguments.staging == "execute":  # the notebook loop's device stages at execute
            chosen.append(NOTEBOOK_LOOP)
        if arguments.only:
            chosen = [name for name in chosen if arguments.only in name]
        for loop in chosen:
            untraced = count_loop(loop, arguments.staging, False, folder, environment)
            traced = count_loop(loop, arguments.staging, True, folder, environment)
            rows.append([f"{loop} [{arguments.staging}]", round(untraced), round(traced),
                         traced / untraced])  # fmt: skip
    print_table(
        f"instructions per command (callgrind, {COUNTS[1]:,} minus {COUNTS[0]:,} commands; "
        f"per step: {NOTEBOOK_STEPS[1]:,} minus {NOTEBOOK_STEPS[0]:,} steps; both threads), "
        f"recorder hooks in {'C' if row_appender.NATIVE else 'Python'} "
        f"({load_average()})",
        ["loop", "untraced", "traced", "traced/untraced"],
        rows,
    )


if __name__ == "__main__":
    main()
