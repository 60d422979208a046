"""The remote backend against the local cpu backend, in the same run.

    python benchmarks/bench_remote.py [--count 10000] [--round-trips 2000]
                                      [--bulk-mib 256] [--rss-commands 1000000]
                                      [--programs | --no-programs]

Each table runs the same loops on ``create_device("remote")`` (a server on loopback, the
connection direct: its worker socket and shared window), on a remote device relayed by
its supervisor (``direct=False``, as from another host), and on the local ``cpu``
backend, under one staging policy: the per-command cost of synchronous round trips
(submit one tiny dispatch, synchronize), a step of the notebook loop of
``bench_notebook_loop.py`` (a fresh 4 KiB array uploaded, a kernel, a synchronous
download; ROUND_TRIPS / 4 steps), commands per second in one submission (COUNT
tiny dispatches; COUNT 4 KiB uploads), and one large upload (``copy_from``, then
synchronize) and download (``copy_to(sync=True)``) of BULK_MIB, each also as a share of
a numpy copy of the same bytes timed just before it (the load of a shared machine
changes between loops) and as a share of the local cpu backend's rate under the same
staging policy: under ``staging="submit"`` every backend first copies an upload into
staging memory at ``submit()``, so that, not a numpy copy, is the fair reference for
uploads there. Then the luisa-python benchmark
programs (vectors and structs) on remote and on cpu, each in a process of its own, and
the resident memory (VmRSS) of the server and of the worker serving this device, before
and after RSS_COMMANDS batched commands (``--rss-commands 0`` skips it; 1,000,000 take
about half a minute here). The load average is printed with each table.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
from bench_luisa_programs import MANDELBROT, ON_LUISA_NB, SHADING, run
from bench_notebook_loop import fresh_array_loop
from timing import best_of, load_average, print_table

import luisa_nb as lnb

UPLOAD_BYTES = 4096
RSS_BATCH = 10_000
DEVICES: dict[str, Callable[[str], lnb.Device]] = {
    "remote": lambda staging: lnb.create_device("remote", staging=staging),
    "remote relayed": lambda staging: lnb.create_device("remote", staging=staging, direct=False),
    "cpu": lambda staging: lnb.create_device("cpu", staging=staging),
}
PROGRAMS = {  # program: its arguments after the backend name
    MANDELBROT: ["1024", "512", "50", "5"],
    SHADING: ["512", "256", "5"],
}


@lnb.kernel(mode="c")
def tiny(target):
    target.write(lnb.dispatch_id().x, 1.0)


@lnb.kernel(mode="c")
def scale(values):
    index = lnb.dispatch_id().x
    values.write(index, values.read(index) * 2.0)


ECHO_SERVER = """
import socket, sys, time
link = socket.socket(fileno=int(sys.argv[1]))
work = float(sys.argv[2]) * 1e-6
while message := link.recv(4096):
    end = time.perf_counter() + work
    while time.perf_counter() < end:
        pass
    link.sendall(message)
"""


def echo_round_trip(work_us: float, count: int) -> float:
    """Seconds of a round trip of 200 bytes over a Unix socket to another process that
    answers after ``work_us`` of busy work: the floor under the remote round trip here
    (a thread that sleeps longer wakes more slowly on some machines, VMs above all)."""
    mine, theirs = socket.socketpair()
    server = subprocess.Popen(
        [sys.executable, "-c", ECHO_SERVER, str(theirs.fileno()), str(work_us)],
        pass_fds=[theirs.fileno()],
    )
    theirs.close()
    message = b"x" * 200

    def echoes():
        for _ in range(count):
            mine.sendall(message)
            mine.recv(4096)

    try:
        return best_of(echoes, 3) / count
    finally:
        mine.close()
        server.wait()


def server_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def measure(device: lnb.Device, count: int, round_trips: int, bulk: np.ndarray) -> dict:
    """Seconds of each loop (the best of three), by name."""
    stream = device.default_stream
    buffer = device.create_buffer(UPLOAD_BYTES // 4, np.float32)
    host = np.ones(UPLOAD_BYTES // 4, np.float32)
    large = device.create_buffer(bulk.size, np.float32)
    back = np.empty_like(bulk)

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

    def upload_bulk():
        large.copy_from(bulk)
        stream.synchronize()

    def download_bulk():
        large.copy_to(back, sync=True)

    steps = max(round_trips // 4, 1)
    seconds = {
        "numpy copy": best_of(lambda: np.copyto(back, bulk), 3),
        "round trip": best_of(round_trip, 3) / round_trips,
        "notebook step": best_of(fresh_array_loop(buffer, scale, steps), 3) / steps,
        "dispatches": best_of(dispatch_batched, 3),
        "uploads": best_of(upload_batched, 3),
        "bulk upload": best_of(upload_bulk, 3),
        "bulk download": best_of(download_bulk, 3),
    }
    assert np.array_equal(back[:1024], bulk[:1024]) and np.array_equal(back[-1024:], bulk[-1024:])
    return seconds


def compare_devices(staging: str, count: int, round_trips: int, bulk_mib: int) -> None:
    bulk = np.random.default_rng(0).random(bulk_mib << 18, dtype=np.float32)
    results = {}
    for name, create in DEVICES.items():
        device = create(staging)
        results[name] = measure(device, count, round_trips, bulk)
        device.close()
    gigabytes = bulk.nbytes / 1e9
    rows = [
        ["round trip (us/command)", *(r["round trip"] * 1e6 for r in results.values())],
        ["notebook loop (us/step)", *(r["notebook step"] * 1e6 for r in results.values())],
        [
            f"{count} tiny dispatches (commands/s)",
            *(count / r["dispatches"] for r in results.values()),
        ],
        [f"{count} 4 KiB uploads (commands/s)", *(count / r["uploads"] for r in results.values())],
    ]
    local = results["cpu"]
    for what in ("bulk upload", "bulk download"):
        rates = [gigabytes / r[what] for r in results.values()]
        shares = [f"{r['numpy copy'] / r[what]:.0%}" for r in results.values()]
        against_local = [f"{local[what] / r[what]:.0%}" for r in results.values()]
        rows.append([f"{bulk_mib} MiB {what[5:]} (GB/s)", *rates])
        rows.append(["  share of a numpy copy", *shares])
        rows.append([f"  share of local cpu, staging={staging!r}", *against_local])
    rows.append(
        [
            f"numpy copy of {bulk_mib} MiB (GB/s)",
            *(gigabytes / r["numpy copy"] for r in results.values()),
        ]
    )
    print_table(
        f"staging={staging!r}: remote (server on loopback) vs local cpu, same loops "
        f"({load_average()})",
        ["measure", *DEVICES],
        rows,
    )
    echoes = [(work, echo_round_trip(work, round_trips) * 1e6) for work in (0, 50, 100)]
    print(
        "  a bare Unix-socket echo to another process, answered after 0 / 50 / 100 us of "
        "work: "
        + " / ".join(f"{seconds - work:.0f}" for work, seconds in echoes)
        + " us beyond that work"
    )
    if staging == "submit":
        print(
            "  under staging='submit' every backend first copies an upload into staging "
            "memory at submit()\n  (the model of LuisaCompute's serialization), so the "
            "fair reference for uploads is\n  'share of local cpu', not the numpy copy"
        )


def compare_programs() -> None:
    """The luisa-python benchmark programs on remote and on cpu, in processes of their own
    (the kernel cache warm: the first run of each compiles)."""
    rows = []
    for program, arguments in PROGRAMS.items():
        results = {}
        for backend in ("cpu", "remote"):
            command = [sys.executable, "-c", ON_LUISA_NB, str(program), backend, *arguments]
            run(command)  # fills the kernel cache
            results[backend] = run(command)
        for backend, result in results.items():
            if isinstance(result, str):
                rows.append([program.name, backend, "", "", f"did not run: {result}"])
                continue
            best = float(result["best"])
            ratio = best / float(results["cpu"]["best"]) if isinstance(results["cpu"], dict) else ""
            rows.append(
                [
                    program.name,
                    backend,
                    float(result["first"]) * 1e3,
                    best * 1e3,
                    ratio,
                    result["checksum"],
                ]
            )
    print_table(
        f"luisa-python programs, dispatch + synchronize ({load_average()})",
        ["program", "device", "first call ms", "best ms", "time vs cpu", "checksum"],
        rows,
    )


def measure_rss(commands: int) -> None:
    device = lnb.create_device("remote")
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
    device.close()
    print_table(f"remote server memory ({load_average()})", ["measure", "value"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--round-trips", type=int, default=2000)
    parser.add_argument("--bulk-mib", type=int, default=256)
    parser.add_argument("--rss-commands", type=int, default=1_000_000)
    parser.add_argument("--programs", action=argparse.BooleanOptionalAction, default=True)
    arguments = parser.parse_args()
    print(f"{sys.version.split()[0]}, {subprocess.getoutput('nproc')} CPUs, {load_average()}")
    for staging in ("submit", "execute"):
        compare_devices(staging, arguments.count, arguments.round_trips, arguments.bulk_mib)
    if arguments.programs:
        compare_programs()
    if arguments.rss_commands:
        measure_rss(arguments.rss_commands)


if __name__ == "__main__":
    main()
