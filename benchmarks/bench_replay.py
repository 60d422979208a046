"""Stepping through a long trace with replay: how long ``trace.replay(to=N)`` takes to give
a buffer's contents, on a trace of many commands, against replaying from the start with no
checkpoints (the reference), all in one run.

    python benchmarks/bench_replay.py [--commands 100000] [--steps 200]

The trace is a loop of uploads, fills, kernel dispatches and downloads on four small
buffers, recorded with ``capture="full"``. "first" is the first replay (it builds the
checkpoints on the way to the last command); "step" is a click on a random command, then
the arrow key (the next command), each timed from the call to the array in hand. "panel"
is the same through the notebook's contents panel (``ContentsPanel``): from setting its
selection to its summary ready to send (two replays, before and after, and a diff view
of each buffer the command touched), the kernel's share of a click in the browser.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np
from timing import load_average, print_table

import luisa_nb as lnb
from luisa_nb.analysis import ReplayEngine
from luisa_nb.widgets import ContentsPanel

SIZE = 256


def scaled(source, target):
    i = lnb.dispatch_id().x
    target.write(i, source.read(i) * 0.5 + 1.0)


def record(commands: int) -> lnb.AnalyzedTrace:
    device = lnb.create_device("cpu")
    kernel = lnb.kernel(scaled)
    hosts = [np.full(SIZE, value, np.float32) for value in range(8)]  # never written in flight
    out = np.zeros(SIZE, np.float32)
    with lnb.trace(capture="full") as trace:
        buffers = [device.create_buffer(SIZE, np.float32, name=f"b{i}") for i in range(4)]
        stream = device.default_stream
        batch = []
        for index in range(commands):
            first, second = buffers[index % 4], buffers[(index + 1) % 4]
            step = index % 5
            if step == 0:
                batch.append(first.copy_from_async(hosts[index % 8]))
            elif step == 1:
                batch.append(second.fill_async(float(index)))
            elif step in (2, 3):
                batch.append(kernel.dispatch_async(SIZE, first, second))
            else:
                batch.append(second.copy_to_async(out))
            if len(batch) == 1000:
                stream.submit(batch)
                batch = []
        stream.submit(batch)
        stream.synchronize()
    return trace


def seconds(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    started = time.perf_counter()
    trace = record(args.commands)
    recorded = time.perf_counter() - started
    ids = [record.id for record in trace.commands]
    engine = ReplayEngine(trace)
    first = seconds(lambda: engine.state(ids[-1]).buffer("b0").numpy())
    picker = random.Random(1)
    clicks, arrows = [], []
    for _ in range(args.steps):
        position = picker.randrange(len(ids) - 1)
        clicks.append(seconds(lambda p=position: engine.state(ids[p]).buffer("b1").numpy()))
        arrows.append(seconds(lambda p=position: engine.state(ids[p + 1]).buffer("b1").numpy()))
    panel = ContentsPanel(trace, ids[-1])  # its own replay: checkpoints made here
    panel_clicks, panel_arrows = [], []
    for _ in range(args.steps):
        position = picker.randrange(len(ids) - 1)
        panel_clicks.append(seconds(lambda p=position: setattr(panel, "selected_command", ids[p])))
        panel_arrows.append(
            seconds(lambda p=position: setattr(panel, "selected_command", ids[p + 1]))
        )
    assert panel.summary["record_id"] == ids[position + 1] and panel.summary["buffers"]
    unchecked = ReplayEngine(trace, every=len(ids) + 1)
    reference = seconds(lambda: unchecked.state(ids[-1]).buffer("b1").numpy())
    rows = [
        ("record the trace", recorded * 1e3, recorded / reference),
        ("to the last, no checkpoints (reference)", reference * 1e3, 1.0),
        ("to the last, first time (makes checkpoints)", first * 1e3, first / reference),
        ("click: median", statistics.median(clicks) * 1e3, statistics.median(clicks) / reference),
        ("click: slowest", max(clicks) * 1e3, max(clicks) / reference),
        ("arrow: median", statistics.median(arrows) * 1e3, statistics.median(arrows) / reference),
        ("arrow: slowest", max(arrows) * 1e3, max(arrows) / reference),
        (
            "panel click: median",
            statistics.median(panel_clicks) * 1e3,
            statistics.median(panel_clicks) / reference,
        ),
        (
            "panel arrow: median",
            statistics.median(panel_arrows) * 1e3,
            statistics.median(panel_arrows) / reference,
        ),
        ("panel arrow: slowest", max(panel_arrows) * 1e3, max(panel_arrows) / reference),
    ]
    title = f"replay of {len(ids):,} commands, checkpoint every {engine.every} ({load_average()})"
    print_table(title, ("what", "ms", "ratio to reference"), rows)


if __name__ == "__main__":
    main()
