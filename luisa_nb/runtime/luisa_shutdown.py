"""A clean exit for a process that ran real luisa-python with a Python log callback.

luisa-python sends LuisaCompute's log to a Python function in non-terminal IPython shells
(Jupyter kernels), or wherever ``luisa.set_log_callback`` was called. LuisaCompute keeps
that function in a C++ logger that is destroyed after the interpreter has finalized:
destroying it, or logging through it, waits for the GIL forever. A Jupyter kernel then
ignores a polite shutdown until jupyter_client terminates it.

:func:`leave_cleanly_at_exit` registers, once per process, a Python ``atexit`` hook that
runs while the interpreter still works: it synchronizes luisa's default stream (so the
last commands run, are traced and log through the user's callback), raises the log level
to errors, and drops the Python callback. Nothing is logged after that point that could
have been shown, since the callback could not have run during finalization anyway.
Leaving with ``os._exit`` instead would skip other ``atexit`` hooks (IPython's history)
and the flushing of files, so luisa_nb does not.
"""

from __future__ import annotations

import atexit
import sys
from typing import Any

_registered = False
_callback_set = False


def leave_cleanly_at_exit(luisa: Any) -> None:
    """Make the process exit without hanging in luisa-python's teardown (once)."""
    global _registered
    if _registered:
        return
    _registered = True
    original = luisa.set_log_callback

    def set_log_callback(callback: Any) -> None:
        global _callback_set
        _callback_set = callback is not None
        original(callback)

    luisa.set_log_callback = set_log_callback
    atexit.register(_drop_log_callback)


def python_log_callback_installed(luisa: Any) -> bool:
    """Whether luisa-python logs through a Python function: its own, which it installs
    at import in a non-terminal IPython shell, or one set with ``luisa.set_log_callback``."""
    return _callback_set or hasattr(luisa, "_default_log_callback")


def _drop_log_callback() -> None:
    luisa = sys.modules.get("luisa")
    if luisa is None or not python_log_callback_installed(luisa):
        return
    from luisa.dylibs import lcapi

    session = getattr(luisa.globalvars, "vars", None)
    try:
        if session is not None and getattr(session, "stream", None) is not None:
            luisa.synchronize()
    finally:
        lcapi.log_level_error()
        lcapi.set_log_callback(None)
