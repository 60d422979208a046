"""luisa-python programs on luisa_nb beside real luisa-python, in one run.

    python benchmarks/bench_luisa_programs.py [--size 2048x1024] [--iterations 50]

Runs two luisa-python programs unchanged on real luisa-python's CPU backend and on
luisa_nb's `cpu` (the same file, with `import luisa` standing for luisa_nb.luisa), each
in its own process: benchmarks/luisa_mandelbrot.py (float2 source) and
benchmarks/luisa_shading.py (a 100-line kernel of structs and vectors). The first call
includes compiling the kernel, both from an empty cache (real luisa-python runs from a
throwaway virtual environment, whose shader cache is empty: see ``cold_python``). "best"
is the fastest of the repeats of dispatch + synchronize; "compile" what the first call
spent before it returned beyond what a later call spends (both compile on the calling
thread): typing, code generation and the compiler, without the first run's own costs
(page faults, starting threads); "first - best" all that the first call and its
synchronize cost beyond a later one; "cpu" the least processor time (all threads) of
one repeat, which a busy machine inflates far less than the wall time. luisa_nb runs
twice: with its tiered compile (the first call waits for an -O0 build; see
luisa_nb/kernels/c/tiers.py) and with one optimised build (LUISA_NB_TIERED_COMPILE=0).
Real luisa-python needs Debian's clang and libvulkan1; its row says why when it cannot
run.
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

MANDELBROT = Path(__file__).with_name("luisa_mandelbrot.py")
SHADING = Path(__file__).with_name("luisa_shading.py")
ON_LUISA_NB = (
    "import runpy, sys\n"
    "from luisa_nb.luisa.alias import as_luisa\n"
    "sys.argv = sys.argv[1:]\n"
    "with as_luisa():\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def run(command: list[str], cache: str | None = None, tiered: str = "1") -> dict[str, str] | str:
    """The program's ``first``/``best``/``checksum`` line as a dict, or why it failed.
    ``cache``: luisa_nb's kernel cache folder (an empty one makes the first call cold);
    ``tiered``: ``LUISA_NB_TIERED_COMPILE`` (``0``: one optimised build, no fast one)."""
    clang = shutil.which("clang++")
    environment = {**os.environ, **({"LUISA_CLANG_PATH": clang} if clang else {})}
    environment["LUISA_NB_TIERED_COMPILE"] = tiered
    if cache is not None:
        environment["LUISA_NB_CACHE_DIR"] = cache
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("first ")]
    if done.returncode or not lines:
        return (done.stderr.strip().splitlines() or ["no output"])[-1]
    words = lines[-1].split()
    return dict(zip(words[::2], words[1::2], strict=True))


def cold_python(folder: Path) -> Path:
    """A Python whose real luisa-python starts with an empty shader cache: real
    luisa-python keeps compiled kernels in ``.cache`` beside the running executable (here
    ``<python>/bin/.cache``, shared by every run), so a throwaway virtual environment with
    its own copy of the interpreter and the system's packages has one of its own."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--copies", "--system-site-packages",
         str(folder / "venv")],
        check=True,
    )  # fmt: skip
    return folder / "venv" / "bin" / "python"


def compare(title: str, program: Path, arguments: list[str]) -> None:
    """Run ``program`` on real luisa-python and on luisa_nb (with an empty kernel cache)
    and print one table."""
    on_luisa_nb = [sys.executable, "-c", ON_LUISA_NB, str(program), "cpu", *arguments]
    with tempfile.TemporaryDirectory() as folder:
        python = cold_python(Path(folder))
        runs = {"real luisa-python cpu": run([str(python), str(program), "cpu", *arguments])}
    for name, tiered in (("luisa_nb cpu", "1"), ("luisa_nb cpu, one optimised build", "0")):
        with tempfile.TemporaryDirectory() as cache:
            runs[name] = run(on_luisa_nb, cache, tiered)
    reference = runs["real luisa-python cpu"]
    rows = []
    for name, result in runs.items():
        if isinstance(result, str):
            rows.append([name, "", "", "", "", "", "", "", "", "", f"did not run: {result}"])
            continue
        first, best = float(result["first"]), float(result["best"])
        compile_time = float(result["compile"])
        ratios = ["", "", "", ""]
        if isinstance(reference, dict):
            ratios = [
                compile_time / float(reference["compile"]),
                (first - best) / (float(reference["first"]) - float(reference["best"])),
                best / float(reference["best"]),
                float(result["cpu"]) / float(reference["cpu"]),
            ]
        rows.append(
            [
                name,
                first * 1e3,
                compile_time * 1e3,
                ratios[0],
                (first - best) * 1e3,
                ratios[1],
                best * 1e3,
                ratios[2],
                float(result["cpu"]) * 1e3,
                ratios[3],
                result["checksum"],
            ]
        )
    print_table(
        f"{title} ({load_average()})",
        [
            "runtime",
            "first call ms",
            "compile ms",
            "compile vs real",
            "first - best ms",
            "vs real",
            "best ms",
            "time vs real luisa",
            "cpu ms",
            "cpu vs real",
            "checksum",
        ],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="2048x1024")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    width, height = (int(n) for n in arguments.size.split("x"))
    size, repeats = [str(width), str(height)], str(arguments.repeats)
    compare(
        f"mandelbrot {width}x{height}, {arguments.iterations} iterations, float2 source",
        MANDELBROT,
        [*size, str(arguments.iterations), repeats],
    )
    compare(
        f"shading {width}x{height}: a 100-line kernel of structs and vectors; its first call "
        "includes the cold compile",
        SHADING,
        [*size, repeats],
    )


if __name__ == "__main__":
    main()
