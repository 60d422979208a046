"""Cases with a known outcome, for testing the sweep itself (``test_sweep_tool.py``): one of
each outcome, and a case that leaves a process behind it."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

from luisa_nb.errors import InvalidArgumentError

from .cases import Case, case
from .devices import shared_device
from .oracles import fail


def completes() -> None:
    pass


def raises_a_luisa_nb_error() -> None:
    raise InvalidArgumentError("a clean error")


def raises_a_type_error() -> None:
    raise TypeError("a raw error")


def gives_a_wrong_result() -> None:
    fail("the result is wrong")


def needs_a_missing_device() -> None:
    shared_device("no such backend")


def never_returns() -> None:
    while True:
        time.sleep(1)


def dies_by_signal() -> None:
    ctypes.string_at(0)


def exits() -> None:
    os._exit(3)


def leaves_a_child(pid_file: str) -> None:
    """Start a process that outlives the case, write its pid, and hang."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(pid_file).write_text(str(child.pid))
    never_returns()


def probes() -> list[tuple[Case, str]]:
    """Each probe case with the outcome the sweep must give it."""
    return [
        (case(completes, "completes"), "clean"),
        (case(raises_a_luisa_nb_error, "raises a luisa_nb error"), "clean"),
        (case(raises_a_type_error, "raises a TypeError"), "raw"),
        (case(gives_a_wrong_result, "gives a wrong result"), "silent"),
        (case(needs_a_missing_device, "needs a device that does not exist"), "raw"),
        (case(never_returns, "never returns", timeout=2), "hang"),
        (case(dies_by_signal, "dies by a signal"), "crash"),
        (case(exits, "exits"), "crash"),
        (case(completes, "completes after the others"), "clean"),
    ]
