"""Running luisa-python programs: on luisa_nb in this process, on real luisa-python
(LuisaCompute's CPU backend) in another, where it loads."""

from __future__ import annotations

import functools
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from luisa_nb.luisa.alias import as_luisa


def environment() -> dict[str, str]:
    clang = shutil.which("clang++")
    return {**os.environ, **({"LUISA_CLANG_PATH": clang} if clang else {})}


@functools.cache
def unavailable_reason() -> str | None:
    """Why real luisa-python's CPU backend cannot run here, or None when it can."""
    if shutil.which("clang++") is None:
        return "real luisa-python's CPU backend needs clang++ (Debian clang)"
    probe = "import luisa; luisa.init('cpu', support_gui=False)"
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env=environment(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "real luisa-python did not start within 120 s"
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"real luisa-python cannot start its CPU backend here: {last}"
    return None


def require_real_luisa() -> None:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)


def run_python(*arguments: str, timeout: float = 300) -> str:
    """The standard output of ``python ARGUMENTS`` with real luisa-python's environment."""
    done = subprocess.run(
        [sys.executable, *arguments],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return done.stdout


def run_on_real_luisa(program: Path, *arguments: str) -> str:
    """The program's standard output on real luisa-python."""
    return run_python(str(program), *arguments)


def run_on_luisa_nb(program: Path, *arguments: str) -> dict[str, object]:
    """Run the program in this process with ``import luisa`` giving luisa_nb.luisa; its
    globals. An ``init()`` it makes is the session's when one exists already."""
    saved = sys.argv
    sys.argv = [str(program), *arguments]
    try:
        with as_luisa():
            return runpy.run_path(str(program), run_name="__main__")
    finally:
        sys.argv = saved
