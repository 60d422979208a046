"""How an error about a file read as hostile input words what it found: values and names
from the file escaped and cut short, and one piece of advice for a damaged file."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

DAMAGED = "the file is damaged or was not written by luisa_nb; save the trace again"


def error_summary(error: BaseException) -> str:
    """The first line of ``error``'s message, short enough for one error line."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def short_repr(value: Any, limit: int = 60) -> str:
    """A repr of ``value`` (from a file) for an error line: escaped, and cut to about
    ``limit`` characters without building the repr of a huge value first."""
    if isinstance(value, (list, dict)):
        return f"{'an array' if isinstance(value, list) else 'an object'} of {len(value)} items"
    if type(value) is int and value.bit_length() > 4 * limit:
        return f"an int of {value.bit_length()} bits"
    text = repr(value[: limit + 1] if isinstance(value, str) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short_names(names: Collection[Any], limit: int = 5) -> str:
    """``names`` (from a file) for an error line: at most ``limit``, each short."""
    shown = ", ".join(short_repr(name, 40) for name in list(names)[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
