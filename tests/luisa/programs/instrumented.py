"""Scenarios on real luisa-python under lnb.instrument_luisa(); prints one JSON line per
run with what the trace found.
`python instrumented.py SCENARIO [--no-shadow] [--backend cuda]` (default: cpu)."""

import json
import runpy
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

import luisa
import luisa_nb as lnb
from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.analysis.uploads import check_uploads

scenario = sys.argv[1]
originals = (luisa.Buffer.copy_from, luisa.Buffer.copy_to, luisa.func.__call__, luisa.execute)
lnb.instrument_luisa(shadow="--no-shadow" not in sys.argv)
backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
luisa.init(backend, support_gui=False)
N = 1024


def report(trace, **extra):
    checks = {check.command_id: check for check in check_uploads(trace)}
    hazards = []
    for hazard in trace.hazards:
        check = checks.get(hazard.command_ids[-1])
        hazards.append(
            {
                "kind": hazard.kind.value,
                "message": hazard.message,
                "fix": hazard.fix,
                "staged": None if check is None else check.staged[:4].tolist(),
                "expected": None if check is None else check.expected[:4].tolist(),
            }
        )
    print(json.dumps({"hazards": hazards, **extra}))


def seed():
    with AnalyzedTrace() as trace:
        program = runpy.run_path(str(Path(__file__).with_name("seed.py")), run_name="__main__")
    report(
        trace,
        x=program["x"].numpy()[:4].tolist(),
        commands=len(trace.commands),
        times=times_as_saved(trace),
        devices=sorted({info.device for info in trace.streams.values()}),
    )


def times_as_saved(trace):
    """What a saved and loaded copy of the trace says of its command times: per stream,
    in the Arrow table, and as the timeline's blocks."""
    from luisa_nb.recording.frames import trace_arrow
    from luisa_nb.views.timeline import build_timeline

    with tempfile.TemporaryDirectory() as folder:
        loaded = AnalyzedTrace.load(trace.save(Path(folder) / "seed.lnbtrace"))
    table = trace_arrow(loaded).to_pydict()
    commands = [row for row, kind in enumerate(table["record"]) if kind == "command"]
    data = build_timeline(loaded)
    return {
        "reported": [info.times_reported for info in loaded.streams.values()],
        "arrow": sorted({table["times_reported"][row] for row in commands}),
        "arrow_started": sorted({str(table["started"][row]) for row in commands}),
        "lanes": [lane.get("times") for lane in data.lanes],
        "blocks": [block["commands"] for block in data.overlays["untimed"]],
    }


@luisa.func
def busy(target, rounds):
    tid = dispatch_id().x
    value = target.read(tid)
    for _ in range(rounds):
        value = value * 0.5 + 0.25
    target.write(tid, value)


def copies(how):
    a, b, scratch = luisa.Buffer(N, float), luisa.Buffer(N, float), luisa.Buffer(N, float)
    h1 = np.random.default_rng().random(N, dtype=np.float32)
    h2 = np.zeros(N, np.float32)
    with AnalyzedTrace() as trace:
        a.copy_from(h1)
        if how == "slow lists":  # the download waits behind a long kernel
            busy(scratch, 200_000, dispatch_size=N)
        if how.endswith("lists"):
            luisa.execute()
        a.copy_to(h2, sync=how == "sync")
        if how.endswith("lists"):
            luisa.execute()
        b.copy_from(h2)
        luisa.synchronize()
    report(trace, stale=bool(not np.array_equal(b.numpy(), h1)))


def images():
    a = luisa.Image2D.empty(16, 8, 4, float, "byte")
    b = luisa.Image2D.empty(16, 8, 4, float, "byte")
    h1 = np.random.default_rng(5).integers(1, 255, (8, 16, 4), np.uint8)
    h2 = np.zeros_like(h1)
    with AnalyzedTrace() as trace:
        a.copy_from(h1)
        a.copy_to(h2, sync=False)
        b.copy_from(h2)
        luisa.synchronize()
    shapes = sorted(info.image for info in trace.buffers.values())
    report(trace, stale=bool(not np.array_equal(b.numpy(), h1)), shapes=shapes)


def released():
    """A download into a temporary that the program drops before synchronize(): on
    luisa-python, which keeps no reference to a download's array, it writes freed memory
    (the trace keeps the array alive, so this run writes live memory)."""
    a = luisa.Buffer(N, float)
    a.copy_from(np.arange(N, dtype=np.float32))
    kept = np.empty(N, np.float32)

    def read_later():
        out = np.empty(N, np.float32)
        a.copy_to(out, sync=False)

    with AnalyzedTrace() as trace:
        read_later()
        a.copy_to(kept, sync=False)
        luisa.synchronize()
    report(trace, kept=kept[:4].tolist())


@luisa.func
def fill_nines(target):
    target.write(dispatch_id().x, 9.0)


def runs():
    """Runs of uploads of one array into one buffer: one readback each, and what every
    upload sent, read back or shared."""
    from luisa_nb.runtime import real_luisa

    state = real_luisa._active
    readbacks = []
    add_shadow = state.add_shadow
    state.add_shadow = lambda resource, stream, uploads: (
        readbacks.append(len(uploads)),
        add_shadow(resource, stream, uploads),
    )
    a, b = luisa.Buffer(N, float), luisa.Buffer(N, float)
    h = np.arange(N, dtype=np.float32)
    g = np.full(N, 2.0, np.float32)
    with AnalyzedTrace() as trace:
        for _ in range(3):
            a.copy_from(h)
            b.copy_from(g)  # another buffer's upload leaves a's run waiting
        h[:] = 5.0  # before the submission, which reads the host bytes
        a.copy_from(g)  # another array into a: the run's readback goes first
        fill_nines(a, dispatch_size=N)  # a kernel: the waiting readbacks go first
        a.copy_from(g)
        luisa.synchronize()
    state.add_shadow = add_shadow
    uploads = [c for c in trace.commands if c.kind.value == "upload"]
    sent = [trace.captured_bytes(c.data_capture).view(np.float32)[:2].tolist() for c in uploads]
    report(trace, readbacks=readbacks, sent=sent, device=a.numpy()[:2].tolist())


def rewrites():
    """Uploads of one array into one buffer, the array written in place between them
    and another array's upload in between: each upload's enqueue capture holds the bytes
    the array held when that upload was made."""
    a = luisa.Buffer(N, float)
    h = np.zeros(N, np.float32)
    g = np.full(N, 7.0, np.float32)
    with AnalyzedTrace() as trace:
        a.copy_from(h)
        h[:] = 1.0
        a.copy_from(h)
        a.copy_from(g)
        h[:] = 2.0
        a.copy_from(h)
        luisa.synchronize()
    uploads = [c for c in trace.commands if c.kind.value == "upload"]
    enqueued = [
        trace.captured_bytes(c.enqueue_capture).view(np.float32)[:2].tolist() for c in uploads
    ]
    print(json.dumps({"enqueued": enqueued, "device": a.numpy()[:2].tolist()}))


def pending():
    """A trace that ends before execute(): the upload waits in luisa's command list."""
    a = luisa.Buffer(N, float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with AnalyzedTrace() as trace:
            a.copy_from(np.zeros(N, np.float32))
    with AnalyzedTrace() as later:
        luisa.synchronize()
    print(
        json.dumps(
            {
                "api": trace.metadata.api,
                "pending": [command.description for command in trace.metadata.pending],
                "commands": len(trace.commands),
                "later": len(later.commands),
                "warnings": [str(warning.message) for warning in caught],
            }
        )
    )


if scenario == "seed":
    seed()
elif scenario == "pending":
    pending()
elif scenario == "images":
    images()
elif scenario == "released":
    released()
elif scenario == "runs":
    runs()
elif scenario == "rewrites":
    rewrites()
elif scenario.endswith("lists"):
    for _ in range(5):
        copies(scenario)
else:
    copies(scenario)
lnb.uninstrument_luisa()
restored = (luisa.Buffer.copy_from, luisa.Buffer.copy_to, luisa.func.__call__, luisa.execute)
print(json.dumps({"restored": all(map(lambda a, b: a is b, originals, restored))}))
