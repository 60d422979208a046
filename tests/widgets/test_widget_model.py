"""The view data of a trace: columns, lanes, kinds, times, hazard arrows, packing."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from helpers.streams import PAUSE, streams_trace
from helpers.synthetic import synthetic_trace

from luisa_nb.recording import CommandKind
from luisa_nb.views import timeline as timeline_module
from luisa_nb.views.theme import KIND_COLOURS
from luisa_nb.views.timeline import (
    BYTES_PER_RECORD,
    COLUMNS,
    HOST_LANE,
    KIND_CODES,
    Analysis,
    build_timeline,
    record_details,
)


def unpack(model):
    """The columns read back from the packed buffer as the browser reads them."""
    raw = model.pack()
    layout = model.layout()
    return {
        name: np.frombuffer(raw, "<" + layout[name]["dtype"], model.count, layout[name]["offset"])
        for name, _ in COLUMNS
    }


def test_seed_lanes_kinds_and_ids(seed):
    model = build_timeline(seed.trace)
    assert [lane["name"] for lane in model.lanes] == ["host", "default"]
    columns = model.columns
    assert sorted(columns["id"].tolist()) == seed.ids
    by_id = {int(i): row for row, i in enumerate(columns["id"])}
    kinds = [KIND_COLOURS[columns["kind"][by_id[i]]][0] for i in seed.ids]
    assert kinds == ["upload", "dispatch", "download", "upload", "copy", "synchronize"]
    lanes = [int(columns["lane"][by_id[i]]) for i in seed.ids]
    assert lanes == [1, 1, 1, 1, 1, HOST_LANE]  # a host synchronize sits on the host lane
    assert model.description(seed.download) == f"#{seed.download} download z -> z_data"
    assert model.description(seed.upload) == f"#{seed.upload} upload z <- z_data"
    assert model.description(seed.sync) == f"#{seed.sync} synchronize default"
    with pytest.raises(KeyError, match="no record #9999"):
        model.description(9999)


def test_seed_times_are_relative_microseconds_and_sorted(seed):
    seed_trace = seed.trace
    model = build_timeline(seed_trace)
    columns = model.columns
    assert np.all(np.diff(columns["start"]) >= 0), "rows are sorted by start"
    assert np.all(columns["duration"] >= 0)
    by_id = {int(i): row for row, i in enumerate(columns["id"])}
    for command in seed_trace.commands:
        row = by_id[command.id]
        assert columns["start"][row] == pytest.approx((command.started - model.origin) / 1000)
        took = (command.finished - command.started) / 1000
        assert columns["duration"][row] == pytest.approx(took, rel=1e-5)
        moment = command.host_read if command.kind is CommandKind.UPLOAD else command.host_write
        if moment is None:
            assert np.isnan(columns["host"][row])
        else:
            offset = columns["host"][row]  # float32: exact to one part in 2**23
            when = columns["start"][row] + offset
            tolerance = 1e-3 + abs(float(offset)) * 2.0**-23
            assert when == pytest.approx((moment - model.origin) / 1000, abs=tolerance)
    # the stale upload read host memory before it started (staging="submit")
    assert columns["host"][by_id[seed.upload]] < 0
    low, high = model.meta["extent"]
    assert low <= columns["start"].min() and high >= (columns["start"] + columns["duration"]).max()


def test_seed_has_exactly_one_arrow_from_host_write_to_host_read(seed):
    model = build_timeline(seed.trace)
    download, upload = seed.trace.command(seed.download), seed.trace.command(seed.upload)
    download_id, upload_id = download.id, upload.id
    (hazard,) = model.hazards
    assert hazard["kind"] == "STALE_UPLOAD"
    assert hazard["command_ids"] == [download_id, upload_id]
    assert hazard["upload"] == upload_id
    (finding,) = model.findings
    assert hazard["group"] == finding["index"] == 0
    assert finding["count"] == 1 and finding["occurrences"] == [0]
    assert f"synchronize after #{download_id}" in finding["fix"]
    assert finding["message"].startswith(f"#{upload_id} upload z <- z_data read z_data[0:1024]")
    assert finding["place"] == "download z -> z_data → upload z <- z_data"
    arrow = hazard["arrow"]
    assert arrow["from"] == {
        "lane": HOST_LANE,
        "time": pytest.approx((download.host_write - model.origin) / 1000),
        "command": download_id,
        "label": "host write",
    }
    assert arrow["to"]["command"] == upload_id
    assert arrow["to"]["time"] == pytest.approx((upload.host_read - model.origin) / 1000)
    assert arrow["to"]["time"] < arrow["from"]["time"], "the read happened before the write"
    assert model.meta["stale_uploads"] == [upload_id]
    assert model.meta["staging"] == ["submit"]


def test_pack_round_trips_and_costs_44_bytes_per_record(seed_trace):
    model = build_timeline(seed_trace)
    read_back = unpack(model)
    for name, _ in COLUMNS:
        np.testing.assert_array_equal(
            read_back[name], model.columns[name].astype(read_back[name].dtype)
        )
    assert BYTES_PER_RECORD == 44
    offsets = [spec["offset"] for spec in model.layout().values()]
    assert all(offset % 8 == 0 for offset in offsets)
    summary = model.summary()
    json.dumps(summary, allow_nan=False)  # travels as JSON: no NaN or inf
    assert summary["count"] == 6
    assert [k["name"] for k in summary["kinds"]][: len(CommandKind)] == [
        k.value for k in CommandKind
    ]
    assert summary["texts"][model.columns["text"][0]] in {
        "synchronize default",
        "upload z <- z_data",
    }


def test_texts_are_shared_between_records(seed_trace):
    model = build_timeline(seed_trace)
    # both uploads read as "upload z <- z_data": one text, two records
    uploads = model.columns["kind"] == KIND_CODES["upload"]
    assert len(set(model.columns["text"][uploads].tolist())) == 1
    large = build_timeline(synthetic_trace(10_000))
    assert len(large.texts) < 20
    assert large.count == 10_001


def test_plain_trace_is_analysed_on_the_fly(seed):
    seed_trace = seed.trace
    from luisa_nb.recording import Trace

    plain = Trace()
    plain.set_contents(seed_trace.table, seed_trace.syncs)
    plain.buffers, plain.streams = seed_trace.buffers, seed_trace.streams
    plain.blobs, plain.metadata = seed_trace.blobs, seed_trace.metadata
    analysis = Analysis.of(plain)
    assert [h.command_ids for h in analysis.hazards] == [(seed.download, seed.upload)]
    assert analysis.uploads[seed.upload].stale


def test_synthetic_scale_model():
    trace = synthetic_trace(20_000, streams=4, stale=3)
    model = build_timeline(trace)
    assert model.count == 20_001
    assert [lane["name"] for lane in model.lanes] == ["host", *(f"stream{s}" for s in range(4))]
    assert len(model.hazards) == 3
    assert all(h["arrow"]["from"]["lane"] == HOST_LANE for h in model.hazards)
    assert len(model.pack()) == pytest.approx(BYTES_PER_RECORD * model.count, abs=64)


# -- a program with streams, an event, kernels with scalars and user ranges -------------


@pytest.fixture(scope="module")
def streams_program():
    trace = streams_trace(PAUSE)
    model = build_timeline(trace)
    records = {record.id: record for record in trace.records}
    return SimpleNamespace(trace=trace, model=model, summary=model.summary(), records=records)


def rows_of(model, record_id):
    return int(np.flatnonzero(model.columns["id"] == record_id)[0])


def ids_of(trace, kind):
    return [r.id for r in trace.records if r.kind.value == kind]


def test_a_stream_without_records_on_its_lane_has_no_lane(streams_program):
    summary, trace = streams_program.summary, streams_program.trace
    assert [lane["name"] for lane in summary["lanes"]] == ["host", "producer", "consumer"]
    # the default stream was only waited for by dev.synchronize(), a host-lane record
    default = {s.stream for s in trace.syncs} - {lane["stream"] for lane in summary["lanes"]}
    assert len(default) == 1
    [wait] = [s for s in trace.syncs if s.stream in default]
    assert wait.kind.value == "synchronize"
    assert streams_program.model.columns["lane"][rows_of(streams_program.model, wait.id)] == 0


def test_dispatch_labels_carry_scalar_arguments_and_size(streams_program):
    texts = streams_program.summary["texts"]
    assert "dispatch produce(data, factor=2.0) [64]" in texts
    assert "dispatch consume(data, out) [64]" in texts


def test_ranges_have_host_intervals_and_spans_per_lane(streams_program):
    model, trace, summary = streams_program.model, streams_program.trace, streams_program.summary
    step = trace.ranges[0]
    assert [(r["name"], r["depth"], r["parent"]) for r in summary["ranges"]] == [
        ("step", 0, None),
        ("produce", 1, 0),
    ]
    origin = model.origin
    assert summary["ranges"][0]["host"] == [
        (step.begin - origin) / 1000.0,
        (step.end - origin) / 1000.0,
    ]
    start, end = model.columns["start"], model.columns["start"] + model.columns["duration"]

    def span(lane, ids):
        rows = [rows_of(model, i) for i in ids]
        return [lane, float(min(start[rows])), float(max(end[rows]))]

    dispatch_p, dispatch_c = ids_of(trace, "dispatch")
    [download], [signal], [wait] = (ids_of(trace, k) for k in ("download", "signal", "wait"))
    np.testing.assert_allclose(
        summary["ranges"][1]["spans"], [span(1, [dispatch_p, download, signal])], atol=1e-3
    )
    np.testing.assert_allclose(
        summary["ranges"][0]["spans"],
        [span(1, [dispatch_p, download, signal]), span(2, [wait, dispatch_c])],
        atol=1e-3,
    )
    ranges = model.columns["range"]
    assert {i: int(ranges[rows_of(model, i)]) for i in (dispatch_p, download, wait)} == {
        dispatch_p: 1,
        download: 1,
        wait: 0,
    }
    assert all(
        ranges[rows_of(model, s.id)] == -1 for s in trace.syncs if s.kind.value == "synchronize"
    )


def test_command_lists_of_several_commands_are_bracketed(streams_program):
    model, trace = streams_program.model, streams_program.trace
    dispatch_p = ids_of(trace, "dispatch")[0]
    [download] = ids_of(trace, "download")
    first, last = rows_of(model, dispatch_p), rows_of(model, download)
    columns = model.columns
    assert streams_program.summary["lists"] == [
        {
            "lane": 1,
            "submission": streams_program.records[dispatch_p].submission,
            "start": float(columns["start"][first]),
            "end": pytest.approx(float(columns["start"][last] + columns["duration"][last])),
            "commands": 2,
        }
    ]
    assert columns["submission"][first] == columns["submission"][last] > 0


def test_an_event_links_its_signal_to_its_wait(streams_program):
    model, trace = streams_program.model, streams_program.trace
    [signal], [wait] = ids_of(trace, "signal"), ids_of(trace, "wait")
    [link] = streams_program.summary["links"]
    assert link["event"] == streams_program.records[signal].event
    assert link["from"] == {
        "lane": 1,
        "time": float(model.columns["start"][rows_of(model, signal)]),
        "record": signal,
    }
    assert link["to"]["lane"] == 2 and link["to"]["record"] == wait
    assert link["to"]["time"] == pytest.approx(float(model.columns["start"][rows_of(model, wait)]))


def test_host_activity_shows_compiles_and_the_users_python(streams_program):
    activity = streams_program.summary["host_activity"]
    compiles = [block for block in activity if block["kind"] == "compile"]
    assert [block["label"].split(" ")[1] for block in compiles] == ["produce", "consume"]
    assert all(block["label"].split(" ")[0] in {"compile", "load"} for block in compiles)
    # the sleep between the signal and the wait is Python time, and the longest gap
    python = [block for block in activity if block["kind"] == "python"]
    longest = max(python, key=lambda block: block["end"] - block["start"])
    assert longest["end"] - longest["start"] >= PAUSE * 1e6
    model, trace = streams_program.model, streams_program.trace
    [signal] = ids_of(trace, "signal")
    issued = (streams_program.records[signal].issued - model.origin) / 1000.0
    assert longest["start"] >= issued and longest["label"].startswith("python ")
    assert [b["start"] for b in activity] == sorted(b["start"] for b in activity)


def test_details_name_device_and_host_ranges(streams_program):
    model, summary = streams_program.model, streams_program.summary
    [download] = ids_of(streams_program.trace, "download")
    text = summary["details"][model.columns["detail"][rows_of(model, download)]]
    device, host = text.split("\n")
    assert device == "read data (256 B at byte 0)"
    assert host == "host result: 256 B of <f4 [64]"  # no address of the process
    assert summary["errors"] == {}
    json.dumps(summary, allow_nan=False)


def test_a_large_trace_sends_details_for_the_selected_record_only(streams_program, monkeypatch):
    from luisa_nb.widgets import CommandTableWidget

    trace = streams_program.trace
    [download] = ids_of(trace, "download")
    inline = streams_program.summary["details"]
    expected = inline[
        streams_program.model.columns["detail"][rows_of(streams_program.model, download)]
    ]
    assert record_details(trace, download) == {"id": download, "lines": expected}
    [wait] = ids_of(trace, "wait")
    assert record_details(trace, wait) == {"id": wait, "lines": ""}

    monkeypatch.setattr(timeline_module, "DETAILS_INLINE_LIMIT", 3)
    large = build_timeline(trace)
    assert large.summary()["details"] == [""] and not large.columns["detail"].any()
    table = CommandTableWidget(trace, timeline_data=large)
    table.selected_command = download
    assert table.record_details == {"id": download, "lines": expected}
    table.selected_command = None
    assert table.record_details == {}
