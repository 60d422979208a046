"""Every available backend side by side: cost per command and upload throughput.

    python benchmarks/bench_backends.py [--count 10000] [--backend NAME ...]

Per-command cost of tiny dispatches and of 4 KiB uploads (one submission of COUNT
commands, then synchronize), and 256 MiB upload throughput, with a numpy copy of the same
bytes measured in the same run as the reference. Each backend runs under its default
staging policy.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import best_of, print_table

import luisa_nb as lnb
from luisa_nb.backends import available_backends

UPLOAD_BYTES = 4096
LARGE_BYTES = 256 * 1024 * 1024


@lnb.kernel
def tiny(target):
    target.write(lnb.dispatch_id().x, 1.0)


def measure(name: str, count: int, large: np.ndarray, numpy_seconds: float) -> list[object]:
    device = (
        lnb.create_device(name, staging_capacity=LARGE_BYTES)
        if name in ("dx", "metal")
        else lnb.create_device(name)
    )
    stream = device.default_stream
    small = device.create_buffer(UPLOAD_BYTES // 4, np.float32)
    host = np.ones(UPLOAD_BYTES // 4, np.float32)
    big = device.create_buffer(large.size, np.float32)

    def dispatches():
        stream.submit([tiny.dispatch_async(1, small) for _ in range(count)])
        stream.synchronize()

    def uploads():
        stream.submit([small.copy_from_async(host) for _ in range(count)])
        stream.synchronize()

    def large_upload():
        big.copy_from(large)
        stream.synchronize()

    dispatch_us = best_of(dispatches, 3) / count * 1e6
    upload_us = best_of(uploads, 3) / count * 1e6
    large_seconds = best_of(large_upload, 3)
    return [
        f"{name} [{device.staging}]",
        dispatch_us,
        upload_us,
        LARGE_BYTES / large_seconds / 1e9,
        numpy_seconds / large_seconds,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--backend", action="append", help="default: every available one")
    arguments = parser.parse_args()
    names = arguments.backend or available_backends()
    large = np.random.default_rng(0).random(LARGE_BYTES // 4, dtype=np.float32)
    target = np.empty_like(large)
    numpy_seconds = best_of(lambda: np.copyto(target, large), 3)
    rows = [measure(name, arguments.count, large, numpy_seconds) for name in names]
    rows.append(["numpy np.copyto (reference)", "", "", LARGE_BYTES / numpy_seconds / 1e9, 1.0])
    print_table(
        f"backends: µs per command over {arguments.count:,} commands in one submission; "
        "256 MiB upload",
        ["backend", "µs tiny dispatch", "µs 4 KiB upload", "GB/s 256 MiB", "vs numpy copy"],
        rows,
    )


if __name__ == "__main__":
    main()
