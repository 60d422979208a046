"""Running reproducers (:mod:`luisa_nb.analysis.reproducer`): every candidate of a shrink on
luisa_nb, in this process, and the result on real luisa-python, in fresh processes.

A candidate reproduces when its luisa_nb program fails its ``assert`` and the same program
with the fix passes. :func:`confirm` runs the luisa-python program ``runs`` times and says
whether the real runtime shows the bug every time (``stale``), never (``correct``) or in
some runs only (``racy``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from luisa_nb.analysis import Hazard
from luisa_nb.analysis.reproducer import ReproProgram
from luisa_nb.analysis.reproducer_text import Reproducer, program_text, write_reproducer
from luisa_nb.errors import ReproducerError
from luisa_nb.recording import Trace
from luisa_nb.runtime import Device

CONFIRM_RUNS = 5


def run_text(text: str) -> str:
    """Run a luisa_nb program in this process: ``"failed"`` (its assert failed),
    ``"passed"`` or ``"error"`` (anything else went wrong). Devices it made are closed."""
    namespace: dict = {"__name__": "__reproducer__"}
    try:
        exec(compile(text, "<reproducer>", "exec"), namespace)
    except AssertionError:
        return "failed"
    except Exception:  # a candidate that breaks does not reproduce
        return "error"
    finally:
        for value in namespace.values():
            if isinstance(value, Device):
                value.close()
    return "passed"


RACY_CHECKS = 3
"""Runs of a program of several lists that must all fail: whether an upload of a later
list reads what a download of an earlier one wrote depends on timing."""


def reproduces_on_luisa_nb(program: ReproProgram) -> bool:
    """Whether ``program`` fails on luisa_nb (every time, in :data:`RACY_CHECKS` runs, when
    it has several lists) and passes with the fix."""
    text = program_text(program, "lnb")
    checks = RACY_CHECKS if len(program.list_ends()) > 1 else 1
    if any(run_text(text) != "failed" for _ in range(checks)):
        return False
    return run_text(program_text(program, "lnb", fixed=True)) == "passed"


def reproducer(trace: Trace, finding: Hazard, api: str = "luisa") -> Reproducer:
    """``finding``'s reproducer, shrunk by running each candidate on luisa_nb."""
    return write_reproducer(trace, finding, reproduces_on_luisa_nb, api)


@dataclass(frozen=True)
class Confirmation:
    """What real luisa-python did with a reproducer: ``outcome`` is ``stale`` (the assert
    failed in every run), ``correct`` (in none) or ``racy``; ``fixed_passed`` says whether
    the program with the fix passed in every run."""

    outcome: str
    stale_runs: int
    runs: int
    fixed_passed: bool

    @property
    def reason(self) -> str:
        if self.outcome == "stale":
            found = f"stale in all {self.runs} runs on real luisa-python"
        elif self.outcome == "correct":
            found = f"correct in all {self.runs} runs on real luisa-python: it shows no bug"
        else:
            found = (
                f"racy: stale in {self.stale_runs} of {self.runs} runs on real luisa-python "
                "(it depends on whether the download has run when the upload's list is "
                "submitted)"
            )
        fixed = "passes" if self.fixed_passed else "still fails"
        return f"{found}; with the fix it {fixed}"


def real_luisa_missing() -> str | None:
    """Why real luisa-python cannot run here, or None when it can."""
    if importlib.util.find_spec("luisa") is None:
        return "luisa-python is not installed (pip install luisa-python==0.3.7)"
    if not (os.environ.get("LUISA_CLANG_PATH") or shutil.which("clang++")):
        return "luisa-python's CPU backend needs clang++ (set LUISA_CLANG_PATH)"
    return None


def confirm(found: Reproducer, runs: int = CONFIRM_RUNS, timeout: float = 300.0) -> Confirmation:
    """Run ``found``'s luisa-python program ``runs`` times, and the fixed one as often, on
    real luisa-python, each in a fresh process."""
    missing = real_luisa_missing()
    if missing is not None:
        raise ReproducerError(f"cannot confirm on real luisa-python: {missing}")
    if runs < 1:
        raise ReproducerError(f"runs={runs}: confirm needs at least one run")
    text, fixed = (
        (found.text, found.fixed_text)
        if found.api == "luisa"
        else (
            program_text(found.program, "luisa"),
            program_text(found.program, "luisa", fixed=True),
        )
    )
    stale = sum(_fails_on_real_luisa(text, timeout) for _ in range(runs))
    fixed_passed = not any(_fails_on_real_luisa(fixed, timeout) for _ in range(runs))
    outcome = "stale" if stale == runs else ("correct" if stale == 0 else "racy")
    return Confirmation(outcome, stale, runs, fixed_passed)


def _fails_on_real_luisa(text: str, timeout: float) -> bool:
    environment = dict(os.environ)
    environment.setdefault("LUISA_CLANG_PATH", shutil.which("clang++") or "")
    with tempfile.TemporaryDirectory(prefix="luisa-nb-repro-") as folder:
        path = Path(folder, "repro.py")
        path.write_text(text, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
            cwd=folder,
            check=False,
        )
    if done.returncode == 0:
        return False
    if "AssertionError" in done.stderr:
        return True
    tail = "\n".join(done.stderr.strip().splitlines()[-5:])
    raise ReproducerError(
        f"the reproducer broke on real luisa-python (exit {done.returncode}), not at its "
        f"assert:\n{tail}"
    )
