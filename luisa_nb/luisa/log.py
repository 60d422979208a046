"""luisa-python's log functions: ``info("x = {}", x)``, ``warning``, ``error``,
``verbose`` (and ``*_with_location``, which add the caller's ``[file:line]``), the
``log_level_*`` switches and ``set_log_callback``.

Messages go to the ``luisa`` logger of Python's :mod:`logging`, printed to stderr as
``[luisa] [info] message`` from the ``info`` level up (LuisaCompute's default), or to
the callback given to ``set_log_callback(callback)``, called as
``callback(level, message)`` with the level a letter as in luisa-python: "D" (verbose),
"I", "W" or "E".
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

LOGGER = logging.getLogger("luisa")
_LETTERS = {logging.DEBUG: "D", logging.INFO: "I", logging.WARNING: "W", logging.ERROR: "E"}
_NAMES = {logging.DEBUG: "verbose", logging.INFO: "info", logging.WARNING: "warning"}


class _Printed(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        level = _NAMES.get(record.levelno, "error")
        print(f"[luisa] [{level}] {record.getMessage()}", file=sys.stderr)


class _Callback(logging.Handler):
    def __init__(self, callback: Callable[[str, str], Any]) -> None:
        super().__init__()
        self.callback = callback

    def emit(self, record: logging.LogRecord) -> None:
        self.callback(_LETTERS.get(record.levelno, "E"), record.getMessage())


LOGGER.addHandler(_Printed())
LOGGER.setLevel(logging.INFO)
LOGGER.propagate = False


def set_log_callback(callback: Callable[[str, str], Any]) -> None:
    """Send every later message to ``callback(level, message)`` instead of stderr."""
    for handler in list(LOGGER.handlers):
        LOGGER.removeHandler(handler)
    LOGGER.addHandler(_Callback(callback))


def log_level_verbose() -> None:
    LOGGER.setLevel(logging.DEBUG)


def log_level_info() -> None:
    LOGGER.setLevel(logging.INFO)


def log_level_warning() -> None:
    LOGGER.setLevel(logging.WARNING)


def log_level_error() -> None:
    LOGGER.setLevel(logging.ERROR)


def _logger(level: int, where: bool) -> Callable[..., None]:
    """A log function: ``f(fmt, *args, **kwargs)`` logs ``fmt.format(*args, **kwargs)`` at
    ``level``; with ``where``, followed by the caller's ``[file:line]``."""

    def log(fmt: str, *args: Any, **kwargs: Any) -> None:
        if not LOGGER.isEnabledFor(level):
            return
        message = fmt.format(*args, **kwargs)
        if where:
            caller = sys._getframe(1)
            message += f" [{caller.f_code.co_filename}:{caller.f_lineno}]"
        LOGGER.log(level, message)

    return log


verbose = _logger(logging.DEBUG, where=False)
info = _logger(logging.INFO, where=False)
warning = _logger(logging.WARNING, where=False)
error = _logger(logging.ERROR, where=False)
verbose_with_location = _logger(logging.DEBUG, where=True)
info_with_location = _logger(logging.INFO, where=True)
warning_with_location = _logger(logging.WARNING, where=True)
error_with_location = _logger(logging.ERROR, where=True)
