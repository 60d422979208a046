"""User ranges: named, nested spans of a program (``with lnb.range("iteration 37"):``),
recorded by the active recorder and shown as brackets over the commands made inside.

A command belongs to the ranges open when it was enqueued, a sync point to those open
when it was issued; :func:`innermost_ranges` finds the innermost one for many moments
at once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.recording.recorder import Recorder, active_recorder
from luisa_nb.recording.records import RangeRecord

Function = TypeVar("Function", bound=Callable[..., Any])
NO_RANGE = -1


class Range:
    """A named range of the program: a ``with`` block, or a decorator whose function's
    every call is one range. Ranges nest; with no trace recording they record nothing."""

    __slots__ = ("_open", "name")

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise InvalidArgumentError(
                f"lnb.range takes a str name, such as lnb.range('iteration 3'), not "
                f"{type(name).__name__} {name!r:.60}"
            )
        self.name = name
        self._open: list[tuple[Recorder, RangeRecord | None]] = []

    def __enter__(self) -> Range:
        recorder = active_recorder()
        self._open.append((recorder, recorder.range_opened(self.name)))
        return self

    def __exit__(self, *exc_info: object) -> None:
        recorder, token = self._open.pop()
        recorder.range_closed(token)

    def __call__(self, function: Function) -> Function:
        name = self.name

        @functools.wraps(function)
        def ranged(*args: Any, **kwargs: Any) -> Any:
            with Range(name):
                return function(*args, **kwargs)

        return ranged  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"lnb.range({self.name!r})"


def innermost_ranges(ranges: Sequence[RangeRecord], times: np.ndarray, stop: int) -> np.ndarray:
    """For each host time in ``times``, the id of the innermost range open then, or
    :data:`NO_RANGE`; a range with no end is open until ``stop``.

    ``ranges`` are in the order they began (a trace keeps them so), and each range lies
    within its parent, so the innermost range open at ``t`` is the latest to begin
    before ``t`` or one of its ancestors."""
    times = np.asarray(times, np.int64)
    if not ranges:
        return np.full(times.shape, NO_RANGE, np.int64)
    begins = np.array([r.begin for r in ranges], np.int64)
    ends = np.array([stop if r.end is None else r.end for r in ranges], np.int64)
    parents = np.array([NO_RANGE if r.parent is None else r.parent for r in ranges], np.int64)
    found = np.searchsorted(begins, times, side="right") - 1
    for _ in range(max(r.depth for r in ranges) + 1):
        closed = (found >= 0) & (ends[np.maximum(found, 0)] < times)
        if not closed.any():
            break
        found[closed] = parents[found[closed]]
    return found
