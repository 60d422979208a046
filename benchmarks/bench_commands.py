"""Cost per command of the runtime, untraced and traced, against a numpy memcpy.

    python benchmarks/bench_commands.py [--count 10000]

Tiny dispatches (one thread) and 4 KiB uploads, each timed two ways: as one submission
of COUNT commands, and as COUNT submissions of one command. Command creation, submission
and execution are all inside the timed region; so is stopping the trace.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import best_of, print_table

import luisa_nb as lnb

UPLOAD_BYTES = 4096


def measure(count: int, staging: str) -> list[list[object]]:
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
            stream.submit([tiny.dispatch_async(1, buffer)])
        stream.synchronize()

    def upload_batched():
        stream.submit([buffer.copy_from_async(host) for _ in range(count)])
        stream.synchronize()

    def upload_each():
        for _ in range(count):
            stream.submit([buffer.copy_from_async(host)])
        stream.synchronize()

    def traced(function):
        def run():
            with lnb.trace():
                function()

        return run

    memcpy_target = np.empty_like(host)
    memcpy = best_of(lambda: [np.copyto(memcpy_target, host) for _ in range(count)]) / count
    rows = []
    for name, function in [
        ("tiny dispatch, one submission", dispatch_batched),
        ("tiny dispatch, a submission each", dispatch_each),
        ("4 KiB upload, one submission", upload_batched),
        ("4 KiB upload, a submission each", upload_each),
    ]:
        plain = best_of(function) / count
        with_trace = best_of(traced(function)) / count
        rows.append(
            [
                f"{name} [{staging}]",
                plain * 1e6,
                with_trace * 1e6,
                with_trace / plain,
                plain / memcpy,
            ]
        )
    rows.append(["numpy 4 KiB np.copyto (reference)", memcpy * 1e6, "", "", 1.0])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    count = parser.parse_args().count
    rows = measure(count, "execute") + measure(count, "submit")
    print_table(
        f"cost per command over {count:,} commands (best of 5)",
        ["case", "µs untraced", "µs traced", "traced/untraced", "vs memcpy"],
        rows,
    )


if __name__ == "__main__":
    main()
