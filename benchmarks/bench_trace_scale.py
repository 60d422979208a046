"""A long traced program: how recording, analysis, saving and loading scale.

    python benchmarks/bench_trace_scale.py [--commands 1000000]

The program is a simulation loop as a user writes it: each iteration uploads its
parameters, runs a kernel, downloads the result and synchronizes (three commands and a
sync point); every 1000th iteration skips the synchronize, and the next one uploads the
array just downloaded, so the trace holds a few real hazards.

The loop runs in one process, after a short warm-up (the kernel's compile, the runtime's
first allocations), under ``lnb.trace()`` and untraced: the untraced iterations in two
halves, one before and one after the traced run, so that a change in the machine's load
falls on both alike. Their ratio is given in wall time and in CPU time (both threads;
other processes' load moves it less, though not to nothing). Timed
too: building the columns, finding hazards, ``save`` and ``load_trace`` (then finding
hazards in the loaded trace). Memory: the process's resident size grown from before the
traced loop to after the columns and hazards were made, per command (the trace, its logs
and its columns; the runtime's own memory was made by then), and the peak of resident
memory while saving, read from /proc (Linux).
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from timing import load_average, print_table

import luisa_nb as lnb

ELEMENTS = 256
WARM_UP_ITERATIONS = 100


def resident_bytes(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> None:
    """Make the peak resident size (VmHWM) start again from the current one."""
    Path("/proc/self/clear_refs").write_text("5")


@lnb.kernel
def step(values):
    i = lnb.dispatch_id().x
    values.write(i, values.read(i) * 0.5 + 1.0)


def simulate(device: lnb.Device, iterations: int) -> None:
    stream = device.default_stream
    state = device.create_buffer(ELEMENTS, np.float32)
    parameters = np.zeros(ELEMENTS, np.float32)
    result = np.zeros(ELEMENTS, np.float32)
    unsynchronized = False
    for iteration in range(iterations):
        stream.submit(
            [
                state.copy_from_async(result if unsynchronized else parameters),
                step.dispatch_async(ELEMENTS, state),
                state.copy_to_async(result),
            ]
        )
        unsynchronized = iteration % 1000 == 999
        if not unsynchronized:
            stream.synchronize()
    stream.synchronize()


def timed_run(device: lnb.Device, iterations: int, traced: bool) -> tuple[object, float, float]:
    """The trace (``None`` untraced), wall seconds and CPU seconds of one run."""
    gc.collect()
    cpu_start, start = time.process_time(), time.perf_counter()
    with lnb.trace() if traced else nullcontext() as trace:
        simulate(device, iterations)
    return trace, time.perf_counter() - start, time.process_time() - cpu_start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commands", type=int, default=1_000_000)
    iterations = parser.parse_args().commands // 3
    device = lnb.create_device("cpu", staging="submit")
    simulate(device, WARM_UP_ITERATIONS)
    load_before = load_average()
    _, untraced_seconds, untraced_cpu = timed_run(device, iterations // 2, traced=False)
    before = resident_bytes()
    trace, record_seconds, record_cpu = timed_run(device, iterations, traced=True)
    recorded = resident_bytes() - before
    _, seconds, cpu = timed_run(device, iterations - iterations // 2, traced=False)
    untraced_seconds, untraced_cpu = untraced_seconds + seconds, untraced_cpu + cpu
    load_after = load_average()
    started = time.perf_counter()
    table = trace.table
    table_seconds = time.perf_counter() - started
    started = time.perf_counter()
    hazards = trace.hazards
    hazard_seconds = time.perf_counter() - started
    in_memory = resident_bytes() - before
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scale.lnbtrace"
        reset_peak()
        resident = resident_bytes()
        started = time.perf_counter()
        trace.save(path)
        save_seconds = time.perf_counter() - started
        save_extra = resident_bytes("VmHWM") - resident
        size = os.path.getsize(path)
        started = time.perf_counter()
        loaded = lnb.load_trace(path)
        load_seconds = time.perf_counter() - started
        started = time.perf_counter()
        loaded_hazards = loaded.hazards
        loaded_hazard_seconds = time.perf_counter() - started
    assert len(loaded_hazards) == len(hazards) and len(loaded.table) == len(table)
    count = len(table)
    rows = [
        ["run the program untraced", untraced_seconds, f"CPU {untraced_cpu:.3g} s"],
        ["record (run the program traced)", record_seconds, f"CPU {record_cpu:.3g} s"],
        ["build the columns", table_seconds, f"{count:,} commands"],
        ["hazards", hazard_seconds, f"{len(hazards)} found"],
        ["save", save_seconds, f"{size / 2**20:.1f} MiB file"],
        ["load", load_seconds, ""],
        ["hazards of the loaded trace", loaded_hazard_seconds, ""],
    ]
    print_table(
        f"{count:,}-command trace ({load_before}; after recording: {load_after})",
        ["step", "seconds", "note"],
        rows,
    )
    print(
        f"\ntraced/untraced: {record_seconds / untraced_seconds:.2f}x wall time, "
        f"{record_cpu / untraced_cpu:.2f}x CPU time\n"
        f"resident memory grown by recording: {in_memory / 2**20:.0f} MiB, "
        f"{in_memory / count:.0f} bytes per command ({recorded / count:.0f} before the "
        f"columns were built)\n"
        f"extra peak while saving: {save_extra / 2**20:.0f} MiB "
        f"({save_extra / max(in_memory, 1):.2f}x)"
    )


if __name__ == "__main__":
    main()
