"""One remote server, several clients at once: commands per second on loopback.

    python benchmarks/bench_remote_clients.py [--count 20000] [--clients 1 2 4]

A server (``luisa-nb serve``'s ``Server`` on the cpu backend, port 0 on 127.0.0.1) runs
in this process. For each number of clients, that many client processes connect with
the server's token (each gets a session and a worker of its own), warm up, wait for a
common start, then submit COUNT tiny dispatches in lists of 100 and synchronize; then
they time synchronous round trips (one tiny dispatch, synchronize). Commands per second
are all clients' commands over the slowest client's time. The reference is one process
running the same loop on the local ``cpu`` backend, measured in the same run. The load
average is printed with the table.
"""

from __future__ import annotations

import argparse
import json
import secrets
import subprocess
import sys
import threading
import time

import numpy as np
from timing import load_average, print_table

import luisa_nb as lnb

LIST = 100
ROUND_TRIPS = 500


@lnb.kernel
def tiny(target):
    target.write(lnb.dispatch_id().x, 1.0)


def run_loop(device: lnb.Device, count: int, start_at: float | None = None) -> dict[str, float]:
    """Seconds for ``count`` dispatches in lists, and per round trip, on ``device``."""
    stream = device.default_stream
    target = device.create_buffer(1, np.float32)
    for _ in range(3):
        stream.submit([tiny.dispatch_async(1, target) for _ in range(LIST)])
        stream.synchronize()
    if start_at is not None:
        time.sleep(max(0.0, start_at - time.time()))
    start = time.perf_counter()
    for _ in range(count // LIST):
        stream.submit([tiny.dispatch_async(1, target) for _ in range(LIST)])
    stream.synchronize()
    batched = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(ROUND_TRIPS):
        stream.submit([tiny.dispatch_async(1, target)])
        stream.synchronize()
    return {"batched": batched, "round_trip": (time.perf_counter() - start) / ROUND_TRIPS}


def client(address: str, token: str, count: int, start_at: float) -> None:
    device = lnb.create_device(address, token=token)
    print(json.dumps(run_loop(device, count, start_at)))


def clients(address: str, token: str, count: int, how_many: int) -> list[dict[str, float]]:
    start_at = time.time() + 3.0 + how_many  # after every client has connected and warmed up
    processes = [
        subprocess.Popen(
            [sys.executable, __file__, "--client", address, token, str(count), str(start_at)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(how_many)
    ]
    results = []
    for process in processes:
        output, _ = process.communicate(timeout=600)
        if process.returncode != 0:
            raise RuntimeError(f"a client failed (exit {process.returncode})")
        results.append(json.loads(output.strip().splitlines()[-1]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--client", nargs=4, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.client:
        address, token, count, start_at = arguments.client
        client(address, token, int(count), float(start_at))
        return
    from luisa_nb.remote.server import Server

    token = secrets.token_hex(16)
    server = Server("cpu", port=0, token=token)
    stop = threading.Event()
    serving = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    serving.start()
    try:
        local = run_loop(lnb.create_device("cpu"), arguments.count)
        reference = arguments.count / local["batched"]
        rows = [["local cpu, 1 process", 1, f"{reference:,.0f}", "1.00", local["round_trip"] * 1e6]]
        for how_many in arguments.clients:
            found = clients(server.address, token, arguments.count, how_many)
            slowest = max(result["batched"] for result in found)
            rate = how_many * arguments.count / slowest
            round_trip = np.mean([result["round_trip"] for result in found]) * 1e6
            rows.append(
                [
                    f"remote, {how_many} client(s)",
                    how_many,
                    f"{rate:,.0f}",
                    f"{rate / reference:.2f}",
                    round_trip,
                ]
            )
    finally:
        stop.set()
        serving.join()
        server.close()
    print_table(
        f"tiny dispatches in lists of {LIST}, {arguments.count:,} per client ({load_average()})",
        ["device", "clients", "commands/s", "/ local cpu", "round trip µs"],
        rows,
    )


if __name__ == "__main__":
    main()
