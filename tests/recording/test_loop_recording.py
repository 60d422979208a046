"""What a trace keeps of a notebook loop that uploads a new host array each step: the
captured bytes in blocks (``_row_appender.c``, ``captured_copy``), host ranges and their
memos made in C (``runtime/_submission_fields.c``, ``host_range``), the fields of a new
array described in C (``describe_transfer``), and none of it left for the garbage collector
to look at on every pass. The C and Python recorders must keep the same records."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
from xxhash import xxh3_128_hexdigest

import luisa_nb as lnb
from luisa_nb.recording import row_appender
from luisa_nb.recording import trace as trace_module
from luisa_nb.recording.recorder import PythonTraceRecorder, TraceRecorder
from luisa_nb.recording.records import CommandKind
from luisa_nb.runtime import host as host_module

needs_native = pytest.mark.skipif(
    not row_appender.NATIVE or host_module.host_range is host_module.python_host_range,
    reason="the C row appender or submission report was not built (no C compiler or "
    "Python headers at install)",
)

SIZE = 256


@lnb.kernel
def double(values):
    index = lnb.dispatch_id().x
    values.write(index, values.read(index) * 2.0)


def _fresh_array_loop(steps: int, start: int = 0) -> tuple[lnb.Buffer, np.ndarray]:
    """The loop of ``benchmarks/bench_notebook_loop.py``: a new host array each step."""
    buffer = lnb.create_device("cpu").create_buffer(SIZE, np.float32)
    out = np.empty(SIZE, np.float32)
    for i in range(start, start + steps):
        host = np.full(SIZE, float(i), np.float32)
        buffer.copy_from(host)
        double(buffer, dispatch_size=SIZE)
        buffer.copy_to(out)
    return buffer, out


def _records(trace: lnb.ViewableTrace) -> list[tuple]:
    """What a trace says of each command, besides ids and times."""
    rows = []
    for record in trace.commands:
        host = record.host
        rows.append(
            (
                record.kind,
                record.label,
                None if host is None else (host.name, host.nbytes, host.dtype, host.shape),
                None if record.enqueue_capture is None else record.enqueue_capture.digest,
            )
        )
    return rows


def _blob(trace: lnb.ViewableTrace, capture) -> np.ndarray:
    return trace.blobs[capture.blob]


@needs_native
def test_both_recorders_keep_the_same_records_of_a_loop_of_new_arrays(monkeypatch):
    """The C recorder describes a new array's upload without calling ``_describe``; the
    records, names, captured bytes and hazards are those of the Python recorder, for arrays
    of their own and for views of one array (which ``_describe`` still names)."""
    traces = {}
    for recorder_class in (TraceRecorder, PythonTraceRecorder):
        monkeypatch.setattr(trace_module, "TraceRecorder", recorder_class)
        with lnb.trace() as trace:
            _fresh_array_loop(40)
            buffer = lnb.create_device("cpu").create_buffer(4, np.float32)
            whole = np.arange(64, dtype=np.float32)
            for start in range(0, 64, 4):
                buffer.copy_from(whole[start : start + 4])
        assert type(trace.recorder) is recorder_class
        traces[recorder_class] = trace
    c_trace, python_trace = traces[TraceRecorder], traces[PythonTraceRecorder]
    assert _records(c_trace) == _records(python_trace)
    uploads = [r for r in c_trace.commands if r.kind is CommandKind.UPLOAD]
    assert [r.host.name for r in uploads[:40]] == ["host"] * 40
    assert uploads[40].host.name == "whole[0:4]" and uploads[-1].host.name == "whole[60:64]"
    assert [float(_blob(c_trace, r.enqueue_capture).view(np.float32)[0]) for r in uploads[:40]] == [
        float(i) for i in range(40)
    ]
    assert [h.kind for h in c_trace.hazards] == [h.kind for h in python_trace.hazards]


@needs_native
def test_a_traced_loop_leaves_nothing_per_step_for_the_garbage_collector():
    """A step's host range, capture, fields, memos and weak references are left out of the
    collector's passes: a loop of 1,000 new arrays adds under 0.5 tracked objects per step
    (8 per step when each was tracked, and each full collection looked at all of them)."""
    _fresh_array_loop(5)
    with lnb.trace() as trace:
        _fresh_array_loop(5)
        before = len(gc.get_objects())
        _fresh_array_loop(1_000, start=5)
        added = len(gc.get_objects()) - before
    assert len(trace.commands) == 3 * 1_005
    assert added / 1_000 < 0.5


@needs_native
def test_captured_bytes_are_read_only_copies_that_outlive_their_trace():
    """Captures are copies, read-only, that keep their bytes while the host array changes,
    and after the trace that made them is dropped and the next reuses the blocks no blob
    kept alive."""
    with lnb.trace() as first:
        _fresh_array_loop(300)
    kept = {key: blob for place, (key, blob) in enumerate(first.blobs.items()) if place % 50 == 0}
    expected = {key: blob.copy() for key, blob in kept.items()}
    assert all(not blob.flags.writeable for blob in kept.values())
    del first
    gc.collect()
    with lnb.trace() as second:
        _fresh_array_loop(300, start=1_000)
    assert all(np.array_equal(kept[key], expected[key]) for key in kept)
    uploads = [r for r in second.commands if r.kind is CommandKind.UPLOAD]
    values = [float(_blob(second, r.enqueue_capture).view(np.float32)[-1]) for r in uploads]
    assert values == [float(i) for i in range(1_000, 1_300)]
    downloads = [r for r in second.commands if r.kind is CommandKind.DOWNLOAD]
    assert float(_blob(second, downloads[-1].data_capture).view(np.float32)[0]) == 2.0 * 1_299


@needs_native
@pytest.mark.parametrize(
    "make",
    [
        lambda: np.zeros(16, np.float32),
        lambda: np.zeros((3, 5), np.float64),
        lambda: np.zeros(7, np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4")])),
        lambda: np.zeros((2, 2), np.dtype(("<i4", (3,)))),
        lambda: np.zeros(0, np.uint8),
        lambda: np.arange(32, dtype=np.int16)[8:24],
    ],
    ids=["float32", "float64-2d", "struct", "subarray", "empty", "view"],
)
def test_the_c_host_range_is_the_python_one(make):
    """``host_range`` in C gives the range ``python_host_range`` gives, remembers it for the
    same array (the same object) and leaves it out of the collector's passes."""
    array = make()
    c_range = host_module.host_range(array)
    python_range = host_module.python_host_range(make())
    assert (c_range.nbytes, c_range.dtype, c_range.shape, c_range.name) == (
        python_range.nbytes,
        python_range.dtype,
        python_range.shape,
        python_range.name,
    )
    assert c_range.address == array.__array_interface__["data"][0]
    assert host_module.host_range(array) is c_range
    assert not gc.is_tracked(c_range)
    reshaped = array.reshape(-1)[:, None]
    assert host_module.host_range(reshaped).shape[:2] == (array.size, 1)


def _dropped_trace() -> tuple[weakref.ref, weakref.ref]:
    with lnb.trace() as trace:
        _fresh_array_loop(20)
    return weakref.ref(trace), weakref.ref(trace.recorder)


def test_a_trace_the_program_lets_go_of_is_freed_at_once():
    """Trace and recorder hold no cycle (the recorder holds its trace, and the callbacks of
    watched arrays hold the recorder, weakly): the last reference dropped frees them without
    waiting for the garbage collector, and with them the memory of their captured bytes."""
    gc.collect()
    gc.disable()
    try:
        trace, recorder = _dropped_trace()
        assert trace() is None and recorder() is None
    finally:
        gc.enable()


def _trace_left_queued(buffer: lnb.Buffer, capture: str) -> weakref.ref:
    """Trace commands that stay queued (their stream waits), and let go of the trace."""
    with lnb.trace(capture=capture) as trace:
        for _ in range(3):
            double(buffer, dispatch_size=SIZE)
        buffer.copy_from(np.full(SIZE, 5.0, np.float32))
        double(buffer, dispatch_size=SIZE)
    assert trace.counts[0] == 5 and len(trace.metadata.pending) == 0
    return weakref.ref(trace)


@pytest.mark.parametrize("hooks", ["c", "python"])
@pytest.mark.parametrize("capture", ["head", "full"])
def test_commands_still_queued_when_their_trace_is_freed_run_unrecorded(
    monkeypatch, hooks, capture
):
    """Commands submitted in a trace that are still queued when the program lets go of
    the trace run all the same, recording nothing: before, the first of them failed on the
    freed trace (a buffer made before it has its bytes captured when first touched)."""
    if hooks == "python":
        monkeypatch.setattr(trace_module, "TraceRecorder", PythonTraceRecorder)
    device = lnb.create_device("cpu")
    buffer = device.create_buffer(SIZE, np.float32)
    buffer.copy_from(np.ones(SIZE, np.float32))
    release, event = threading.Event(), device.create_event()
    gate = device.create_stream()
    gate.add_callback(release.wait)
    gate.signal(event)
    device.default_stream.wait(event)  # what follows runs only once `release` is set
    freed = _trace_left_queued(buffer, capture)
    gc.collect()
    assert freed() is None
    release.set()
    out = np.empty(SIZE, np.float32)
    buffer.copy_to(out)  # raised CommandFailedError: the first queued run had failed
    np.testing.assert_array_equal(out, np.full(SIZE, 10.0, np.float32))


def test_a_run_whose_trace_is_freed_while_it_runs_keeps_no_bytes():
    """A worker's run may outlive its trace by a step: its captures still name digests."""
    recorder = _dropped_trace_recorder()
    assert not recorder.recording
    data = np.arange(64, dtype=np.uint8)
    capture = recorder._capture(data)
    assert capture.blob is None and capture.nbytes == 64
    assert capture.digest == xxh3_128_hexdigest(data)
    assert recorder._capture(data) is capture
    recorder.capture_initial([])


def _dropped_trace_recorder() -> TraceRecorder:
    with lnb.trace() as trace:
        _fresh_array_loop(2)
    recorder = trace.recorder
    del trace
    return recorder
