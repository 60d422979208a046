"""Where a traced notebook loop's time goes: the wall time of each recorder hook per step.

    python benchmarks/bench_trace_hooks.py [--steps 2000] [--repeats 7] [--size 1024]

Runs the fresh-array loop of ``bench_notebook_loop.py`` in four forms, taking turns:
untraced; traced with every hook replaced by one that records nothing (what the runtime's
recording paths cost without the recorder); traced; and traced with each hook wrapped in
a timer. The hooks are the recorder's ``upload_enqueued``, ``download_enqueued``,
``host_read``, ``host_reads``, ``host_write``, ``sync_issued`` and ``sync_completed``, and
the runtime's report of a submission (``report_submitted``) and start of a run
(``start_run``). A wrapper costs a Python call and two clock reads; that cost, measured on
a wrapped function that does nothing, is taken off each call (so a hook that returns at
once can show a few tens of ns below zero).

The last row is what recording costs beyond the hooks' own time: the traced step less the
step whose hooks record nothing, less the hooks. It holds the run's ticks, the trace's
stop and its freeing (the loop's trace is dropped at the end of its ``with`` block), and
the rest of the step running slower beside the recorder's work.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

from bench_commands import interleaved, median_ratio
from bench_notebook_loop import SIZE, luisa_nb_loop, traced
from timing import load_average, print_table

from luisa_nb.errors import PendingCommandsWarning
from luisa_nb.recording.recorder import NULL_TIMER, TraceRecorder
from luisa_nb.runtime import execution, stream

RECORDER_HOOKS = (
    "upload_enqueued",
    "download_enqueued",
    "host_read",
    "host_reads",
    "host_write",
    "sync_issued",
    "sync_completed",
)
RUNTIME_HOOKS = ((stream, "report_submitted"), (execution, "start_run"))


class HookTimes:
    """Nanoseconds and calls per hook, of the hooks :meth:`wrap` wrapped."""

    def __init__(self) -> None:
        self.totals: dict[str, list[int]] = {}
        """By hook: ``[nanoseconds, calls]``."""

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        clock, total = time.perf_counter_ns, self.totals.setdefault(name, [0, 0])

        def timed(*arguments: Any, **keywords: Any) -> Any:
            start = clock()
            result = function(*arguments, **keywords)
            total[0] += clock() - start
            total[1] += 1
            return result

        return timed

    def clear(self) -> None:
        for total in self.totals.values():
            total[:] = [0, 0]


def wrapper_cost(times: HookTimes, calls: int = 200_000) -> float:
    """Nanoseconds a wrapper adds to a call: a wrapped no-op against the no-op itself."""

    def nothing(*arguments: Any) -> None:
        return None

    wrapped = times.wrap("nothing", nothing)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(calls):
            wrapped(None)
        middle = time.perf_counter_ns()
        for _ in range(calls):
            nothing(None)
        best = min(best, (2 * middle - start - time.perf_counter_ns()) / calls)
    del times.totals["nothing"]
    return best


Maker = Callable[[str, Callable[..., Any]], Callable[..., Any]]
"""What makes a hook's replacement from its name and the hook."""


def replace_hooks(
    make: Callable[[str, Callable[..., Any]], Callable[..., Any]],
) -> Callable[[], None]:
    """Put ``make(name, hook)`` in place of every hook; returns what puts them back."""
    originals = [(TraceRecorder, name, TraceRecorder.__dict__.get(name)) for name in RECORDER_HOOKS]
    for name in RECORDER_HOOKS:
        setattr(TraceRecorder, name, make(name, getattr(TraceRecorder, name)))
    for module, name in RUNTIME_HOOKS:
        originals.append((module, name, getattr(module, name)))
        setattr(module, name, make(name, getattr(module, name)))

    def restore() -> None:
        for owner, name, original in originals:
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)

    return restore


def idle_hook(name: str, hook: Callable[..., Any]) -> Callable[..., Any]:
    """A hook that records nothing, returning what the runtime needs: no capture, no
    sync token, the null timer."""
    if name == "start_run":
        return lambda *arguments: NULL_TIMER
    return lambda *arguments, **keywords: None


def with_hooks(make: Maker, function: Callable[[], None]) -> Callable[[], None]:
    """``function`` with the hooks replaced while it runs."""

    def run() -> None:
        restore = replace_hooks(make)
        try:
            function()
        finally:
            restore()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--size", type=int, default=SIZE, help="float32 per array")
    arguments = parser.parse_args()
    steps, repeats = arguments.steps, arguments.repeats
    untraced = luisa_nb_loop(steps, arguments.size)
    times = HookTimes()
    overhead = wrapper_cost(times)
    runs: list[dict[str, tuple[float, float]]] = []

    def timed_hooks() -> None:
        times.clear()
        with_hooks(times.wrap, traced(untraced))()
        totals = times.totals.items()
        runs.append(
            {n: ((ns - overhead * calls) / steps, calls / steps) for n, (ns, calls) in totals}
        )

    with warnings.catch_warnings():  # a trace whose hooks record nothing says it is empty
        warnings.simplefilter("ignore", PendingCommandsWarning)
        forms = [untraced, with_hooks(idle_hook, traced(untraced)), traced(untraced), timed_hooks]
        seconds, _, _ = interleaved(forms, repeats)
    untraced_step, idle_step, traced_step = (
        statistics.median(s) / steps * 1e9 for s in seconds[:3]
    )
    print_table(
        f"fresh-array loop ({arguments.size} float32), median of {repeats} ({load_average()})",
        ["form", "ns per step", "vs untraced"],
        [
            ["untraced", untraced_step, 1.0],
            ["traced, every hook doing nothing", idle_step, median_ratio(seconds[1], seconds[0])],
            ["traced", traced_step, median_ratio(seconds[2], seconds[0])],
        ],
    )
    runs = runs[1:]  # the warm-up run
    names = [n for n in (*RECORDER_HOOKS, *(n for _, n in RUNTIME_HOOKS)) if runs[0][n][1]]
    rows = []
    for name in sorted(names, key=lambda n: -statistics.median(run[n][0] for run in runs)):
        rows.append(
            [name, statistics.median(run[name][1] for run in runs),
             statistics.median(run[name][0] for run in runs)]
        )  # fmt: skip
    hooks = sum(row[2] for row in rows)
    recording = traced_step - idle_step
    rows += [
        ["the hooks' own time", "", hooks],
        ["recording (traced less traced doing nothing)", "", recording],
        ["the rest of the step, slower traced", "", recording - hooks],
    ]
    print_table(
        f"ns per step inside each hook, a wrapper's own {overhead:.0f} ns taken off each call",
        ["hook", "calls per step", "ns per step"],
        rows,
    )


if __name__ == "__main__":
    main()
