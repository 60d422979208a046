"""Saving and loading a trace whose captured bytes are floats, as a notebook loop's are.

    python benchmarks/bench_trace_save.py [--steps 30000] [--repeats 3]

The loop of ``bench_notebook_loop.py`` with data a simulation might make (a sine with
noise, new each step: 1,024 float32, uploaded, doubled by a kernel and downloaded), traced.
Then ``save`` and ``load_trace`` are timed, the best of ``--repeats``, beside writing
and reading the same number of bytes as one plain file (the disk's own speed, the
reference), and the file's size beside the captured bytes'.
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

SIZE = 1024


def traced_loop(steps: int) -> lnb.ViewableTrace:
    @lnb.kernel
    def scale(values):
        index = lnb.dispatch_id().x
        values.write(index, values.read(index) * 2.0)

    buffer = lnb.create_device("cpu").create_buffer(SIZE, np.float32)
    out = np.empty(SIZE, np.float32)
    generator = np.random.default_rng(1)
    phase = np.arange(SIZE, dtype=np.float32) * 0.01
    with lnb.trace() as trace:
        for i in range(steps):
            host = (np.sin(phase + i) + generator.normal(0, 0.01, SIZE)).astype(np.float32)
            buffer.copy_from(host)
            scale(buffer, dispatch_size=SIZE)
            buffer.copy_to(out)
    return trace


def best(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    trace = traced_loop(arguments.steps)
    captured = sum(blob.nbytes for blob in trace.blobs.values())
    with tempfile.TemporaryDirectory() as folder:
        path, plain = Path(folder) / "loop.lnbtrace", Path(folder) / "plain.bin"
        payload = os.urandom(captured)
        save = best(lambda: trace.save(path), arguments.repeats)
        load = best(lambda: lnb.load_trace(path), arguments.repeats)
        write = best(lambda: plain.write_bytes(payload), arguments.repeats)
        read = best(plain.read_bytes, arguments.repeats)
        size = path.stat().st_size
    mib = 1 << 20
    print_table(
        f"a {trace.counts[0]:,}-command trace, {captured / mib:.0f} MiB of captured floats, "
        f"best of {arguments.repeats} ({load_average()})",
        ["step", "seconds", "MiB/s of captured bytes", "vs a plain file of those bytes"],
        [
            ["save", save, captured / mib / save, save / write],
            ["load_trace", load, captured / mib / load, load / read],
            ["plain write", write, captured / mib / write, 1.0],
            ["plain read", read, captured / mib / read, 1.0],
        ],
    )
    print(f"file: {size / mib:.1f} MiB, {size / captured:.2f} of the captured bytes")


if __name__ == "__main__":
    main()
