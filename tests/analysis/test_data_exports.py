"""Traces past one notebook: as Arrow and pandas tables, as a Parquet dataset that DuckDB
queries across traces, and in Perfetto's protobuf format read back with its classes."""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.cli import main as cli_main
from luisa_nb.errors import MissingDependencyError
from luisa_nb.recording.protobuf_rows import MessageRows, merged

pa = pytest.importorskip("pyarrow", reason="the data extra (pyarrow) is not installed")
pd = pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")

ELEMENTS = 64


@lnb.kernel
def double(values):
    i = lnb.dispatch_id().x
    values.write(i, values.read(i) * 2.0)


def traced_program(steps: int = 3, extra_stale: bool = False) -> lnb.AnalyzedTrace:
    """A loop as a user writes it, with one stale upload per step (upload after download
    of the same host array in one list), ranges, two streams and sync points."""
    device = lnb.create_device("cpu", staging="submit")
    stream, side = device.default_stream, device.create_stream("side")
    state = device.create_buffer(ELEMENTS, np.float32, name="state")
    other = device.create_buffer(ELEMENTS, np.float32, name="other")
    frame = np.arange(ELEMENTS, dtype=np.float32)
    spare = np.zeros(ELEMENTS, np.float32)
    with lnb.trace() as trace:
        for step in range(steps):
            with lnb.range("frame"), lnb.range(f"step {step}"):
                stream.submit(
                    [
                        state.copy_from_async(frame),
                        double.dispatch_async(ELEMENTS, state),
                        state.copy_to_async(frame),
                        other.copy_from_async(frame),
                    ]
                )
                stream.synchronize()
        if extra_stale:
            side.submit([other.copy_to_async(spare), state.copy_from_async(spare)])
        side.synchronize()
    return trace


@pytest.fixture(scope="module")
def trace():
    return traced_program()


def test_the_table_has_a_row_per_command_then_per_sync_point(trace):
    table = trace.to_arrow()
    commands, syncs = trace.commands, trace.syncs
    assert table.num_rows == len(commands) + len(syncs)
    rows = table.to_pylist()
    assert [row["record"] for row in rows] == ["command"] * len(commands) + ["sync"] * len(syncs)
    assert [row["id"] for row in rows] == [c.id for c in commands] + [s.id for s in syncs]
    started = trace.metadata.started
    for row, record in zip(rows, commands, strict=False):
        assert row["kind"] == record.kind.value and row["status"] == record.status.value
        assert row["stream_name"] == trace.streams[record.stream].name
        assert row["backend"] == trace.streams[record.stream].device
        assert row["policy"] == "submit"
        assert row["enqueued"] == record.enqueued - started
        assert row["started"] == record.started - started
        assert row["host_read"] == (
            None if record.host_read is None else record.host_read - started
        )
        assert row["host_write"] == (
            None if record.host_write is None else record.host_write - started
        )
        assert row["buffers"] == [r.buffer for r in record.device_ranges]
        assert row["accesses"] == [r.access.value for r in record.device_ranges]
        assert row["host_nbytes"] == (None if record.host is None else record.host.nbytes)
    first_upload = rows[0]
    assert first_upload["buffer_names"] == ["state"] and first_upload["host_name"] == "frame"
    assert first_upload["host_shape"] == [ELEMENTS] and first_upload["nbytes"] == [ELEMENTS * 4]
    assert [row["range_path"] for row in rows[:4]] == ["frame/step 0"] * 4
    assert rows[4]["range_path"] == "frame/step 1"
    sync_rows = rows[len(commands) :]
    assert [row["kind"] for row in sync_rows] == [s.kind.value for s in syncs]
    assert all(row["issued"] == s.issued - started for row, s in zip(sync_rows, syncs, strict=True))
    assert all(row["enqueued"] is None for row in sync_rows)


def test_pandas_gives_the_same_rows_with_nullable_integers(trace):
    frame = trace.to_pandas()
    assert list(frame.columns) == trace.to_arrow().column_names
    assert str(frame["host_read"].dtype) == "Int64"
    uploads = frame[(frame["record"] == "command") & (frame["kind"] == "upload")]
    assert len(uploads) == 2 * 3 and uploads["host_read"].notna().all()
    dispatches = frame[frame["kind"] == "dispatch"]
    assert dispatches["host_read"].isna().all()
    assert dispatches["label"].str.startswith("double").all()


def test_findings_table_links_each_finding_to_its_commands(trace):
    hazards = trace.hazards
    assert [h.kind.value for h in hazards] == ["STALE_UPLOAD"] * 3
    findings = trace.findings_to_arrow().to_pylist()
    assert [row["command_ids"] for row in findings] == [list(h.command_ids) for h in hazards]
    for row in findings:
        assert row["earlier"] == "download state -> frame"
        assert row["later"] == "upload other <- frame"
        assert row["host_name"] == "frame" and row["host_nbytes"] == ELEMENTS * 4
        assert row["time_host_read"] < row["time_host_write"]
    commands = trace.to_pandas().set_index("id")
    assert set(commands.loc[[r["last_command"] for r in findings], "kind"]) == {"upload"}


def test_a_missing_extra_is_named(trace, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what an uninstalled module imports as
    with pytest.raises(MissingDependencyError, match=r"luisa_nb\[data\]") as raised:
        trace.to_arrow()
    assert isinstance(raised.value, ImportError)


def test_duckdb_finds_the_stale_upload_of_every_nightly_trace(tmp_path, capsys):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed")
    paths = []
    for night in range(3):
        path = tmp_path / f"night{night}.lnbtrace"
        traced_program(steps=2, extra_stale=night == 1).save(path)
        paths.append(str(path))
    dataset = tmp_path / "dataset"
    assert cli_main(["export", *paths, "--parquet", str(dataset)]) == 0
    assert "wrote 6 Parquet files" in capsys.readouterr().out
    every_night = duckdb.sql(
        f"""
        select kind, earlier, later, count(distinct trace) as nights, count(*) as times
        from read_parquet('{dataset}/findings/*.parquet')
        group by kind, earlier, later
        having count(distinct trace) = (
            select count(distinct trace) from read_parquet('{dataset}/commands/*.parquet'))
        """
    ).fetchall()
    assert every_night == [
        ("STALE_UPLOAD", "download state -> frame", "upload other <- frame", 3, 6)
    ]
    once = duckdb.sql(
        f"select count(*) from read_parquet('{dataset}/findings/*.parquet') "
        "where later = 'upload state <- spare'"
    ).fetchall()
    assert once == [(1,)]


def test_export_rejects_what_it_cannot_write(tmp_path, trace, capsys):
    paths = [str(tmp_path / "a.lnbtrace"), str(tmp_path / "b.lnbtrace")]
    for path in paths:
        trace.save(path)
    assert cli_main(["export", *paths, "--perfetto", str(tmp_path / "x.pftrace")]) == 2
    assert "write one trace, got 2" in capsys.readouterr().err
    assert cli_main(["export", paths[0]]) == 2
    assert "--parquet FOLDER, --perfetto PATH or --chrome PATH" in capsys.readouterr().err
    assert not (tmp_path / "x.pftrace").exists()


# -- Perfetto ---------------------------------------------------------------------------

protos = pytest.importorskip(
    "perfetto.protos.perfetto.trace.perfetto_trace_pb2", reason="the perfetto package is missing"
)


def read_back(path):
    document = protos.Trace()
    document.ParseFromString(path.read_bytes())
    tracks = {
        p.track_descriptor.uuid: p.track_descriptor.name
        for p in document.packet
        if p.HasField("track_descriptor")
    }
    names, annotations = {}, {}
    events = []
    for packet in document.packet:
        if packet.HasField("interned_data"):
            names.update({n.iid: n.name for n in packet.interned_data.event_names})
            annotations.update({n.iid: n.name for n in packet.interned_data.debug_annotation_names})
        if packet.HasField("track_event"):
            event = packet.track_event
            values = {}
            for annotation in event.debug_annotations:
                key = annotations[annotation.name_iid]
                values[key] = (
                    annotation.string_value
                    if annotation.HasField("string_value")
                    else annotation.int_value
                )
            events.append(
                {
                    "time": packet.timestamp,
                    "track": tracks[event.track_uuid],
                    "type": protos.TrackEvent.Type.Name(event.type),
                    "name": names.get(event.name_iid),
                    "flows": list(event.flow_ids),
                    **values,
                }
            )
    return events


@pytest.fixture(scope="module")
def perfetto_events(trace, tmp_path_factory):
    path = tmp_path_factory.mktemp("perfetto") / "trace.pftrace"
    assert trace.save_perfetto(path) == path
    assert (
        cli_main(
            ["export", str(_saved(trace, path.parent)), "--perfetto", str(path.with_suffix(".cli"))]
        )
        == 0
    )
    assert read_back(path.with_suffix(".cli")) == read_back(path)
    return read_back(path)


def _saved(trace, folder):
    path = folder / "trace.lnbtrace"
    trace.save(path)
    return path


def test_every_command_is_a_slice_on_its_streams_track(trace, perfetto_events):
    begins = {
        e["command"]: e
        for e in perfetto_events
        if e["type"] == "TYPE_SLICE_BEGIN" and "command" in e
    }
    assert sorted(begins) == [c.id for c in trace.commands]
    origin = min(trace.metadata.started, *(c.enqueued for c in trace.commands))
    for record in trace.commands:
        begin = begins[record.id]
        assert begin["track"] == trace.streams[record.stream].name
        assert begin["time"] == record.started - origin
        assert begin["name"] == lnb.analysis.describe(trace, record).split(" ", 1)[1]
    assert {e["name"] for e in perfetto_events if e["track"] == "host ranges" and e["name"]} == {
        "frame",
        "step 0",
        "step 1",
        "step 2",
    } | {e["name"] for e in perfetto_events if (e["name"] or "").startswith("compile ")}


def test_slices_nest_on_every_track(perfetto_events):
    open_slices = defaultdict(list)
    last_time = 0
    for event in perfetto_events:
        assert event["time"] >= last_time
        last_time = event["time"]
        if event["type"] == "TYPE_SLICE_BEGIN":
            open_slices[event["track"]].append(event["time"])
        elif event["type"] == "TYPE_SLICE_END":
            assert open_slices[event["track"]].pop() <= event["time"]
    assert all(not stack for stack in open_slices.values())


def test_flows_join_host_accesses_and_draw_the_hazard_arrow(trace, perfetto_events):
    by_flow = defaultdict(list)
    for event in perfetto_events:
        for flow in event["flows"]:
            by_flow[flow].append(event)
    upload = trace.commands[0]
    upload_flow = [
        f for f, events in by_flow.items() if all(e.get("command") == upload.id for e in events)
    ]
    (joined,) = [by_flow[f] for f in upload_flow]
    assert [(e["track"], e["name"].split(" ")[0]) for e in joined] == [
        ("host", "enqueue"),
        ("host", "host"),
        ("default", "upload"),
    ]
    arrows = [
        events
        for events in by_flow.values()
        if any("STALE_UPLOAD" in (e["name"] or "") for e in events)
    ]
    assert [[e["command"] for e in events] for events in arrows] == [
        list(h.command_ids) for h in trace.hazards
    ]
    findings = [e for e in perfetto_events if e["track"] == "findings"]
    assert [(e["name"], e["command"]) for e in findings] == [
        (h.kind.value, h.command_ids[-1]) for h in trace.hazards
    ]
    assert [e["message"] for e in findings] == [h.message for h in trace.hazards]
    assert [e["fix"] for e in findings] == [h.fix for h in trace.hazards]


# -- the encoder --------------------------------------------------------------------------


def test_rows_encode_as_protobuf_does(tmp_path):
    rng = np.random.default_rng(7)
    count = 200
    times = rng.integers(0, 2**62, count)
    ids = rng.integers(-(2**40), 2**40, count)
    flows = rng.integers(0, 2**64 - 1, count, dtype=np.uint64)
    present = rng.random(count) < 0.5
    texts = ["".join(rng.choice(list("abcé ✓"), rng.integers(0, 40))) for _ in range(count)]
    event = MessageRows(count)
    event.varint(9, 3)
    event.varint(11, times)
    annotation = MessageRows(count)
    annotation.varint(1, 2)
    annotation.varint(4, ids)
    event.message(4, annotation, present)
    text = MessageRows(count)
    text.text(6, texts)
    event.message(4, text)
    event.fixed64(47, flows, ~present)
    packet = MessageRows(count)
    packet.varint(8, times)
    packet.message(11, event)
    document = MessageRows(count)
    document.message(1, packet)
    data, offsets = document.encoded()
    order = rng.permutation(count)
    halves = [order[: count // 2], order[count // 2 :]]
    blocks = []
    for half in halves:
        rows = np.sort(half)
        pieces = b"".join(data[offsets[r] : offsets[r + 1]].tobytes() for r in rows)
        starts = np.concatenate([[0], np.cumsum([offsets[r + 1] - offsets[r] for r in rows])])
        blocks.append((np.frombuffer(pieces, np.uint8), starts, rows))
    parsed = protos.Trace()
    parsed.ParseFromString(merged(blocks))
    assert len(parsed.packet) == count
    for row, packet in enumerate(parsed.packet):
        expected = protos.TracePacket(timestamp=int(times[row]))
        expected.track_event.type = 3
        expected.track_event.track_uuid = int(times[row])
        if present[row]:
            expected.track_event.debug_annotations.add(name_iid=2, int_value=int(ids[row]))
        expected.track_event.debug_annotations.add(string_value=texts[row])
        if not present[row]:
            expected.track_event.flow_ids.append(int(flows[row]))
        assert packet == expected


# -- whole-trace analyses -----------------------------------------------------------------


def test_stream_breakdown_splits_each_span_without_gaps(trace):
    from luisa_nb.analysis.breakdown import stream_breakdown

    breakdown = stream_breakdown(trace).set_index("stream")
    assert list(breakdown.index) == ["default"]  # nothing ran on "side" in this program
    row = breakdown.loc["default"]
    assert row["busy"] + row["queued"] + row["waiting_on_host"] == row["span"]
    ran = [c for c in trace.commands if c.started is not None]
    first, last = min(c.submitted for c in ran), max(c.finished for c in ran)
    assert row["span"] == last - first
    runs = sorted((c.started, c.finished) for c in ran)
    assert row["busy"] == sum(end - start for start, end in runs)  # one stream: no overlap
    assert 0 < row["busy_fraction"] < 1


def test_queue_depth_counts_submitted_unfinished_commands(trace):
    from luisa_nb.analysis.breakdown import queue_depth

    depth = queue_depth(trace)
    commands = [c for c in trace.commands if c.stream == trace.commands[0].stream]
    origin = trace.metadata.started
    for row in depth.itertuples():
        moment = row.time + origin
        held = sum(
            c.submitted <= moment and (c.finished is None or c.finished > moment) for c in commands
        )
        assert row.depth == held
    assert depth["depth"].max() == 4 and depth["depth"].iloc[-1] == 0


def test_staged_bytes_mark_the_stale_uploads(trace):
    from luisa_nb.analysis.breakdown import staged_bytes

    staged = staged_bytes(trace)
    assert len(staged) == 6 and (staged["nbytes"] == ELEMENTS * 4).all()
    assert staged["total"].tolist() == [ELEMENTS * 4 * n for n in range(1, 7)]
    assert staged.loc[staged["stale"], "id"].tolist() == [h.command_ids[-1] for h in trace.hazards]


def test_comparing_traces_counts_findings_and_commands(trace):
    from luisa_nb.analysis.breakdown import compare_traces

    after = traced_program(steps=2, extra_stale=True)
    comparison = compare_traces(trace, after)
    findings = {
        row.later: (row.count_before, row.count_after, row.change)
        for row in comparison.findings.itertuples()
    }
    assert findings == {
        "upload other <- frame": (3, 2, -1),
        "upload state <- spare": (0, 1, 1),
    }
    commands = comparison.commands.set_index("command")
    assert commands.loc["upload state frame", ["count_before", "count_after"]].tolist() == [3, 2]
    assert commands.loc["download other spare", "change"] == 1


def test_figures_draw_the_analyses(trace):
    from luisa_nb.analysis.breakdown import compare_traces
    from luisa_nb.views.data_figures import breakdown_figure, comparison_figure

    figure = breakdown_figure(trace)
    split, _, staged = figure.axes
    assert [label.get_text() for label in split.get_yticklabels()] == ["default"]
    assert staged.get_legend().get_texts()[-1].get_text() == "stale upload (3)"
    comparison = comparison_figure(compare_traces(trace, traced_program(steps=1)))
    found, _ = comparison.axes
    assert [label.get_text() for label in found.get_yticklabels()] == [
        "STALE_UPLOAD: upload other <- frame"
    ]
