"""Ray tracing on luisa_nb beside real luisa-python, in one run.

    python benchmarks/bench_rays.py [--triangles 20000] [--size 512x512] [--repeats 5]

Runs benchmarks/luisa_rays.py unchanged on real luisa-python's CPU backend and on
luisa_nb's `cpu` (each in its own process): the build of an acceleration structure over
a soup of random triangles ("build", from `accel.update()` to its end), and one ray per
pixel traced at it ("first" includes compiling the kernel; "best" is the fastest of the
repeats), each as wall time and as the CPU time of the process's threads ("cpu ms": on a
machine shared with other work, the less inflated of the two). The checksum is the
number of rays that hit: the two must agree. Then the Cornell-box path tracer of
tests/luisa/programs/cornell_box.py, as a whole process (start, compile, render, print).
Real luisa-python needs Debian's clang and libvulkan1; its row says why when it cannot run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench_luisa_programs import ON_LUISA_NB
from timing import load_average, print_table

RAYS = Path(__file__).with_name("luisa_rays.py")
CORNELL_BOX = Path(__file__).parents[1] / "tests" / "luisa" / "programs" / "cornell_box.py"
RUNTIMES = ("real luisa-python cpu", "luisa_nb cpu")
COLUMNS = ["runtime", "build ms", "vs real", "cpu ms", "vs real", "first ms", "best ms"]
COLUMNS += ["vs real", "cpu ms", "vs real", "hits"]


def command(runtime: str, program: Path, arguments: list[str]) -> list[str]:
    if runtime == RUNTIMES[0]:
        return [sys.executable, str(program), "cpu", *arguments]
    return [sys.executable, "-c", ON_LUISA_NB, str(program), "cpu", *arguments]


def run(arguments: list[str]) -> tuple[str, float] | str:
    """The program's standard output and the process's wall time, or why it failed."""
    clang = shutil.which("clang++")
    environment = {**os.environ, **({"LUISA_CLANG_PATH": clang} if clang else {})}
    start = time.perf_counter()
    done = subprocess.run(arguments, capture_output=True, text=True, env=environment, check=False)
    seconds = time.perf_counter() - start
    if done.returncode:
        return (done.stderr.strip().splitlines() or ["no output"])[-1]
    return done.stdout, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--triangles", type=int, default=20000)
    parser.add_argument("--size", default="512x512")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cornell-box", default="96x32", help="side x samples per pixel")
    arguments = parser.parse_args()
    width, height = arguments.size.split("x")
    rows = []
    reference: dict[str, float] = {}
    for runtime in RUNTIMES:
        outcome = run(
            command(
                runtime, RAYS, [str(arguments.triangles), width, height, str(arguments.repeats)]
            )
        )
        if isinstance(outcome, str):
            rows.append([runtime, *[""] * 9, f"did not run: {outcome}"])
            continue
        line = [x for x in outcome[0].splitlines() if x.startswith("build ")][-1].split()
        values = dict(zip(line[::2], line[1::2], strict=True))
        build, best = float(values["build"]), float(values["best"])
        build_cpu, best_cpu = float(values["build_cpu"]), float(values["best_cpu"])
        measured = {"build": build, "best": best, "build_cpu": build_cpu, "best_cpu": best_cpu}
        reference = reference or measured
        rows.append(
            [
                runtime,
                build * 1e3,
                build / reference["build"],
                build_cpu * 1e3,
                build_cpu / reference["build_cpu"],
                float(values["first"]) * 1e3,
                best * 1e3,
                best / reference["best"],
                best_cpu * 1e3,
                best_cpu / reference["best_cpu"],
                values["checksum"],
            ]
        )
    print_table(
        f"{arguments.triangles} triangles, {width}x{height} rays ({load_average()})",
        COLUMNS,
        rows,
    )
    side, samples = arguments.cornell_box.split("x")
    rows = []
    real_seconds = None
    for runtime in RUNTIMES:
        outcome = run(command(runtime, CORNELL_BOX, [side, samples]))
        if isinstance(outcome, str):
            rows.append([runtime, "", "", f"did not run: {outcome}"])
            continue
        image = [x for x in outcome[0].splitlines() if x.startswith("row ")]
        mean = sum(float(v) for x in image for v in x.split()[1:]) / (3 * int(side) ** 2)
        real_seconds = real_seconds or outcome[1]
        rows.append([runtime, outcome[1], outcome[1] / real_seconds, f"{mean:.6f}"])
    print_table(
        f"Cornell box {side}x{side}, {samples} paths per pixel, whole process ({load_average()})",
        ["runtime", "seconds", "vs real", "mean pixel"],
        rows,
    )


if __name__ == "__main__":
    main()
