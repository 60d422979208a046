"""``python -m tests.hostile.worker``: runs the cases the sweep sends, one at a time, in its
main thread (where Ctrl-C lands), and answers each with its outcome.

Requests are ``(module, action, arguments)``; answers are ``(outcome, detail, seconds)``,
after a first answer ``"ready"`` once every area is imported. What cases print goes
nowhere; what they write to the standard error stays there (the sweep keeps it per
worker). Between cases :func:`~tests.hostile.devices.settle` puts the shared state back.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import time
from pathlib import Path

from luisa_nb.errors import LuisaNbError

from .cases import AREAS, action_of, area_module
from .devices import settle
from .frames import read_frame, write_frame
from .outcomes import judge
from .trace_samples import folder


def run_case(module: str, action: str, arguments: tuple) -> tuple[str, str, float]:
    """Run one case and judge it; its cleanup counts as part of it."""
    started = time.perf_counter()
    error: BaseException | None = None
    try:
        action_of(module, action)(*arguments)
    except BaseException as raised:
        error = raised
    try:
        settle()
    except BaseException as raised:  # a runtime broken after a clean outcome is not clean
        error = raised if error is None or isinstance(error, LuisaNbError) else error
    outcome, detail = judge(error)
    return outcome.value, detail, time.perf_counter() - started


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    faulthandler.enable()
    for area in AREAS:
        area_module(area)
    # Relative paths that cases make land in the worker's folder; the processes cases
    # start (a remote device's server) still import luisa_nb from where the worker does.
    root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    os.chdir(folder())
    write_frame(answers, "ready")
    while True:
        try:
            request = read_frame(sys.stdin.buffer)
        except KeyboardInterrupt:  # a late Ctrl-C of a case that has ended
            continue
        if request is None:
            return
        write_frame(answers, run_case(*request))


if __name__ == "__main__":
    main()
