"""Exporting a long trace: Perfetto's protobuf format against Chrome JSON, and the trace
as an Arrow table and a Parquet file.

    python benchmarks/bench_trace_export.py [--commands 1000000]

The program is the simulation loop of ``bench_trace_scale.py`` (three commands and a
sync point an iteration, a few real hazards), traced once. Each export is timed on the
same trace (its columns and hazards already made, as in a notebook that showed the
trace first), and each file's size is printed beside the Chrome JSON's.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_trace_scale import simulate
from timing import load_average, print_table

import luisa_nb as lnb


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commands", type=int, default=1_000_000)
    arguments = parser.parse_args()
    device = lnb.create_device("cpu")
    simulate(device, 10)
    with lnb.trace() as trace:
        simulate(device, arguments.commands // 3)
    commands, syncs = trace.counts
    hazards = len(trace.hazards)
    with tempfile.TemporaryDirectory() as folder:
        perfetto, chrome, parquet = (
            Path(folder) / name for name in ("t.pftrace", "t.json", "t.parquet")
        )
        rows = []
        seconds = timed(lambda: trace.save_perfetto(perfetto))
        rows.append(["Perfetto protobuf", seconds, perfetto.stat().st_size])
        seconds = timed(lambda: trace.to_chrome_trace(chrome))
        rows.append(["Chrome JSON", seconds, chrome.stat().st_size])

        def write_parquet() -> None:
            import pyarrow.parquet

            pyarrow.parquet.write_table(trace.to_arrow(), parquet)

        seconds = timed(write_parquet)
        rows.append(["Parquet (to_arrow + write)", seconds, parquet.stat().st_size])
        seconds = timed(trace.to_pandas)
        rows.append(["to_pandas", seconds, ""])
        reference = chrome.stat().st_size
        table = [
            [
                name,
                seconds,
                f"{size / 2**20:.1f}" if size != "" else "",
                f"{size / reference:.3f}" if size != "" else "",
            ]
            for name, seconds, size in rows
        ]
    print_table(
        f"{commands:,} commands, {syncs:,} sync points, {hazards} hazards ({load_average()})",
        ["export", "seconds", "MiB", "size / Chrome JSON"],
        table,
    )


if __name__ == "__main__":
    main()
