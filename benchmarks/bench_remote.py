"""The remote backend against the local cpu backend, in the same run.

    python benchmarks/bench_remote.py [--count 10000] [--round-trips 2000]
                                      [--upload-mib 256] [--rss-commands 1000000]

Per-command cost of synchronous round trips (submit one tiny dispatch, synchronize),
commands per second in one submission (COUNT tiny dispatches; COUNT 4 KiB uploads),
upload throughput of one large upload (numpy copy of the same bytes as reference), and
the resident memory (VmRSS) of the server and of the worker process serving this device's
session, before and after RSS_COMMANDS batched commands (``--rss-commands 0`` skips that
part; 1,000,000 takes about half a minute here).
The remote device is started by ``create_device("remote")`` (a server on loopback).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from timing import best_of, print_table

import luisa_nb as lnb

UPLOAD_BYTES = 4096
RSS_BATCH = 10_000


@lnb.kernel(mode="c")
def tiny(target):
    target.write(lnb.dispatch_id().x, 1.0)


def server_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def measure(device: lnb.Device, count: int, round_trips: int, upload_mib: int) -> dict:
    stream = device.default_stream
    buffer = device.create_buffer(UPLOAD_BYTES // 4, np.float32)
    host = np.ones(UPLOAD_BYTES // 4, np.float32)

    def round_trip():
        for _ in range(round_trips):
            stream.submit([tiny.dispatch_async(1, buffer)])
            stream.synchronize()

    def dispatch_batched():
        stream.submit([tiny.dispatch_async(1, buffer) for _ in range(count)])
        stream.synchronize()

    def upload_batched():
        stream.submit([buffer.copy_from_async(host) for _ in range(count)])
        stream.synchronize()

    large_host = np.ones(upload_mib << 18, np.float32)
    large = device.create_buffer(large_host.size, np.float32)

    def upload_large():
        large.copy_from(large_host)
        stream.synchronize()

    results = {
        "round trip (us/command)": best_of(round_trip, 3) / round_trips * 1e6,
        f"{count} tiny dispatches (commands/s)": count / best_of(dispatch_batched, 3),
        f"{count} 4 KiB uploads (commands/s)": count / best_of(upload_batched, 3),
        f"{upload_mib} MiB upload (GB/s)": large_host.nbytes / best_of(upload_large, 3) / 1e9,
    }
    check = np.empty_like(large_host[:1024])
    large.view(0, 1024).copy_to(check)
    assert np.all(check == 1.0)
    return results


def measure_rss(device: lnb.Device, commands: int) -> list[list[object]]:
    stream = device.default_stream
    buffer = device.create_buffer(16, np.float32)
    processes = {"server": device.info["server_pid"], "worker": device.info["server_worker_pid"]}
    stream.submit([tiny.dispatch_async(1, buffer) for _ in range(RSS_BATCH)])
    stream.synchronize()
    before = {name: server_rss_kib(pid) for name, pid in processes.items()}
    start = time.perf_counter()
    for _ in range(commands // RSS_BATCH):
        stream.submit([tiny.dispatch_async(1, buffer) for _ in range(RSS_BATCH)])
        stream.synchronize()
    seconds = time.perf_counter() - start
    rows: list[list[object]] = []
    for name, pid in processes.items():
        rows.append([f"{name} VmRSS before (MiB)", before[name] / 1024])
        rows.append([f"{name} VmRSS after {commands:,} commands (MiB)", server_rss_kib(pid) / 1024])
    rows.append(["those commands (commands/s)", commands / seconds])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--round-trips", type=int, default=2000)
    parser.add_argument("--upload-mib", type=int, default=256)
    parser.add_argument("--rss-commands", type=int, default=1_000_000)
    arguments = parser.parse_args()
    remote = lnb.create_device("remote")
    local = lnb.create_device("cpu", staging="submit")
    sizes = (arguments.count, arguments.round_trips, arguments.upload_mib)
    remote_results = measure(remote, *sizes)
    local_results = measure(local, *sizes)
    rows = [[name, value, local_results[name]] for name, value in remote_results.items()]
    source = np.ones(arguments.upload_mib << 18, np.float32)
    target = np.empty_like(source)
    numpy_copy = source.nbytes / best_of(lambda: np.copyto(target, source), 3) / 1e9
    rows.append([f"numpy copy of {arguments.upload_mib} MiB (GB/s)", "", numpy_copy])
    print_table(
        f"remote (server on loopback, staging={remote.staging!r}) vs local cpu (same loops)",
        ["measure", "remote", "cpu"],
        rows,
    )
    if arguments.rss_commands:
        print_table(
            "remote server memory",
            ["measure", "value"],
            measure_rss(remote, arguments.rss_commands),
        )


if __name__ == "__main__":
    main()
