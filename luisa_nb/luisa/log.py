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


def _log(level: int, text: str, args: tuple[Any, ...], kwargs: dict[str, Any], where: bool) -> None:
    if not LOGGER.isEnabledFor(level):
        return
    message = text.format(*args, **kwargs)
    if where:
        caller = sys._getframe(2)
        message += f" [{caller.f_code.co_filename}:{caller.f_lineno}]"
    LOGGER.log(level, message)


def verbose(fmt: str, *args: Any, **kwargs: Any) -> None:
    _log(logging.DEBUG, fmt, args, kwargs, False)


def info(fmt: str, *args: Any, **kwargs: Any) -> None:
    _log(logging.INFO, fmt, args, kwargs, False)


def warning(fmt: str, *args: Any, **kwargs: Any) -> None:
    _log(logging.WARNING, fmt, args, kwargs, False)


def error(fmt: str, *args: Any, **kwargs: Any) -> None:
    _log(logging.ERROR, fmt, args, kwargs, False)


def verbose_with_location(fmt: str, *args: Any, **kwargs: Any) -> None:
    _log(logging.DEBUG, fmt, args, kwargs, True)


def info_with_location(fmt: str, *args: Any, **kwargs: Any) -> None:
    _log(logging.INFO, fmt, args, kwargs, True)


def warning_with_location(fmt: str, *args: Any, **kwargs: Any) -> None:
    _log(logging.WARNING, fmt, args, kwargs, True)


def error_with_location(fmt: str, *args: Any, **kwargs: Any) -> None:
    _log(logging.ERROR, fmt, args, kwargs, True)
