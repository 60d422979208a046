"""The loop a notebook user writes, a fresh host array each step, untraced and traced.

    LUISA_CLANG_PATH=/usr/bin/clang++ python benchmarks/bench_notebook_loop.py \
        [--steps 2000] [--repeats 7] [--sizes]

Each step makes a new host array, uploads it, runs a kernel on the buffer and downloads
the result, synchronously::

    for i in range(steps):
        host = np.full(1024, float(i), np.float32)
        buffer.copy_from(host); scale(buffer); buffer.copy_to(out)

on four runtimes:

- luisa_nb untraced, and traced (``lnb.trace()``, the default capture, and
  ``capture="none"``, which keeps digests and no bytes);
- ``luisa_nb.luisa`` (luisa-python's API on luisa_nb), traced: its commands gather in one
  implicit list, submitted by the synchronous ``copy_to``;
- real luisa-python 0.3.7 on its CPU backend, where it loads (it needs
  ``LUISA_CLANG_PATH``), untraced: it has no trace.

The forms take turns, one repeat each, garbage collected before each (untimed), so a
change in the machine's load falls on all alike. A ratio is the median over the rounds
of that round's ratio; the table gives the median µs per step and the fastest beside it,
and the load average. The CPU columns give the process's CPU time per step (every thread:
luisa_nb's workers, real luisa-python's native ones) and its ratios: on a machine other
processes keep busy, waiting for a core counts in the wall time but not in the CPU time.

``--sizes`` adds a table of luisa_nb's loop on 4 KiB, 64 KiB and 1 MiB arrays (fewer
steps for larger ones, the same bytes moved), untraced and traced: a trace hashes every
byte moved and copies up to the capture head (64 KiB) of each new array, so its share grows
with the array.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_commands import interleaved, median_ratio
from timing import load_average, print_table

import luisa_nb as lnb

SIZE = 1024
SIZES = (SIZE, 16 * SIZE, 256 * SIZE)
"""Array lengths (float32) of ``--sizes``: 4 KiB, 64 KiB (the default capture head) and 1 MiB."""


def fresh_array_loop(buffer: Any, scale: Any, steps: int, size: int = SIZE) -> Callable[[], None]:
    """The loop, on ``buffer`` (of ``size`` float32) and the kernel ``scale``, which doubles
    it: the same lines in luisa_nb's API and luisa-python's."""
    out = np.empty(size, np.float32)

    def run() -> None:
        for i in range(steps):
            host = np.full(size, float(i), np.float32)
            buffer.copy_from(host)
            scale(buffer, dispatch_size=size)
            buffer.copy_to(out)
        assert out[0] == 2.0 * (steps - 1)

    return run


def luisa_nb_loop(steps: int, size: int = SIZE) -> Callable[[], None]:
    @lnb.kernel
    def scale(values):
        index = lnb.dispatch_id().x
        values.write(index, values.read(index) * 2.0)

    buffer = lnb.create_device("cpu").create_buffer(size, np.float32)
    return fresh_array_loop(buffer, scale, steps, size)


def traced(function: Callable[[], None], capture: str = "head") -> Callable[[], None]:
    def run() -> None:
        with lnb.trace(capture=capture):
            function()

    return run


def luisa_api_loop(luisa, steps: int) -> Callable[[], None]:
    """The loop in luisa-python's API; ``luisa`` is real luisa-python or luisa_nb.luisa."""

    @luisa.func
    def scale(values):
        index = dispatch_id().x  # noqa: F821  (luisa-python resolves builtins by name)
        values.write(index, values.read(index) * 2.0)

    return fresh_array_loop(luisa.Buffer(SIZE, dtype=float), scale, steps)


def luisa_nb_luisa_loop(steps: int) -> Callable[[], None]:
    from luisa_nb.luisa.alias import as_luisa

    with as_luisa():
        import luisa

        luisa.init("cpu")
        return luisa_api_loop(luisa, steps)


def real_luisa_loop(steps: int) -> tuple[Callable[[], None] | None, str]:
    """The loop on real luisa-python, or None and why it did not load."""
    if not os.environ.get("LUISA_CLANG_PATH"):
        return None, "LUISA_CLANG_PATH is not set (real luisa-python needs clang++)"
    try:
        import luisa
    except ImportError as error:
        return None, f"real luisa-python is not importable ({error})"
    if luisa.__name__ != "luisa" or luisa.__file__.startswith(os.path.dirname(lnb.__file__)):
        return None, "`import luisa` found luisa_nb's alias, not real luisa-python"
    luisa.init("cpu", support_gui=False)
    return luisa_api_loop(luisa, steps), ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--sizes", action="store_true", help="also the loop on larger arrays, luisa_nb only"
    )
    arguments = parser.parse_args()
    steps, repeats = arguments.steps, arguments.repeats
    real, why_not = real_luisa_loop(steps)
    untraced = luisa_nb_loop(steps)
    names = [
        "luisa_nb untraced",
        "luisa_nb traced",
        "luisa_nb traced, capture='none'",
        "luisa_nb.luisa traced",
    ]
    forms = [untraced, traced(untraced), traced(untraced, "none")]
    forms.append(traced(luisa_nb_luisa_loop(steps)))
    if real is not None:
        names.append("real luisa-python 0.3.7 (untraced)")
        forms.append(real)
    seconds, cpu_seconds, _ = interleaved(forms, repeats)
    real_index = len(names) - 1 if real is not None else None
    rows = []
    for index, name in enumerate(names):
        row = [name]
        for times in (seconds, cpu_seconds):
            runs = times[index]
            row += [
                statistics.median(runs) / steps * 1e6,
                median_ratio(runs, times[0]),
                "" if real_index is None else median_ratio(runs, times[real_index]),
            ]
        row.insert(2, min(seconds[index]) / steps * 1e6)
        rows.append(row)
    print_table(
        f"fresh-array loop ({SIZE} float32 up, kernel, down, synchronous), µs per step over "
        f"{steps:,} steps, median of {repeats} ({load_average()})",
        ["runtime", "µs per step", "fastest µs", "vs luisa_nb untraced", "vs real luisa",
         "CPU µs", "CPU vs untraced", "CPU vs real"],
        rows,
    )  # fmt: skip
    if real is None:
        print(f"real luisa-python left out: {why_not}")
    if arguments.sizes:
        print_sizes(steps, repeats)
    return 0


def print_sizes(steps: int, repeats: int) -> None:
    """The loop on arrays of 4 KiB to 1 MiB, untraced and traced, the same bytes in all."""
    rows = []
    for size in SIZES:
        sized_steps = max(100, steps * SIZE // size)
        untraced = luisa_nb_loop(sized_steps, size)
        seconds, _, _ = interleaved([untraced, traced(untraced), traced(untraced, "none")], repeats)
        rows.append(
            [
                f"{size * 4 // 1024} KiB",
                sized_steps,
                statistics.median(seconds[0]) / sized_steps * 1e6,
                statistics.median(seconds[1]) / sized_steps * 1e6,
                median_ratio(seconds[1], seconds[0]),
                median_ratio(seconds[2], seconds[0]),
            ]
        )
    print_table(
        f"the same loop on larger arrays, luisa_nb, median of {repeats} ({load_average()})",
        ["array", "steps", "untraced µs", "traced µs", "traced / untraced",
         "capture='none' / untraced"],
        rows,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
