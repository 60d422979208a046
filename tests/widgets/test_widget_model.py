"""The view data of a trace: columns, lanes, kinds, times, hazard arrows, packing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.synthetic import synthetic_trace

from luisa_nb.recording import CommandKind
from luisa_nb.widgets.model import (
    BYTES_PER_RECORD,
    COLUMNS,
    HOST_LANE,
    KIND_CODES,
    KINDS,
    Analysis,
    build_timeline,
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
    kinds = [KINDS[columns["kind"][by_id[i]]][0] for i in seed.ids]
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
            when = columns["start"][row] + columns["host"][row]
            assert when == pytest.approx((moment - model.origin) / 1000, abs=1e-3)
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
    assert f"synchronize after #{download_id}" in hazard["fix"]
    assert hazard["message"].startswith(f"#{upload_id} upload z <- z_data read z_data[0:1024]")
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
