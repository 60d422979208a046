"""What lnb.instrument_luisa() costs real luisa-python per command, in one run.

    LUISA_CLANG_PATH=$(which clang++) python benchmarks/bench_luisa_instrument.py [--backend cuda]

Two loops as luisa-python users write them, each ending with ``luisa.synchronize()``:
``buf.copy_from(host)`` of 4 KiB, and ``tiny(buf, dispatch_size=1)``. Each runs
uninstrumented (the reference), instrumented with no trace active, and instrumented
under ``lnb.trace()`` with the shadow readback on and off. The setups take turns, one
run each per round, so that a change in the machine's load falls on all of them; beside
the wall time per command is the CPU time of the calling thread (the instrumentation's
own work, and LuisaCompute's at submission; not the backend's worker threads), which
other processes move less. Needs luisa-python with Debian's clang and libvulkan1; prints
why and exits when they are missing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from timing import load_average, print_table

import luisa_nb as lnb

UPLOAD_FLOATS = 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backend", default="cpu", help="luisa-python's backend: cpu, cuda")
    arguments = parser.parse_args()
    try:
        import luisa

        if arguments.backend != "cpu":  # luisa-python aborts where CUDA cannot load
            from luisa_nb.runtime.luisa_backends import check_backend_starts

            check_backend_starts(arguments.backend)
        luisa.init(arguments.backend, support_gui=False)
    except Exception as error:  # the wheel or its Debian libraries are missing
        print(f"real luisa-python cannot run here: {error}")
        sys.exit(0)
    count = arguments.count
    buffer = luisa.Buffer(UPLOAD_FLOATS, float)
    host = np.ones(UPLOAD_FLOATS, np.float32)

    @luisa.func
    def tiny(target):
        target.write(dispatch_id().x, 1.0)  # noqa: F821 - luisa-python resolves it by name

    def uploads() -> None:
        for _ in range(count):
            buffer.copy_from(host)
        luisa.synchronize()

    def dispatches() -> None:
        for _ in range(count):
            tiny(buffer, dispatch_size=1)
        luisa.synchronize()

    def traced(loop):
        def run() -> None:
            with lnb.trace():
                loop()

        return run

    setups = [
        ("uninstrumented", None, False),
        ("instrumented, no trace", True, False),
        ("traced, shadow on", True, True),
        ("traced, shadow off", False, True),
    ]
    rows = []
    for loop_name, loop in (("4 KiB copy_from", uploads), ("tiny dispatch", dispatches)):
        walls: dict[str, list[float]] = {setup: [] for setup, _, _ in setups}
        cpus: dict[str, list[float]] = {setup: [] for setup, _, _ in setups}
        for _ in range(arguments.repeats + 1):  # the first round warms up
            for setup, shadow, trace in setups:
                if shadow is None:
                    lnb.uninstrument_luisa()
                else:
                    lnb.instrument_luisa(shadow=shadow)
                run = traced(loop) if trace else loop
                wall, cpu = time.perf_counter(), time.thread_time()
                run()
                walls[setup].append(time.perf_counter() - wall)
                cpus[setup].append(time.thread_time() - cpu)
        lnb.uninstrument_luisa()
        reference_wall = statistics.median(walls["uninstrumented"][1:])
        reference_cpu = statistics.median(cpus["uninstrumented"][1:])
        for setup, _, _ in setups:
            wall = statistics.median(walls[setup][1:])
            cpu = statistics.median(cpus[setup][1:])
            rows.append(
                [
                    loop_name,
                    setup,
                    wall / count * 1e6,
                    wall / reference_wall,
                    cpu / count * 1e6,
                    cpu / reference_cpu,
                ]
            )
    print_table(
        f"real luisa-python {arguments.backend}, µs per command over {count:,} commands, median of "
        f"{arguments.repeats} ({load_average()})",
        ["loop", "setup", "µs per command", "vs uninstrumented", "CPU µs", "CPU vs"],
        rows,
    )


if __name__ == "__main__":
    main()
