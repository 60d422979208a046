"""Chrome Trace Event export: tracks, complete events, host instants and flow arrows."""

import json
from collections import defaultdict

import pytest

from luisa_nb.recording.chrome import chrome_trace


@pytest.fixture
def document(sample_trace, tmp_path):
    path = tmp_path / "sample.json"
    document = chrome_trace(sample_trace, path)
    assert json.loads(path.read_text()) == document
    return document


def events(document, phase):
    return [event for event in document["traceEvents"] if event["ph"] == phase]


def test_one_named_track_per_stream_plus_the_host(document):
    names = {
        event["tid"]: event["args"]["name"]
        for event in events(document, "M")
        if event["name"] == "thread_name"
    }
    assert names == {0: "host", 1: "default", 2: "copy"}
    [process] = [e for e in events(document, "M") if e["name"] == "process_name"]
    assert process["args"]["name"] == "luisa_nb"


def test_complete_events_for_commands_that_ran(document, sample_trace):
    complete = {event["args"]["id"]: event for event in events(document, "X")}
    assert sorted(complete) == [1, 2, 3]
    upload = complete[1]
    assert upload["name"] == "#1 upload z <- z_data"
    assert upload["tid"] == 1 and upload["ts"] == 0.3 and upload["dur"] == 0.1
    assert complete[2]["dur"] == 0.5 and complete[2]["name"] == "#2 dispatch vecadd(z, buffer2)"
    assert complete[3]["tid"] == 2
    host = complete[3]["args"]["host"]
    assert host["shape"] == [4, 4] and host["address"] != sample_trace.command(3).host.address
    assert complete[3]["name"] == f"#3 download buffer2 -> host@0x{host['address']:x}"


def test_commands_that_did_not_run_are_instants_with_their_status(document):
    instants = {event["name"] for event in events(document, "i") if event["tid"] == 1}
    assert "#4 fill z[256:512] (failed)" in instants
    assert "#5 upload z <- z_data (skipped)" in instants


def test_host_track_has_enqueues_host_reads_and_host_writes(document):
    host = [event for event in events(document, "i") if event["tid"] == 0]
    names = [event["name"] for event in host]
    assert sum(name.startswith("enqueue #") for name in names) == 5
    assert "host read #1 upload z <- z_data" in names
    assert "host write #3 download buffer2 -> host@0x" in " ".join(names)
    read = next(event for event in host if event["name"].startswith("host read"))
    assert read["ts"] == 0.2 and read["s"] == "t"


def test_sync_points_sit_on_their_track(document):
    tracks = {e["name"]: e["tid"] for e in events(document, "i") if e["cat"] == "sync"}
    assert tracks == {
        "signal event 9 on default": 1,
        "wait event 9 on copy": 2,
        "callback on copy": 2,
        "synchronize event 9": 0,
        "synchronize default": 0,
    }


def test_flows_pair_up_and_bind_to_the_event_before_them(document):
    flows = defaultdict(list)
    trace_events = document["traceEvents"]
    for position, event in enumerate(trace_events):
        if event["ph"] in "stf":
            flows[event["id"]].append(event)
            anchor = trace_events[position - 1]
            while anchor["ph"] in "stf":
                position -= 1
                anchor = trace_events[position - 1]
            assert (anchor["tid"], anchor["ts"]) == (event["tid"], event["ts"])
            assert anchor["ph"] in "Xi"
    assert len(flows) == 2
    for chain in flows.values():
        chain.sort(key=lambda event: "stf".index(event["ph"]))
        phases = [event["ph"] for event in chain]
        assert phases[0] == "s" and phases[-1] == "f" and set(phases[1:-1]) <= {"t"}
        assert chain[-1]["bp"] == "e"
        times = [event["ts"] for event in chain]
        assert times == sorted(times)
    upload_flow = next(chain for chain in flows.values() if len(chain) == 3)
    assert [(e["ph"], e["tid"], e["ts"]) for e in upload_flow] == [
        ("s", 0, 0.1),
        ("t", 0, 0.2),
        ("f", 1, 0.3),
    ]
    download_flow = next(chain for chain in flows.values() if len(chain) == 2)
    assert [(e["ph"], e["tid"], e["ts"]) for e in download_flow] == [("s", 2, 1.2), ("f", 0, 1.3)]


def upload_start(document):
    return next(e["ts"] for e in events(document, "X") if e["args"]["id"] == 1)


def test_timestamps_fall_back_to_the_earliest_time(sample_trace):
    sample_trace.metadata.started = 0
    document = chrome_trace(sample_trace)
    assert min(event["ts"] for event in document["traceEvents"] if "ts" in event) == 0.0
    assert upload_start(document) == 0.2  # started 300 ns after the trace, enqueued at 100


def test_times_before_the_trace_started_never_go_negative(sample_trace):
    sample_trace.metadata.started += 250
    document = chrome_trace(sample_trace)
    assert min(event["ts"] for event in document["traceEvents"] if "ts" in event) == 0.0
    assert upload_start(document) == 0.2


def test_a_stream_only_a_device_synchronize_names_gets_no_track():
    """As in the timeline: the device's synchronize waits on its idle default stream too,
    which has nothing of its own to draw."""
    import numpy as np

    import luisa_nb as lnb

    device = lnb.create_device("cpu")
    busy = device.create_stream("busy")
    buffer = device.create_buffer(4, np.float32)
    assert device.default_stream is not busy  # made before the trace, never used in it
    with lnb.trace() as trace:
        busy.submit([buffer.fill_async(1.0)])
        device.synchronize()
    document = chrome_trace(trace)
    names = {e["args"]["name"] for e in events(document, "M") if e["name"] == "thread_name"}
    assert names == {"host", "busy"}
    device.close()
