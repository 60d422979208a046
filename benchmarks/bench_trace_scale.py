"""A long traced program: how recording, analysis, saving and loading scale.

    python benchmarks/bench_trace_scale.py [--commands 1000000]

The program is a simulation loop as a user writes it: each iteration uploads its
parameters, runs a kernel, downloads the result and synchronizes (three commands and a
sync point); every 1000th iteration skips the synchronize, and the next one uploads the
array just downloaded, so the trace holds a few real hazards. Timed: recording (running the program
under ``lnb.trace()``), building the columns, finding hazards, ``save`` and
``load_trace`` (then finding hazards in the loaded trace). Memory: the process's
resident size grown by recording (the trace, logs and columns), and the peak of resident
memory while saving, read from /proc (Linux).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from timing import load_average, print_table

import luisa_nb as lnb

ELEMENTS = 256


def resident_bytes(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> None:
    """Make the peak resident size (VmHWM) start again from the current one."""
    Path("/proc/self/clear_refs").write_text("5")


def run(commands: int) -> tuple[lnb.ViewableTrace, float]:
    device = lnb.create_device("cpu", staging="submit")
    stream = device.default_stream
    state = device.create_buffer(ELEMENTS, np.float32)
    parameters = np.zeros(ELEMENTS, np.float32)
    result = np.zeros(ELEMENTS, np.float32)

    @lnb.kernel
    def step(values):
        i = lnb.dispatch_id().x
        values.write(i, values.read(i) * 0.5 + 1.0)

    start = time.perf_counter()
    with lnb.trace() as trace:
        unsynchronized = False
        for iteration in range(commands // 3):
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
    return trace, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commands", type=int, default=1_000_000)
    count = parser.parse_args().commands
    before = resident_bytes()
    trace, record_seconds = run(count)
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
    rows = [
        ["record (run the program traced)", record_seconds, f"{len(table):,} commands"],
        ["build the columns", table_seconds, ""],
        ["hazards", hazard_seconds, f"{len(hazards)} found"],
        ["save", save_seconds, f"{size / 2**20:.1f} MiB file"],
        ["load", load_seconds, ""],
        ["hazards of the loaded trace", loaded_hazard_seconds, ""],
    ]
    print_table(
        f"{len(table):,}-command trace ({load_average()})",
        ["step", "seconds", "note"],
        rows,
    )
    print(
        f"\nresident memory grown by recording: {in_memory / 2**20:.0f} MiB; "
        f"extra peak while saving: {save_extra / 2**20:.0f} MiB "
        f"({save_extra / max(in_memory, 1):.2f}x)"
    )


if __name__ == "__main__":
    main()
