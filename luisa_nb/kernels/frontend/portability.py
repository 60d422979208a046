"""Warnings where luisa_nb accepts what real luisa-python 0.3.7 rejects, so that a program
debugged here also runs there: each place warns once per process, with a
:class:`~luisa_nb.errors.LuisaNbWarning` located at the program's line."""

from __future__ import annotations

import sys
import threading
import warnings

from luisa_nb.errors import LuisaNbWarning

_warned: set[tuple[str, str, int]] = set()
_lock = threading.Lock()


def warn_not_in_luisa(feature: str, filename: str, line: int, advice: str) -> None:
    """Warn that ``feature``, used at ``filename:line``, fails on real luisa-python 0.3.7;
    ``advice`` says what runs on both. Once per feature and place."""
    key = (feature, filename, line)
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    message = f"{feature} works here but not on real luisa-python 0.3.7; {advice}"
    warnings.warn_explicit(message, LuisaNbWarning, filename, line)


def warn_caller_not_in_luisa(feature: str, advice: str, depth: int = 2) -> None:
    """:func:`warn_not_in_luisa` at the line that called the caller of this function."""
    frame = sys._getframe(depth)
    warn_not_in_luisa(feature, frame.f_code.co_filename, frame.f_lineno, advice)
