"""``print(...)`` inside a kernel: luisa-python's formatting and a bounded log per launch.

Real luisa-python 0.3.7 prints a kernel's line as ``[DEVICE] `` followed by its arguments
separated by spaces: floats as C's ``%g`` (``1``, ``0.333333``, ``1e+10``), bools as
``true``/``false``, vectors as ``(1, 2, 3)``, strings as they are. Compiled C and Python
mode hand the lines of one launch to the :class:`PrintCollector` of the thread that runs
it (the runtime installs one per dispatch, see ``runtime/device_prints.py``); with none
installed, the lines go to stdout at once. A launch keeps at most ``limit`` lines
(:data:`DEFAULT_PRINT_LIMIT`) and counts the rest as dropped, so a print in a kernel of
millions of threads cannot fill memory.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from luisa_nb.kernels.lang.aggregates import ArrayType, StructType
from luisa_nb.kernels.type_system import ScalarType, VectorType

DEVICE_PREFIX = "[DEVICE] "
PRINT_LIMIT_VARIABLE = "LUISA_NB_PRINT_LIMIT"
DEFAULT_PRINT_LIMIT = 4096
"""Lines kept per dispatch unless ``$LUISA_NB_PRINT_LIMIT`` says otherwise."""

Thread = tuple[int, int, int]


def print_limit() -> int:
    """The number of lines one launch keeps: ``$LUISA_NB_PRINT_LIMIT`` (an int >= 0),
    else :data:`DEFAULT_PRINT_LIMIT`."""
    text = os.environ.get(PRINT_LIMIT_VARIABLE, "")
    return int(text) if text.strip().isdigit() else DEFAULT_PRINT_LIMIT


def format_float(value: float) -> str:
    """A float as C's ``%g`` writes it (six significant digits), as luisa-python does."""
    return "%g" % value  # noqa: UP031 - C's %g is the format being reproduced


def format_scalar(value: Any, kind: ScalarType) -> str:
    """One scalar of kernel type ``kind`` as luisa-python's device print writes it."""
    if kind is ScalarType.BOOL:
        return "true" if value else "false"
    if kind.is_float:
        return format_float(float(value))
    return str(int(value))


def leaf_kinds(kind: Any) -> list[ScalarType]:
    """The scalars a value of ``kind`` prints, in order: itself, a vector's components, a
    struct's fields or an array's elements, each in turn."""
    if isinstance(kind, ScalarType):
        return [kind]
    if isinstance(kind, VectorType):
        return [kind.element] * kind.length
    if isinstance(kind, StructType):
        return [leaf for field in kind.fields.values() for leaf in leaf_kinds(field)]
    if isinstance(kind, ArrayType):
        return leaf_kinds(kind.element) * kind.size
    raise TypeError(f"{kind} values are not printed")


def render(kind: Any, texts: Iterator[str]) -> str:
    """A value of ``kind`` from the texts of its leaves: ``(x, y)`` for a vector,
    ``{a, b}`` for a struct, ``[a, b]`` for an array, as luisa-python writes them."""
    if isinstance(kind, ScalarType):
        return next(texts)
    if isinstance(kind, VectorType):
        return "(" + ", ".join(next(texts) for _ in range(kind.length)) + ")"
    if isinstance(kind, StructType):
        return "{" + ", ".join(render(field, texts) for field in kind.fields.values()) + "}"
    return "[" + ", ".join(render(kind.element, texts) for _ in range(kind.size)) + "]"


def python_leaves(value: Any, kind: Any) -> list[Any]:
    """The leaf scalars of a Python-mode value of ``kind`` (see :func:`leaf_kinds`)."""
    if isinstance(kind, ScalarType):
        return [value]
    if isinstance(kind, VectorType):
        return np.asarray(value).tolist()
    if isinstance(kind, StructType):
        fields = [python_leaves(getattr(value, name), t) for name, t in kind.fields.items()]
        return [leaf for field in fields for leaf in field]
    return [leaf for i in range(kind.size) for leaf in python_leaves(value[i], kind.element)]


def format_value(value: Any, kind: Any) -> str:
    """A scalar, vector, struct or array of kernel type ``kind``."""
    texts = map(format_scalar, python_leaves(value, kind), leaf_kinds(kind))
    return render(kind, iter(texts))


def format_python_value(value: Any) -> str:
    """A Python-mode value (a numpy scalar, a vector, a struct, an array, a Python number
    or a string)."""
    if isinstance(value, str):
        return value
    kind = getattr(type(value), "__lnb_type__", None)
    if isinstance(kind, (ScalarType, VectorType, StructType, ArrayType)):
        return format_value(value, kind)
    if isinstance(value, (bool, np.bool_)):
        return format_scalar(value, ScalarType.BOOL)
    if isinstance(value, (float, np.floating)):
        return format_float(float(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


class PrintCollector:
    """The lines printed by the launches of one dispatch: ``lines`` as
    ``(thread, text)`` in the order they were kept, and how many were ``dropped`` past
    ``limit``."""

    __slots__ = ("dropped", "limit", "lines")

    def __init__(self, limit: int | None = None) -> None:
        self.limit = print_limit() if limit is None else limit
        self.lines: list[tuple[Thread, str]] = []
        self.dropped = 0

    def add(self, thread: Thread, text: str) -> None:
        if len(self.lines) < self.limit:
            self.lines.append((thread, text))
        else:
            self.dropped += 1

    def extend(self, lines: Sequence[tuple[Thread, str]], dropped: int = 0) -> None:
        """Lines of a launch that kept them itself, and how many it dropped."""
        room = max(self.limit - len(self.lines), 0)
        self.lines.extend(lines[:room])
        self.dropped += dropped + max(len(lines) - room, 0)


class _Collectors(threading.local):
    current: PrintCollector | None = None


_collectors = _Collectors()


@contextmanager
def collecting(limit: int | None = None) -> Iterator[PrintCollector]:
    """Gather the lines of the launches this thread runs in the block."""
    previous = _collectors.current
    collector = _collectors.current = PrintCollector(limit)
    try:
        yield collector
    finally:
        _collectors.current = previous


def current_collector() -> PrintCollector:
    """This thread's collector; without one, a collector that writes to stdout when
    :func:`deliver` is called."""
    return _collectors.current or PrintCollector()


def deliver(collector: PrintCollector) -> None:
    """Write a launch's lines to stdout where no dispatch collects them."""
    if collector is not _collectors.current:
        write_lines(collector.lines, collector.dropped)


def write_lines(lines: Sequence[tuple[Thread, str]], dropped: int) -> None:
    """Lines to stdout as luisa-python sends them (``[DEVICE] ...``), then a note of the
    lines dropped, if any."""
    if not lines and not dropped:
        return
    text = "".join(f"{DEVICE_PREFIX}{line}\n" for _, line in lines)
    if dropped:
        text += f"{DEVICE_PREFIX}... {dropped} more lines dropped ({PRINT_LIMIT_VARIABLE})\n"
    sys.stdout.write(text)
    sys.stdout.flush()
