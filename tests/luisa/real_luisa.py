"""Running a program on real luisa-python (LuisaCompute's CPU backend), where it loads."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


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


def run_on_real_luisa(program: Path, *arguments: str) -> str:
    """The program's standard output on real luisa-python."""
    done = subprocess.run(
        [sys.executable, str(program), *arguments],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout
