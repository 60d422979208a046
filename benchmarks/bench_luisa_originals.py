"""LuisaCompute's own luisa-python programs, run unchanged on real luisa-python 0.3.7 (CPU
backend) and on luisa_nb (``luisa-nb run``), each in its own process and folder; prints
a table: whether each completed, whether their outputs agree, and both times with their
ratio, and the load average.

    python benchmarks/bench_luisa_originals.py extract --repo LUISACOMPUTE_CHECKOUT --out DIR
    python benchmarks/bench_luisa_originals.py run DIR [--only NAME ...] [--timeout S] [--repeat N]

Real luisa-python runs on its CPU backend with no window (``init()`` is given ``"cpu"``
and ``support_gui=False``), luisa_nb with ``import luisa`` giving ``luisa_nb.luisa``.
``extract`` writes one folder per program: every distinct version of ``src/py/test.py``
(the 2022 snippets) and the last version of every other program that ever lived in
``src/py`` or ``src/tests/python``, each beside the files of its folder at that commit
(helper modules, textures). Outputs agree when the printed lines match (numbers within a
relative 1e-4, as float formatting differs) and every image file both wrote holds the
same pixels (within 1 level of 255, or a relative 1e-3 for float images). Times are wall
seconds and CPU seconds (user and system, of the process and its threads): on a loaded
machine the CPU time is the steadier measure. With
``--repeat N`` each program runs N times on each runtime, the two interleaved, and the
times are medians. luisa_nb's modules are compiled to bytecode first, as ``pip install``
does (an environment with ``PYTHONDONTWRITEBYTECODE`` would compile them on every run).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import luisa_nb

HELPERS = {"aces.py", "cornell_box.py", "parseobj.py", "parse_bindings.py", "meshformat.py"}
PROGRAMS = ("src/py/*.py", "src/tests/python/*.py")
SNIPPETS = ("src/py/test.py", "src/py/tests/test.py")
LOG_LINE = re.compile(r"^(\[20\d\d-|failed to load swapchain|\[luisa\] )")
NUMBER = re.compile(r"-?\d+\.?\d*(?:[eE][-+]?\d+)?")
IMAGE_SUFFIXES = (".png", ".hdr", ".jpg", ".bmp")
MAX_ASSET_BYTES = 4 << 20
DEVICE = "[DEVICE]"
REAL_LAUNCHER = """
import runpy, sys
import luisa
chosen = luisa.init
def init(backend_name=None, shader_path=None, support_gui=True):
    chosen(backend_name or "cpu", shader_path, False)
luisa.init = init
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
NB_LAUNCHER = """
import runpy, sys
from luisa_nb.luisa.alias import as_luisa
sys.argv = sys.argv[1:]
with as_luisa():
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


def git(repo: Path, *arguments: str, check: bool = True) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *arguments], capture_output=True, text=True, check=check
    ).stdout


def extract(repo: Path, out: Path) -> list[str]:
    """One folder per program under ``out``; returns their names."""
    # a mirror may lack some old objects: list what it can
    paths = git(repo, "log", "--all", "--name-only", "--format=", "--", *PROGRAMS, check=False)
    programs = sorted(
        {
            p
            for p in paths.split()
            if p.endswith(".py")
            and str(Path(p).parent) in ("src/py", "src/py/tests", "src/tests/python")
            and Path(p).name not in HELPERS
        }
    )
    versions: list[tuple[str, str, str]] = []  # (name, commit, path)
    for path in programs:
        if path in SNIPPETS:
            seen: set[str] = set()
            log = git(
                repo, "log", "--all", "--format=%H %ad", "--date=short", "--", path, check=False
            )
            for line in log.splitlines():
                commit, date = line.split()
                try:
                    blob = git(repo, "rev-parse", f"{commit}:{path}").strip()
                except subprocess.CalledProcessError:
                    continue  # the commit deleted it
                if blob not in seen:
                    seen.add(blob)
                    stem = path.replace("/", "_").removesuffix(".py")
                    versions.append((f"{stem}-{date}-{commit[:8]}", commit, path))
            continue
        log = git(repo, "log", "--all", "--format=%H", "--", path, check=False).split()
        for commit in log:  # the newest commit that still holds the file
            try:
                git(repo, "rev-parse", f"{commit}:{path}")
            except subprocess.CalledProcessError:
                continue
            versions.append((path.replace("/", "_").removesuffix(".py"), commit, path))
            break
    names = []
    for name, commit, path in versions:
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        directory = str(Path(path).parent)
        listing = git(repo, "ls-tree", "-l", f"{commit}:{directory}").splitlines()
        for entry in listing:
            meta, file_name = entry.split("\t")
            kind, size = meta.split()[1], meta.split()[3]
            if kind == "blob" and size != "-" and int(size) <= MAX_ASSET_BYTES:
                data = subprocess.run(
                    ["git", "-C", str(repo), "show", f"{commit}:{directory}/{file_name}"],
                    capture_output=True,
                    check=True,
                ).stdout
                (folder / file_name).write_bytes(data)
        (folder / "PROGRAM").write_text(f"{Path(path).name}\n{commit}\n{path}\n")
        names.append(name)
    return names


TRACED_REPORT = re.compile(r"^\S+\.py: (\d+) commands traced on ")
TRACED_FINDING = re.compile(r"^  ([A-Z_]+): ")


def traced_report(output: str) -> tuple[str, int | None, list[str]]:
    """The program's own output of ``luisa-nb run``, the number of commands traced (None
    if it printed no report) and the kinds of the findings it reported."""
    lines = output.splitlines()
    end = next((i for i, line in enumerate(lines) if TRACED_REPORT.match(line)), None)
    if end is None:
        return output, None, []
    findings = [found[1] for line in lines[end + 2 :] if (found := TRACED_FINDING.match(line))]
    program_lines = lines[:end]
    if program_lines and not program_lines[-1]:  # the blank line before the report
        program_lines.pop()
    return "\n".join(program_lines), int(TRACED_REPORT.match(lines[end])[1]), findings


def run_one(folder: Path, real: bool, timeout: float, traced: bool = False) -> dict[str, object]:
    """Run the program of ``folder`` in a copy of it; its outputs, status and time.
    ``traced`` runs it on real luisa-python under ``luisa-nb run --device luisa:cpu``
    (instrumented), and adds the commands traced and the kinds of findings reported."""
    program = (folder / "PROGRAM").read_text().split()[0]
    kind = "runs-traced" if traced else "runs-real" if real else "runs-nb"
    work = folder.parent.parent / kind / folder.name
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(folder, work)
    files_before = {p.name for p in work.iterdir()}
    environment = {**os.environ, "LUISA_CLANG_PATH": shutil.which("clang++") or ""}
    if traced:  # luisa-nb run starts the CPU backend with no window before the program
        command = [sys.executable, "-m", "luisa_nb.cli", "run", "--device", "luisa:cpu", program]
    elif real:  # its CPU backend, with no window, whatever init() the program makes
        command = [sys.executable, "-c", REAL_LAUNCHER, program]
    else:  # as `luisa-nb run` runs it, without its report of hazards
        command = [sys.executable, "-c", NB_LAUNCHER, program]
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=work, env=environment, capture_output=True, text=True, timeout=timeout
        )
        status, output, error = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        status, output, error = "timeout", expired.stdout or "", expired.stderr or ""
        output = output.decode() if isinstance(output, bytes) else output
        error = error.decode() if isinstance(error, bytes) else error
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - usage_before.ru_utime + after.ru_stime - usage_before.ru_stime
    commands, findings = None, []
    if traced:
        output, commands, findings = traced_report(output)
    lines = [  # device prints come through real luisa-python's log, after its prefix
        line[line.index(DEVICE) :] if DEVICE in line else line
        for line in output.splitlines()
        if DEVICE in line or not LOG_LINE.match(line)
    ]
    written = sorted(p.name for p in work.iterdir() if p.name not in files_before)
    last_error = next((e for e in reversed(error.strip().splitlines()) if e.strip()), "")
    return {
        "status": status,
        "seconds": seconds,
        "cpu": cpu,
        "lines": lines,
        "written": written,
        "error": last_error[:200],
        "folder": str(work),
        "commands": commands,
        "findings": findings,
    }


def same_lines(ours: list[str], theirs: list[str]) -> bool:
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs, strict=True):
        if NUMBER.sub("#", a) != NUMBER.sub("#", b):
            return False
        x = np.array([float(v) for v in NUMBER.findall(a)])
        y = np.array([float(v) for v in NUMBER.findall(b)])
        if not np.allclose(x, y, rtol=1e-4, atol=1e-6):
            return False
    return True


def read_image(path: Path) -> np.ndarray:
    from luisa_nb.luisa.image_files import load_hdr_image, load_ldr_image

    return load_hdr_image(path) if path.suffix == ".hdr" else load_ldr_image(path)


def same_files(ours: dict[str, object], theirs: dict[str, object]) -> bool:
    images = [n for n in theirs["written"] if n.endswith(IMAGE_SUFFIXES)]
    for name in images:
        if name not in ours["written"]:
            return False
        a = read_image(Path(ours["folder"]) / name)
        b = read_image(Path(theirs["folder"]) / name)
        if a.shape != b.shape:
            return False
        tolerance = 1 if a.dtype == np.uint8 else 0
        difference = np.abs(a.astype(np.float64) - b.astype(np.float64))
        scale = np.maximum(np.abs(b.astype(np.float64)), 1.0) * (1e-3 if tolerance == 0 else 0)
        if (difference > tolerance + scale).mean() > 1e-3:
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    extracting = commands.add_parser("extract")
    extracting.add_argument("--repo", type=Path, required=True)
    extracting.add_argument("--out", type=Path, required=True)
    running = commands.add_parser("run")
    running.add_argument("folder", type=Path)
    running.add_argument("--only", nargs="*")
    running.add_argument("--timeout", type=float, default=120)
    running.add_argument(
        "--repeat", type=int, default=1, help="runs per runtime, interleaved; times are medians"
    )
    arguments = parser.parse_args()
    if arguments.command == "extract":
        names = extract(arguments.repo, arguments.out / "programs")
        print(f"{len(names)} programs in {arguments.out / 'programs'}")
        return
    compileall.compile_dir(Path(luisa_nb.__file__).parent, quiet=1)  # as pip install does
    programs = sorted((arguments.folder / "programs").iterdir())
    if arguments.only:
        programs = [p for p in programs if p.name in arguments.only]
    results = {}
    print(
        f"{'program':44} {'real':>4} {'nb':>4} {'agree':>6} {'real s':>7} {'nb s':>7} ratio "
        f"{'real cpu':>7} {'nb cpu':>7} ratio"
    )
    for folder in programs:
        theirs = run_one(folder, True, arguments.timeout)
        ours = run_one(folder, False, arguments.timeout) if theirs["status"] == 0 else None
        if ours is not None and arguments.repeat > 1:
            runs = {"real": [theirs], "nb": [ours]}
            for _ in range(arguments.repeat - 1):
                runs["real"].append(run_one(folder, True, arguments.timeout))
                runs["nb"].append(run_one(folder, False, arguments.timeout))
            for result, repeated in ((theirs, runs["real"]), (ours, runs["nb"])):
                for measure in ("seconds", "cpu"):
                    result[measure] = statistics.median(run[measure] for run in repeated)
        agree = (
            ours is not None
            and ours["status"] == 0
            and same_lines(ours["lines"], theirs["lines"])
            and same_files(ours, theirs)
        )
        results[folder.name] = {"real": theirs, "nb": ours, "agree": agree}
        nb_status = "-" if ours is None else ours["status"]
        nb_seconds = ours["seconds"] if ours else float("nan")
        nb_cpu = ours["cpu"] if ours else float("nan")
        ratio = nb_seconds / theirs["seconds"] if ours else float("nan")
        cpu_ratio = nb_cpu / theirs["cpu"] if ours else float("nan")
        print(
            f"{folder.name[:44]:44} {theirs['status']!s:>4} {nb_status!s:>4} {agree!s:>6} "
            f"{theirs['seconds']:7.2f} {nb_seconds:7.2f} {ratio:5.2f} "
            f"{theirs['cpu']:7.2f} {nb_cpu:7.2f} {cpu_ratio:5.2f}",
            flush=True,
        )
    for measure in ("seconds", "cpu"):
        ratios = [r["nb"][measure] / r["real"][measure] for r in results.values() if r["nb"]]
        if ratios:
            print(
                f"ratio nb / real ({'wall' if measure == 'seconds' else 'cpu'}): median "
                f"{statistics.median(ratios):.2f}, max {max(ratios):.2f}"
            )
    completed = [n for n, r in results.items() if r["real"]["status"] == 0]
    agreeing = [n for n, r in results.items() if r["agree"]]
    print(
        f"\n{len(results)} programs; real luisa-python completed {len(completed)}; "
        f"luisa_nb completed and agreed on {len(agreeing)}; load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    (arguments.folder / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
