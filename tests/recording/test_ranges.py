"""User ranges (``lnb.range``): nesting, which records fall in which range, files, the
Chrome export, ranges open when the trace stops, bad names, and no trace at all."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.errors import InvalidArgumentError
from luisa_nb.recording import RangeRecord, SyncRecord
from luisa_nb.recording.chrome import chrome_trace
from luisa_nb.recording.ranges import NO_RANGE, innermost_ranges
from luisa_nb.recording.recorder import NULL_RECORDER, active_recorder


@lnb.kernel
def scale(data, factor):
    i = lnb.dispatch_id().x
    data.write(i, data.read(i) * factor)


@pytest.fixture(scope="module")
def device():
    return lnb.create_device("cpu")


@pytest.fixture(scope="module")
def program(device):
    """Uploads and a dispatch in nested ranges, one upload outside every range."""
    data = device.create_buffer(64, np.float32, name="data")
    values = np.arange(64, dtype=np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        stream.submit([data.copy_from_async(values)])
        with lnb.range("iteration 0"):
            stream.submit([data.copy_from_async(values)])
            with lnb.range("solve"):
                stream.submit([scale.dispatch_async(64, data, 0.5)])
            stream.synchronize()
        with lnb.range("iteration 1"):
            stream.submit([data.copy_from_async(values)])
        stream.synchronize()
    return trace


def test_ranges_nest_in_the_order_they_began(program):
    ranges = program.ranges
    assert [(r.id, r.name, r.depth, r.parent) for r in ranges] == [
        (0, "iteration 0", 0, None),
        (1, "solve", 1, 0),
        (2, "iteration 1", 0, None),
    ]
    outer, inner, second = ranges
    assert outer.begin < inner.begin < inner.end < outer.end < second.begin < second.end
    assert program.metadata.started < outer.begin and second.end < program.metadata.stopped


def test_each_record_belongs_to_the_innermost_range_open_at_enqueue(program):
    names = [
        (record.kind.value, None if (found := program.range_of(record)) is None else found.name)
        for record in program.records
    ]
    assert names == [
        ("upload", None),
        ("upload", "iteration 0"),
        ("dispatch", "solve"),
        ("synchronize", "iteration 0"),
        ("upload", "iteration 1"),
        ("synchronize", None),
    ]
    moments = [r.issued if isinstance(r, SyncRecord) else r.enqueued for r in program.records]
    found = innermost_ranges(program.ranges, np.array(moments), program.metadata.stopped)
    assert found.tolist() == [NO_RANGE, 0, 1, 0, 2, NO_RANGE]


def test_a_sibling_that_ended_hands_back_to_its_parent():
    ranges = [
        RangeRecord(0, "outer", 0, None, 100, 1000),
        RangeRecord(1, "first", 1, 0, 200, 300),
        RangeRecord(2, "deep", 2, 1, 210, 250),
        RangeRecord(3, "second", 1, 0, 400, None),
    ]
    times = np.array([50, 150, 220, 260, 350, 500, 1500, 2500])
    assert innermost_ranges(ranges, times, stop=2000).tolist() == [-1, 0, 2, 1, 0, 3, 3, -1]


def test_ranges_and_compiles_survive_save_and_load(program, tmp_path):
    path = program.save(tmp_path / "ranges.zip")
    loaded = lnb.load_trace(path)
    assert loaded.ranges == program.ranges
    assert loaded.compiles == program.compiles
    assert [r.name for r in map(loaded.range_of, loaded.records) if r] == [
        "iteration 0", "solve", "iteration 0", "iteration 1"
    ]  # fmt: skip


def test_a_file_written_before_ranges_loads_with_none(program, tmp_path):
    path = program.save(tmp_path / "ranges.zip")
    older = tmp_path / "older.zip"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(older, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "trace.json":
                document = json.loads(data)
                del document["ranges"], document["compiles"]
                data = json.dumps(document).encode()
            target.writestr(item, data)
    loaded = lnb.load_trace(older)
    assert loaded.ranges == [] and loaded.compiles == []
    assert len(loaded.records) == len(program.records)


def test_a_damaged_range_parent_is_reported(program, tmp_path):
    path = program.save(tmp_path / "ranges.zip")
    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(damaged, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "trace.json":
                document = json.loads(data)
                document["ranges"][0]["parent"] = 2
                data = json.dumps(document).encode()
            target.writestr(item, data)
    with pytest.raises(lnb.LuisaNbError, match=r"ranges\[0\] has id 0 and parent 2"):
        lnb.load_trace(damaged)


def test_chrome_export_has_a_slice_per_range_on_its_own_track(program):
    document = chrome_trace(program)
    names = {
        event["tid"]: event["args"]["name"]
        for event in document["traceEvents"]
        if event["ph"] == "M" and event["name"] == "thread_name"
    }
    assert names == {0: "host", 1: "default", 2: "host ranges"}
    slices = [e for e in document["traceEvents"] if e["ph"] == "X" and e["cat"] == "range"]
    assert [(s["name"], s["tid"], s["args"]["depth"]) for s in slices] == [
        ("iteration 0", 2, 0),
        ("solve", 2, 1),
        ("iteration 1", 2, 0),
    ]
    outer, inner, _ = slices
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    first = program.ranges[0]
    assert outer["dur"] == pytest.approx((first.end - first.begin) / 1000)


def test_a_range_open_when_the_trace_stops_ends_then(device):
    trace = lnb.trace()
    left_open = lnb.range("left open")
    with trace:
        left_open.__enter__()
        device.default_stream.synchronize()
    left_open.__exit__(None, None, None)
    [record] = trace.ranges
    assert record.end == trace.metadata.stopped
    exported = [e for e in chrome_trace(trace)["traceEvents"] if e.get("cat") == "range"]
    assert exported[0]["name"] == "left open"


def test_a_decorated_function_is_a_range_per_call(device):
    @lnb.range("step")
    def step() -> int:
        device.default_stream.synchronize()
        return 7

    with lnb.trace() as trace, lnb.range("run"):
        assert step() == 7
        step()
    assert [(r.name, r.depth, r.parent) for r in trace.ranges] == [
        ("run", 0, None),
        ("step", 1, 0),
        ("step", 1, 0),
    ]
    assert [trace.range_of(sync).id for sync in trace.syncs] == [1, 2]


@pytest.mark.parametrize("name", [3, None, b"bytes"])
def test_a_range_name_must_be_a_str(name):
    with pytest.raises(InvalidArgumentError, match=r"lnb\.range takes a str name"):
        lnb.range(name)


def test_without_a_trace_a_range_records_nothing(device):
    assert active_recorder() is NULL_RECORDER
    assert NULL_RECORDER.range_opened("x") is None
    with lnb.range("untraced") as scope:
        device.default_stream.synchronize()
    assert repr(scope) == "lnb.range('untraced')"
    with lnb.trace() as trace:
        device.default_stream.synchronize()
    assert trace.ranges == [] and trace.range_of(trace.syncs[0]) is None


def test_kernel_preparation_is_recorded(device):
    @lnb.kernel
    def offset(data, amount):
        i = lnb.dispatch_id().x
        data.write(i, data.read(i) + amount)

    data = device.create_buffer(8, np.float32)
    with lnb.trace() as trace:
        offset.dispatch(8, data, 1.0, sync=True)
        offset.dispatch(8, data, 2.0, sync=True)
    [compile_record] = trace.compiles
    assert compile_record.label in {
        "compile offset",
        "load offset (cached)",
        "prepare offset (python)",
    }
    assert trace.metadata.started < compile_record.begin <= compile_record.end
    assert compile_record.end <= trace.commands[0].enqueued
