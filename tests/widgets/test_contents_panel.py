"""The contents panel's data without a browser: the buffers a command touched before and
after it (replayed), stepping, validation, pages, and what it says where replay cannot
know the bytes."""

from __future__ import annotations

import numpy as np
import pytest
from traitlets import TraitError

import luisa_nb as lnb
from luisa_nb.seed import run_seed
from luisa_nb.widgets import ContentsPanel, TraceViewer

ARANGE = np.arange(1024, dtype=np.float32)
STALE = np.full(1024, 123.0, np.float32)


@pytest.fixture(scope="module")
def full():
    """The seed traced with capture='full' (its kernel compiled before the trace): the
    five commands' ids in issue order, and the trace."""
    run_seed(lnb.create_device("cpu", staging="submit"))
    trace = run_seed(lnb.create_device("cpu", staging="submit"), capture="full").trace
    return trace, [command.id for command in trace.commands]


def buffer_entry(panel: ContentsPanel, name: str) -> tuple[int, dict]:
    (found,) = [(k, b) for k, b in enumerate(panel.summary["buffers"]) if b["name"] == name]
    return found


def before_after(panel: ContentsPanel, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Buffer ``name``'s first page of values, as the browser receives it."""
    index, _ = buffer_entry(panel, name)
    request = {"type": "page", "buffer": index, "mode": "all", "page": 0, "request": 7}
    message, buffers = panel.page_message({**request, "command_id": panel.selected_command})
    assert message["type"] == "page" and message["request"] == 7
    assert message["buffer"] == index and message["command_id"] == panel.selected_command
    indices = np.frombuffer(buffers[0], np.float64)
    assert indices.tolist() == list(range(len(indices)))
    return np.frombuffer(buffers[1], np.float32), np.frombuffer(buffers[2], np.float32)


def test_dispatch_shows_z_becoming_x_plus_y(full):
    trace, (first_upload, dispatch, *_rest) = full
    panel = ContentsPanel(trace, dispatch)
    summary = panel.summary
    assert summary["record_id"] == dispatch and summary["before"] == first_upload
    assert summary["title"].startswith(f"#{dispatch} dispatch vecadd")
    assert [b["name"] for b in summary["buffers"]] == ["z", "x", "y"]
    assert len(panel.heatmaps) == 3 and all(isinstance(h, bytes) for h in panel.heatmaps)
    _, z = buffer_entry(panel, "z")
    assert z["summary"]["count"] == 1024 and z["summary"]["names"] == [
        f"before (after #{first_upload})",
        f"after #{dispatch}",
    ]
    before, after = before_after(panel, "z")
    np.testing.assert_array_equal(before, STALE[:256])
    np.testing.assert_array_equal(after, (ARANGE + 1000 * ARANGE)[:256])
    assert buffer_entry(panel, "x")[1]["summary"]["count"] == 0  # read, not written


def test_the_stale_upload_puts_back_the_stale_bytes(full):
    trace, (_, _, download, upload, copy) = full
    panel = ContentsPanel(trace, upload)
    assert panel.summary["before"] == download
    before, after = before_after(panel, "z")
    np.testing.assert_array_equal(before, (1001 * ARANGE)[:256])
    np.testing.assert_array_equal(after, STALE[:256])
    panel.selected_command = copy  # x takes z's stale bytes
    before, after = before_after(panel, "x")
    np.testing.assert_array_equal(before, ARANGE[:256])
    np.testing.assert_array_equal(after, STALE[:256])


def test_the_first_command_starts_from_the_start_and_steps_are_the_commands(full):
    trace, ids = full
    panel = ContentsPanel(trace, ids[0])
    assert np.frombuffer(panel.steps, "<i4").tolist() == ids
    assert panel.summary["before"] is None
    (z,) = panel.summary["buffers"]
    assert z["summary"]["names"][0] == "before (after the start)"
    before, after = before_after(panel, "z")
    np.testing.assert_array_equal(before, np.zeros(256, np.float32))  # made in the trace
    np.testing.assert_array_equal(after, STALE[:256])


def test_a_sync_point_and_nothing_selected_say_so_in_words(full):
    trace, _ = full
    (sync,) = trace.syncs
    panel = ContentsPanel(trace)
    assert panel.summary["buffers"] == [] and "Select a command" in panel.summary["note"]
    panel.selected_command = sync.id
    assert panel.summary["buffers"] == []
    assert panel.summary["note"] == "a sync point touches no buffer"


def test_selection_is_validated_and_pages_of_another_command_refused(full):
    trace, ids = full
    panel = ContentsPanel(trace, ids[1])
    with pytest.raises(TraitError, match=r"no record #999999.*run from"):
        panel.selected_command = 999_999
    with pytest.raises(TraitError):
        panel.selected_command = True
    assert panel.selected_command == ids[1]
    stale = {"type": "page", "buffer": 0, "command_id": ids[0], "mode": "all", "page": 0}
    message, buffers = panel.page_message(stale)
    assert message["type"] == "error" and "no longer shown" in message["message"]
    assert buffers == []
    past = {**stale, "command_id": ids[1], "buffer": 3}
    assert "touched 3 buffer(s)" in panel.page_message(past)[0]["message"]
    bad_page = {**stale, "command_id": ids[1], "page": "one"}
    assert "page must be an integer" in panel.page_message(bad_page)[0]["message"]


def test_a_loaded_trace_says_why_the_dispatch_result_is_not_known(full, tmp_path):
    trace, ids = full
    trace.save(tmp_path / "seed.lnbtrace")
    loaded = lnb.load_trace(tmp_path / "seed.lnbtrace")
    panel = ContentsPanel(loaded, ids[1])
    _, z = buffer_entry(panel, "z")
    assert z["summary"]["available"] is False
    (note,) = z["summary"]["notes"]
    assert "'z' bytes [0:4096) are not known here" in note
    assert f"dispatch #{ids[1]} cannot run again" in note
    message, _ = panel.page_message(
        {"type": "page", "buffer": 0, "command_id": ids[1], "mode": "all", "page": 0}
    )
    assert message["type"] == "error" and message["message"] == note
    assert "not known here" in panel._repr_html_()
    _, x = buffer_entry(panel, "x")  # x came from an upload: known
    assert x["summary"]["available"] is True and x["summary"]["count"] == 0


def test_the_viewer_links_the_panel_to_the_selection(full):
    trace, ids = full
    viewer = TraceViewer(trace)
    viewer.selected_command = ids[1]
    assert viewer.contents.summary["record_id"] == ids[1]
    viewer.contents.selected_command = ids[2]  # an arrow key in the panel
    assert viewer.selected_command == ids[2] == viewer.timeline.selected_command
    viewer.selected_hazard = 0  # the hazard's upload
    assert viewer.contents.selected_command == ids[3]


def test_an_image_shows_as_pictures_channel_by_channel():
    device = lnb.create_device("cpu")
    pixels = np.linspace(0, 1, 4 * 8 * 4, dtype=np.float32).reshape(4, 8, 4)
    with lnb.trace(capture="full") as trace:
        image = device.create_image(8, 4, 4, name="frame")
        image.copy_from(pixels)
        device.synchronize()
    (upload,) = trace.commands
    panel = ContentsPanel(trace, upload.id)
    (frame,) = panel.summary["buffers"]
    summary = frame["summary"]
    assert frame["name"] == "frame" and summary["shape"] == [4, 8, 4]
    assert summary["index_name"] == "pixel (x, y, channel)"
    assert list(summary["pictures"])[:3] == [
        "before (after the start) · channel 0 (R)",
        f"after #{upload.id} · channel 0 (R)",
        "difference · channel 0 (R)",
    ]
    comparison = panel.contents.buffers[0].comparison
    np.testing.assert_array_equal(comparison.actual.reshape(4, 8, 4), pixels)
    assert comparison.count == pixels.size - 1  # all but the first texel, 0.0 before and after
