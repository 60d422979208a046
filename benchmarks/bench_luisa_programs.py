"""luisa-python programs on luisa_nb beside real luisa-python, in one run.

    python benchmarks/bench_luisa_programs.py [--size 2048x1024] [--iterations 50]

Runs benchmarks/luisa_mandelbrot.py (float2 source, as luisa-python users write it)
unchanged on real luisa-python's CPU backend and on luisa_nb's `cpu` (the same file,
with `import luisa` standing for luisa_nb.luisa), each in its own process. The first
call includes compiling the kernel; "best" is the fastest of the repeats of dispatch +
synchronize. Real luisa-python needs Debian's clang and libvulkan1; its row says why
when it cannot run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from timing import load_average, print_table

PROGRAM = Path(__file__).with_name("luisa_mandelbrot.py")
ON_LUISA_NB = (
    "import runpy, sys\n"
    "from luisa_nb.luisa.alias import as_luisa\n"
    "sys.argv = sys.argv[1:]\n"
    "with as_luisa():\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def run(command: list[str]) -> dict[str, str] | str:
    clang = shutil.which("clang++")
    environment = {**os.environ, **({"LUISA_CLANG_PATH": clang} if clang else {})}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("first ")]
    if done.returncode or not lines:
        return (done.stderr.strip().splitlines() or ["no output"])[-1]
    words = lines[-1].split()
    return dict(zip(words[::2], words[1::2], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="2048x1024")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    width, height = (int(n) for n in arguments.size.split("x"))
    shape = [str(width), str(height), str(arguments.iterations), str(arguments.repeats)]
    runs = {
        "real luisa-python cpu": run([sys.executable, str(PROGRAM), "cpu", *shape]),
        "luisa_nb cpu": run([sys.executable, "-c", ON_LUISA_NB, str(PROGRAM), "cpu", *shape]),
    }
    reference = runs["real luisa-python cpu"]
    rows = []
    for name, result in runs.items():
        if isinstance(result, str):
            rows.append([name, "", "", "", f"did not run: {result}"])
            continue
        best = float(result["best"])
        ratio = best / float(reference["best"]) if isinstance(reference, dict) else ""
        rows.append([name, float(result["first"]) * 1e3, best * 1e3, ratio, result["checksum"]])
    print_table(
        f"mandelbrot {width}x{height}, {arguments.iterations} iterations, float2 source "
        f"({load_average()})",
        ["runtime", "first call ms", "best ms", "time vs real luisa", "checksum"],
        rows,
    )


if __name__ == "__main__":
    main()
