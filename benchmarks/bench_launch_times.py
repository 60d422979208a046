"""What timing a run of prepared launches for a trace costs: the CPU backend's
``run_dispatches`` over one run of tiny launches, without ``times`` (untraced) and with
them (traced: the start of each launch on the trace clock, see
``luisa_nb/kernels/c/launch_runs.py``).

    python benchmarks/bench_launch_times.py [--count 10000] [--repeats 41]

The two forms take turns; the table gives the fastest run of each, in ns per launch,
and the difference: what the trace's times add to a launch.
"""

from __future__ import annotations

import argparse
import array
import time

import numpy as np
from timing import load_average, print_table

import luisa_nb as lnb


@lnb.kernel
def tiny(target):
    target.write(lnb.dispatch_id().x, 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=41)
    arguments = parser.parse_args()
    count = arguments.count
    device = lnb.create_device("cpu")
    buffer = device.create_buffer(4, np.float32)
    prepared = tiny.dispatch_async(1, buffer).prepare(device.backend)
    launches = [prepared] * count
    backend = device.backend
    fastest = {"untimed": float("inf"), "timed": float("inf")}
    for _ in range(arguments.repeats):
        for form in fastest:
            times = array.array("q") if form == "timed" else None
            start = time.perf_counter_ns()
            done, error = backend.run_dispatches(launches, times)
            elapsed = time.perf_counter_ns() - start
            if error is not None or done != count:
                raise SystemExit(f"the run stopped after {done} of {count} launches: {error}")
            fastest[form] = min(fastest[form], elapsed / count)
    untimed, timed = fastest["untimed"], fastest["timed"]
    print_table(
        f"ns per launch over {count:,} tiny launches, fastest of {arguments.repeats} "
        f"({load_average()})",
        ["form", "ns per launch", "vs untimed"],
        [
            ["untimed (reference)", untimed, 1.0],
            ["timed (traced)", timed, timed / untimed],
            ["what the times add", timed - untimed, ""],
        ],
    )


if __name__ == "__main__":
    main()
