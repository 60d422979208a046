"""Which backend real luisa-python runs on, and whether one can start at all.

luisa-python's ``init("cuda")`` on a machine without a GPU driver does not raise: its
context fails an assertion and aborts the process (a notebook's kernel dies). So a
backend other than ``cpu`` is first started in a child process; only when that works is
it started here. The CPU backend raises where it cannot start, and is not probed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

from luisa_nb.errors import LuisaNbError

PROBE_TIMEOUT_S = 120.0
UNPROBED_BACKENDS = ("cpu",)


def started_backend(luisa: Any) -> str | None:
    """The backend luisa-python was initialized on in this process (``"cuda"``), or None
    before ``luisa.init``."""
    if getattr(luisa.globalvars, "vars", None) is None:
        return None
    device = getattr(luisa.globalvars, "device", None)
    if device is None:
        return None
    return str(device.impl().backend_name())


def check_backend_starts(backend: str) -> None:
    """Raise :class:`LuisaNbError` saying why, when real luisa-python cannot initialize
    ``backend`` (tried in a child process, for any backend but ``cpu``)."""
    if backend in UNPROBED_BACKENDS:
        return
    probe = f"import luisa; luisa.init({backend!r}, support_gui=False)"
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LuisaNbError(
            f"real luisa-python did not start backend {backend!r} within "
            f"{PROBE_TIMEOUT_S:.0f} s; check its driver, or use luisa:cpu"
        ) from None
    if done.returncode:
        raise LuisaNbError(
            f"real luisa-python cannot start backend {backend!r} here: "
            f"{failure_reason(done.stdout + done.stderr, done.returncode)}; "
            "use a machine where it loads (for cuda: a GPU and its driver), or luisa:cpu"
        )


def failure_reason(output: str, returncode: int) -> str:
    """The line of luisa-python's log that says why a backend did not load: the reason
    a module failed to load, else the last error or exception line, else the exit status."""
    for pattern in (r"reason: (.+?)\.? \[", r"\[error\] (.+?)\.? \[", r"^(\w+Error: .+)$"):
        found = re.findall(pattern, output, re.MULTILINE)
        if found:
            return found[-1].strip()
    return f"the probe exited with status {returncode}"
