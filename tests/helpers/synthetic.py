"""Traces made by hand, record by record: for the widget tests and benchmark, and to try
the viewer at scale with no device (``TraceViewer(synthetic_trace(100_000))``, with the
repository's ``tests/`` on ``sys.path``). A test helper, not part of the package."""

from __future__ import annotations

from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.recording import (
    Access,
    BufferInfo,
    CommandKind,
    CommandRecord,
    DeviceRange,
    HostRange,
    Status,
    StreamInfo,
    SyncKind,
    SyncRecord,
)

KINDS = (CommandKind.UPLOAD, CommandKind.DISPATCH, CommandKind.DOWNLOAD)
NS = 1000


def synthetic_trace(count: int, streams: int = 4, stale: int = 3) -> AnalyzedTrace:
    """``count`` commands on ``streams`` streams; each stream uploads ``in<s>``,
    dispatches, downloads into ``out<s>``; ``stale`` uploads read ``out<s>`` at submission
    before the download issued just before them wrote it (STALE_UPLOAD hazards)."""
    trace = AnalyzedTrace(capture="none")
    origin = 1_000_000 * NS
    trace.metadata.started = origin
    inputs, outputs = [], []
    for s in range(streams):
        trace.streams[s] = StreamInfo(s, "cpu", f"stream{s}")
        trace.buffers[s + 1] = BufferInfo(s + 1, 4096, "<f4", 1024, "cpu", f"b{s}")
        base = 0x1000_0000 * (s + 1)
        inputs.append(HostRange(base, 4096, "<f4", (1024,), f"in{s}"))
        outputs.append(HostRange(base + 0x10_0000, 4096, "<f4", (1024,), f"out{s}"))
    rounds = max(count // streams, 1)
    stale_rounds = {3 * int(rounds / 3 * (k + 1) / (stale + 1)) + 3 for k in range(stale)}
    free = [origin] * streams
    host = origin
    for i in range(count):
        s, round_index = i % streams, i // streams
        kind = KINDS[round_index % 3]
        host += 1 * NS
        started = max(free[s], host + NS // 2)
        finished = started + 2 * NS + (i * 7919) % (9 * NS)
        free[s] = finished + NS // 5
        stale_one = kind is CommandKind.UPLOAD and s == 0 and round_index in stale_rounds
        access = Access.READ if kind is CommandKind.DOWNLOAD else Access.WRITE
        record = CommandRecord(
            id=i + 1,
            seq=i + 1,
            kind=kind,
            stream=s,
            submission=i + 1,
            index=0,
            label="step" if kind is CommandKind.DISPATCH else "",
            device_ranges=(DeviceRange(s + 1, 0, 4096, access),),
            host=None,
            staging="submit" if stale_one else "execute",
            enqueued=host,
            submitted=host + NS // 10,
            started=started,
            finished=finished,
            status=Status.OK,
        )
        if kind is CommandKind.UPLOAD:
            record.host = outputs[s] if stale_one else inputs[s]
            record.host_read = record.submitted - 3 * NS if stale_one else started
        elif kind is CommandKind.DOWNLOAD:
            record.host = outputs[s]
            record.host_write = finished
        trace.add(record)
    end = max(free)
    trace.add(SyncRecord(count + 1, count + 1, SyncKind.SYNCHRONIZE, None, None, None, host, end))
    trace.metadata.stopped = end
    return trace
