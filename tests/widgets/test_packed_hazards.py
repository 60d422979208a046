"""Hazards travel to the live widgets as packed columns; the widgets' decoder
(``shared/columns.js``) gives back the objects of the JSON list, field for field."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.views.packed_hazards import pack_hazards
from luisa_nb.views.timeline import build_timeline
from luisa_nb.widgets.trace_views import HazardList, TimelineWidget

COLUMNS_JS = Path(lnb.__file__).parent / "widgets" / "static" / "src" / "shared" / "columns.js"
DECODE = """
import { readFileSync } from "node:fs";
import { decodeHazards } from "%s";
const bytes = readFileSync(process.argv[2]);
const layout = JSON.parse(readFileSync(process.argv[3], "utf8"));
const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
console.log(JSON.stringify(decodeHazards(layout, view)));
"""


@pytest.fixture(scope="module")
def loop_trace():
    """A loop of 12 steps, each a stale upload after an uninitialized read: hazards with
    and without arrows, uploads and groups."""
    device = lnb.create_device("cpu", staging="submit")
    small = np.arange(4, dtype=np.float32)
    history = np.zeros(4, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        source = device.create_buffer(4, np.float32, name="source")  # never written
        target = device.create_buffer(4, np.float32, name="target")
        for step in range(12):
            with lnb.range(f"step {step}"):
                stream.submit(
                    [
                        source.copy_to_async(history),
                        target.copy_from_async(history),
                        target.copy_from_async(small),
                    ]
                )
        stream.synchronize()
    return trace


def test_a_trace_of_a_loop_packs_every_hazard(loop_trace):
    data = build_timeline(loop_trace)
    layout, packed = pack_hazards(data.hazards)
    assert layout["count"] == len(data.hazards) == 24
    assert sorted(layout["kinds"]) == ["STALE_UPLOAD", "UNINITIALIZED_READ"]
    columns = layout["columns"]
    assert columns["ids"]["length"] == sum(len(h["command_ids"]) for h in data.hazards)
    assert all(spec["offset"] % 8 == 0 for spec in columns.values())  # typed-array aligned
    uploads = np.frombuffer(packed, "<i4", columns["upload"]["length"], columns["upload"]["offset"])
    assert uploads.tolist() == [-1 if h["upload"] is None else h["upload"] for h in data.hazards]
    assert len(packed) < len(json.dumps(data.hazards)) / 2


def test_the_widgets_decoder_gives_back_the_json_list(loop_trace, tmp_path):
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    data = build_timeline(loop_trace)
    layout, packed = data.packed_hazards
    assert any(h["arrow"] for h in data.hazards) and any(not h["arrow"] for h in data.hazards)
    (tmp_path / "hazards.bin").write_bytes(packed)
    (tmp_path / "layout.json").write_text(json.dumps(layout))
    script = tmp_path / "decode.mjs"
    script.write_text(DECODE % COLUMNS_JS.as_uri())
    done = subprocess.run(
        ["node", str(script), str(tmp_path / "hazards.bin"), str(tmp_path / "layout.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == json.loads(json.dumps(data.hazards))


def test_live_widgets_send_hazards_packed_and_static_pages_keep_the_list(loop_trace):
    timeline = TimelineWidget(loop_trace)
    hazard_list = HazardList(loop_trace, timeline_data=timeline.timeline_data)
    for view in (timeline, hazard_list):
        assert view.hazard_data == timeline.timeline_data.packed_hazards[1]
        assert view.hazard_layout["count"] == 24
        assert "hazards" not in view.get_state()
    assert "command_ids" in timeline._repr_html_()  # the static page's JSON list
