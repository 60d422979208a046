"""Cost per command of the runtime as a user's loop pays it, untraced and traced, with a
numpy memcpy of the same bytes as the reference, all in one run.

    python benchmarks/bench_commands.py [--count 10000] [--repeats 21]
    LUISA_NB_PYTHON_RECORDER=1 python benchmarks/bench_commands.py   # the Python hooks

Four loops, each under both staging policies:

- tiny dispatch, batched: ``stream.submit([tiny.dispatch_async(1, buf) for _ in ...])``
- tiny dispatch, one submission each: ``tiny(buf, dispatch_size=1)`` in a loop (the
  luisa-python calling style; each call is one submission)
- 4 KiB upload, batched: ``stream.submit([buf.copy_from_async(host) for _ in ...])``
- 4 KiB upload, one submission each: ``buf.copy_from(host)`` in a loop

Each loop ends with ``stream.synchronize()``; making the commands, submitting, running
them and (traced) stopping the trace are all timed. The untraced and traced forms of a
loop take turns, one repeat each, so that a change in the machine's load falls on both
alike, and garbage is collected before each (untimed), so that what one form left behind
(a stopped trace is freed by the cycle collector) is not collected in the next one's
time. The table gives the median of the repeats and the fastest, and the load average
beside it: on a shared machine other processes' work shows up as a wide spread. A ratio
is the median over the rounds of that round's traced/untraced ratio: the two runs of a
round follow each other, so a change in the machine's speed between rounds falls out of
it. The column "CPU traced/untraced" gives the ratio of CPU time (both threads): waiting
for the machine does not count in it, so it moves less than the wall-time ratio. The
last two give the garbage collector's share of the µs per command, untraced and traced
(``gc.callbacks``): commands waiting for the worker are young objects it visits again
and again.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np
from timing import load_average, print_table, timings

import luisa_nb as lnb
from luisa_nb.recording import row_appender

UPLOAD_BYTES = 4096


def loops(count: int, staging: str) -> dict[str, object]:
    device = lnb.create_device("cpu", staging=staging)
    stream = device.default_stream
    buffer = device.create_buffer(UPLOAD_BYTES // 4, np.float32)
    host = np.ones(UPLOAD_BYTES // 4, np.float32)

    @lnb.kernel
    def tiny(target):
        target.write(lnb.dispatch_id().x, 1.0)

    def dispatch_batched():
        stream.submit([tiny.dispatch_async(1, buffer) for _ in range(count)])
        stream.synchronize()

    def dispatch_each():
        for _ in range(count):
            tiny(buffer, dispatch_size=1)
        stream.synchronize()

    def upload_batched():
        stream.submit([buffer.copy_from_async(host) for _ in range(count)])
        stream.synchronize()

    def upload_each():
        for _ in range(count):
            buffer.copy_from(host)
        stream.synchronize()

    return {
        "tiny dispatch, batched": dispatch_batched,
        "tiny dispatch, one submission each": dispatch_each,
        "4 KiB upload, batched": upload_batched,
        "4 KiB upload, one submission each": upload_each,
    }


def traced(function, capture: str):
    def run():
        with lnb.trace(capture=capture):
            function()

    return run


class CollectorClock:
    """Seconds the garbage collector ran since :meth:`reset` (through ``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start

    def reset(self) -> None:
        self.seconds = 0.0


def interleaved(
    functions: Sequence[Callable[[], object]], repeats: int
) -> tuple[list[list[float]], list[list[float]], list[list[float]]]:
    """Wall, CPU and garbage collection seconds of ``repeats`` runs of each of
    ``functions`` (after one warm-up run each), the functions taking turns, garbage
    collected before each run."""
    for function in functions:
        function()
    seconds: list[list[float]] = [[] for _ in functions]
    cpu_seconds: list[list[float]] = [[] for _ in functions]
    collector_seconds: list[list[float]] = [[] for _ in functions]
    collector = CollectorClock()
    gc.callbacks.append(collector)
    try:
        for _ in range(repeats):
            for index, function in enumerate(functions):
                gc.collect()
                collector.reset()
                start, cpu_start = time.perf_counter(), time.process_time()
                function()
                seconds[index].append(time.perf_counter() - start)
                cpu_seconds[index].append(time.process_time() - cpu_start)
                collector_seconds[index].append(collector.seconds)
    finally:
        gc.callbacks.remove(collector)
    return seconds, cpu_seconds, collector_seconds


def median_ratio(seconds: Sequence[float], reference: Sequence[float]) -> float:
    """The median of the ratios of runs taken in the same round."""
    return statistics.median(s / r for s, r in zip(seconds, reference, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=21)
    arguments = parser.parse_args()
    count, repeats = arguments.count, arguments.repeats
    source = np.ones(UPLOAD_BYTES // 4, np.float32)
    target = np.empty_like(source)
    memcpy = statistics.median(
        timings(lambda: [np.copyto(target, source) for _ in range(count)], repeats)
    )
    rows = []
    for staging in ("execute", "submit"):
        for name, function in loops(count, staging).items():
            forms = (function, traced(function, "head"), traced(function, "none"))
            seconds, cpu_seconds, collector_seconds = interleaved(forms, repeats)
            (plain, head, none), (plain_cpu, head_cpu, _) = seconds, cpu_seconds
            median = statistics.median(plain)
            rows.append(
                [
                    f"{name} [{staging}]",
                    median / count * 1e6,
                    min(plain) / count * 1e6,
                    median_ratio(head, plain),
                    median_ratio(none, plain),
                    median / memcpy,
                    median_ratio(head_cpu, plain_cpu),
                    statistics.median(collector_seconds[0]) / count * 1e6,
                    statistics.median(collector_seconds[1]) / count * 1e6,
                ]
            )
    reference = ["numpy 4 KiB np.copyto (reference)", memcpy / count * 1e6, "", "", "", 1.0]
    rows.append([*reference, "", "", ""])
    print_table(
        f"cost per command over {count:,} commands, median of {repeats}, recorder hooks in "
        f"{'C' if row_appender.NATIVE else 'Python'} ({load_average()})",
        [
            "loop",
            "µs untraced",
            "fastest µs",
            "traced/untraced",
            "capture=none",
            "vs memcpy",
            "CPU traced/untraced",
            "GC µs untraced",
            "GC µs traced",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
