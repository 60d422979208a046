"""DiffView and StagingInspector without a browser: statistics, heatmap, paging."""

from __future__ import annotations

import json

import numpy as np
import pytest
from traitlets import TraitError

from luisa_nb.views.array_diff import ArrayDiff
from luisa_nb.widgets import DiffView, StagingInspector


def values(raw: bytes, dtype: str) -> list:
    return np.frombuffer(raw, dtype).tolist()


def test_one_dimensional_statistics():
    expected = np.arange(10, dtype=np.float32)
    actual = expected.copy()
    actual[[2, 7]] = [2.5, 70.0]
    view = DiffView(expected, actual)
    assert view.count == 2
    assert view.first_indices == [[2], [7]]
    assert view.differing_indices.tolist() == [2, 7]
    assert view.max_abs_error == pytest.approx(63.0)
    assert view.max_rel_error == pytest.approx(9.0)  # |70 - 7| / 7
    summary = view.summary
    assert summary["errors"] == {
        "max_abs": 63.0,
        "max_abs_index": [7],
        "max_rel": 9.0,
        "max_rel_index": [7],
    }
    assert summary["shape"] == [10] and summary["dtypes"] == ["float32", "float32"]
    json.dumps(summary, allow_nan=False)


def test_two_dimensional_statistics_and_heatmap():
    expected = np.zeros((4, 6), np.float64)
    actual = expected.copy()
    actual[1, 2] = 0.5
    actual[3, 5] = -2.0
    view = DiffView(expected, actual, names=("want", "got"))
    assert view.count == 2
    assert view.first_indices == [[1, 2], [3, 5]]
    assert view.max_abs_error == 2.0
    assert view.max_rel_error == float("inf")  # expected is 0 there
    assert view.summary["errors"]["max_rel"] == "inf"  # JSON has no inf
    assert view.summary["names"] == ["want", "got"]
    assert view.summary["heatmap"] == {"rows": 4, "columns": 6, "grid_rows": 4, "grid_columns": 6}
    cells = np.frombuffer(view.heatmap, np.uint8).reshape(4, 6)
    assert set(zip(*np.nonzero(cells), strict=True)) == {(1, 2), (3, 5)}
    assert cells[3, 5] > cells[1, 2]  # larger difference, darker cell


def test_large_heatmap_is_pooled():
    expected = np.zeros((1000, 2000), np.float32)
    actual = expected.copy()
    actual[999, 1999] = 1.0
    comparison = ArrayDiff(expected, actual)
    grid = comparison.heatmap()
    assert grid.shape == (128, 512)
    assert np.count_nonzero(grid) == 1 and grid[-1, -1] > 0


def test_nan_equals_nan_and_nonfinite_errors():
    expected = np.array([np.nan, 1.0, np.inf, 4.0])
    actual = np.array([np.nan, np.nan, np.inf, 4.0])
    view = DiffView(expected, actual)
    assert view.differing_indices.tolist() == [1]
    assert view.max_abs_error == float("inf")


def test_integers_bools_and_buffers():
    class FakeBuffer:  # anything with .numpy(), like a device buffer
        def numpy(self):
            return np.array([1, 2, 3], np.int64)

    view = DiffView(FakeBuffer(), [1, 5, 3])
    assert view.count == 1 and view.max_abs_error == 3.0
    assert view.summary["transport"] == ["i8", "i8"]
    flags = DiffView(np.array([True, False]), np.array([True, True]))
    assert flags.count == 1 and flags.summary["transport"] == ["u1", "u1"]


def test_clear_errors_for_bad_inputs():
    with pytest.raises(ValueError, match=r"expected has shape \(3,\) and actual has shape \(4,\)"):
        DiffView(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="complex"):
        DiffView(np.zeros(3, complex), np.zeros(3, complex))
    with pytest.raises(ValueError, match="page_size=0"):
        DiffView(np.zeros(3), np.zeros(3), page_size=0)


def test_pages_of_all_and_of_differing_elements():
    expected = np.arange(1000, dtype=np.float32)
    actual = expected.copy()
    actual[500:] += 1
    view = DiffView(expected, actual, page_size=100)
    assert view.summary["pages"] == {"all": 10, "differing": 5}
    message, buffers = view.page_message({"type": "page", "mode": "all", "page": 5, "request": 7})
    assert message == {
        "type": "page",
        "mode": "all",
        "page": 5,
        "pages": 10,
        "count": 100,
        "request": 7,
    }
    assert values(buffers[0], "<f8") == list(range(500, 600))
    assert values(buffers[1], "<f4") == list(range(500, 600))
    assert values(buffers[2], "<f4") == list(range(501, 601))
    message, buffers = view.page_message({"type": "page", "mode": "differing", "page": 4})
    assert message["count"] == 100 and values(buffers[0], "<f8")[-1] == 999
    message, buffers = view.page_message({"type": "page", "mode": "all", "page": 10, "request": 1})
    assert message["type"] == "error" and "page 10" in message["message"] and buffers == []
    message, _ = view.page_message({"type": "page", "mode": "sideways", "page": 0})
    assert message["type"] == "error" and "sideways" in message["message"]


def test_page_requests_are_answered_over_the_comm(monkeypatch):
    view = DiffView(np.zeros(4, np.float32), np.ones(4, np.float32))
    sent = []
    monkeypatch.setattr(view, "send", lambda content, buffers=None: sent.append((content, buffers)))
    view._handle_custom_msg({"type": "page", "mode": "all", "page": 0, "request": 3}, [])
    ((content, buffers),) = sent
    assert content["type"] == "page" and content["request"] == 3
    assert values(buffers[2], "<f4") == [1.0] * 4
    view._handle_custom_msg({"type": "something else"}, [])
    assert len(sent) == 1


def test_inspector_of_the_stale_upload(seed):
    inspector = StagingInspector(seed.trace, seed.upload)
    assert inspector.count == 1024
    assert inspector.differing_indices.tolist() == list(range(1024))
    assert inspector.summary["names"] == ["expected", "staged"]
    title = f"#{seed.upload} upload z <- z_data: staged bytes against stream order"
    assert inspector.summary["title"] == title
    assert inspector.summary["shape"] == [1024]
    assert inspector.check.stale
    message, buffers = inspector.page_message({"type": "page", "mode": "all", "page": 0})
    assert values(buffers[1], "<f4")[:4] == [0.0, 1001.0, 2002.0, 3003.0]
    assert values(buffers[2], "<f4")[:4] == [123.0] * 4
    assert message["pages"] == 4


def test_inspector_validates_the_upload(seed, execute_seed):
    inspector = StagingInspector(seed.trace)
    assert inspector.summary["available"] is False and inspector.count == 0
    dispatch = rf"#{seed.dispatch} dispatch vecadd\(z, x, y\) \[1024\] is not an upload"
    with pytest.raises(TraitError, match=dispatch):
        inspector.command_id = seed.dispatch
    uploads = f"uploads in this trace: #{seed.first_upload}, #{seed.upload}"
    with pytest.raises(TraitError, match=f"no command #9999; {uploads}"):
        inspector.command_id = 9999
    fine = StagingInspector(execute_seed.trace, execute_seed.upload)
    assert fine.count == 0 and fine.summary["errors"] is None
    assert fine.summary["available"] is True


def test_update_compares_new_arrays():
    view = DiffView(np.zeros(3), np.zeros(3), names=("before", "after"), title="t")
    assert view.count == 0 and view.summary["errors"] is None
    view.update(np.zeros(3), np.array([0.0, 1.0, 0.0]))
    assert view.count == 1 and view.summary["names"] == ["before", "after"]
    assert view.summary["title"] == "t" and view.first_indices == [[1]]


def test_a_stale_upload_with_equal_bytes_is_stale_in_every_view():
    """Read before the download wrote, but the old bytes equal the new: the hazard list,
    the inspector and the report agree that the upload is stale."""
    import luisa_nb as lnb
    from luisa_nb.analysis import HazardKind
    from luisa_nb.views.timeline import Analysis, build_timeline
    from luisa_nb.widgets.pages import trace_page

    device = lnb.create_device("cpu", staging="submit")
    first = np.arange(256, dtype=np.float32)
    second = first.copy()
    a = device.create_buffer(256, np.float32)
    b = device.create_buffer(256, np.float32)
    with lnb.trace() as trace:
        stream = device.default_stream
        stream.submit(
            [a.copy_from_async(first), a.copy_to_async(second), b.copy_from_async(second)]
        )
        stream.synchronize()
    upload = trace.commands[-1].id
    analysis = Analysis.of(trace)
    assert [h.kind for h in analysis.hazards] == [HazardKind.STALE_UPLOAD]
    assert not analysis.uploads[upload].stale  # the bytes are equal ...
    assert upload in analysis.stale  # ... yet it read host memory too early
    assert build_timeline(trace, analysis).meta["stale_uploads"] == [upload]
    inspector = StagingInspector(trace, upload)
    assert inspector.count == 0
    assert inspector.summary["verdict"].startswith("stale upload with equal bytes")
    page = trace_page(trace, analysis)
    assert "Stale uploads (1)" in page and "right by luck" in page
    device.close()
