"""Shared helpers for the benchmark scripts: timing, the load average and a plain table."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence


def best_of(function: Callable[[], object], repeats: int = 5) -> float:
    """The fastest of ``repeats`` runs of ``function``, in seconds (one warm-up first)."""
    function()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def timings(function: Callable[[], object], repeats: int) -> list[float]:
    """Seconds of each of ``repeats`` runs of ``function`` (after one warm-up run)."""
    function()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - start)
    return seconds


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, to print beside a table."""
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(c) for c in header]] + [[_format(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    print(f"\n{title}")
    for index, row in enumerate(cells):
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))


def _format(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
