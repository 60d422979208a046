"""Selection traits, their validation, and TraceViewer's linking, without a browser."""

from __future__ import annotations

import numpy as np
import pytest
from traitlets import TraitError

from luisa_nb.widgets import (
    CommandTableWidget,
    DiffView,
    HazardList,
    TimelineWidget,
    TraceViewer,
    show,
    trace_mimebundle,
)

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def viewer(seed):
    return TraceViewer(seed.trace)


def test_timeline_traits_hold_the_view_data(seed):
    timeline = TimelineWidget(seed.trace)
    assert isinstance(timeline.data, bytes) and len(timeline.data) >= 28 * 6
    assert timeline.summary["count"] == 6
    assert timeline.hazards[0]["command_ids"] == [seed.download, seed.upload]
    assert timeline.payload_bytes < 6144  # about 4 KB; host activity varies with timing
    assert {"data", "summary", "hazard_data", "hazard_layout", "selected_command"} <= set(
        timeline.keys
    )
    assert "hazards" not in timeline.keys  # they travel packed
    # the binary traits travel as buffers, not as JSON lists
    state = timeline.get_state()
    from ipywidgets.widgets.widget import _remove_buffers

    _, paths, buffers = _remove_buffers(state)
    assert ["data"] in paths and any(len(b) == len(timeline.data) for b in buffers)
    assert ["hazard_data"] in paths and timeline.hazard_layout["count"] == 1


def test_selecting_a_missing_record_raises_a_clear_error(seed):
    timeline = TimelineWidget(seed.trace)
    with pytest.raises(TraitError, match=r"selected_command=9999: this trace has no record #9999"):
        timeline.selected_command = 9999
    with pytest.raises(
        TraitError, match=rf"record ids run from #{min(seed.ids)} to #{max(seed.ids)}"
    ):
        timeline.selected_command = 9999
    with pytest.raises(TraitError, match="selected_command=True"):
        timeline.selected_command = True
    with pytest.raises(
        TraitError, match=r"selected_hazard=1: this trace has 1 hazard\(s\); valid indices: 0..0"
    ):
        timeline.selected_hazard = 1
    with pytest.raises(TraitError):
        timeline.selected_command = "#5"
    assert timeline.selected_command is None and timeline.selected_commands == []
    with pytest.raises(TraitError, match="no record #9999"):
        CommandTableWidget(seed.trace, selected_command=9999)
    with pytest.raises(TypeError, match="shows a luisa_nb Trace, not ndarray"):
        TimelineWidget(np.zeros(3))


def test_choosing_a_hazard_selects_both_commands(seed):
    timeline = TimelineWidget(seed.trace)
    timeline.selected_hazard = 0
    assert timeline.selected_commands == [seed.download, seed.upload]
    assert timeline.selected_command == seed.upload
    timeline.selected_command = seed.download  # inside the hazard: it stays chosen
    assert timeline.selected_hazard == 0
    timeline.selected_command = seed.dispatch  # outside: the hazard is dropped
    assert timeline.selected_hazard is None and timeline.selected_commands == [seed.dispatch]
    timeline.selected_hazard = 0
    timeline.selected_command = None
    assert timeline.selected_hazard is None and timeline.selected_commands == []


def test_the_inspector_opens_on_the_first_hazard_as_the_timeline_does(viewer, seed):
    assert viewer.selected_hazard is None, "nothing is selected"
    assert viewer.inspector.command_id == seed.upload
    assert viewer.inspector.summary["available"]


def test_viewer_links_hazard_to_commands_and_inspector(viewer, seed):
    viewer.selected_hazard = 0
    expected = [seed.download, seed.upload]
    assert viewer.selected_commands == expected
    for view in (viewer.timeline, viewer.table, viewer.hazard_list):
        assert view.selected_hazard == 0
        assert view.selected_commands == expected
    inspector = viewer.inspector
    assert inspector.command_id == seed.upload
    assert inspector.differing_indices.tolist() == list(range(1024))
    staged, wanted = inspector.comparison.actual, inspector.comparison.expected
    assert staged.tolist() == [123.0] * 1024
    assert wanted[:4].tolist() == [0.0, 1001.0, 2002.0, 3003.0]
    assert wanted[1023] == 1023 * 1001


def test_clicks_in_any_view_reach_every_view(viewer, seed):
    viewer.hazard_list.selected_hazard = 0  # as a click in the hazard list would
    assert viewer.selected_commands == [seed.download, seed.upload]
    assert viewer.table.selected_command == seed.upload
    viewer.table.selected_command = seed.first_upload  # a click on a row
    assert viewer.selected_hazard is None
    assert viewer.timeline.selected_commands == [seed.first_upload]
    assert viewer.inspector.command_id == seed.first_upload
    assert viewer.inspector.count == 0  # the first upload sent what it should
    viewer.timeline.selected_command = seed.dispatch  # a click on a bar
    assert viewer.inspector.command_id is None
    assert viewer.hazard_list.selected_commands == [seed.dispatch]
    viewer.timeline.selected_command = None  # a click on empty space
    assert viewer.selected_commands == [] and viewer.table.selected_command is None
    with pytest.raises(TraitError, match="no record #9999"):
        viewer.selected_command = 9999


def test_mime_bundles_carry_a_static_fallback(viewer, seed):
    data, _ = viewer._repr_mimebundle_()
    assert WIDGET_VIEW in data and "text/plain" in data
    assert 'data-lnb-view="timeline"' in data["text/html"]
    data, _ = trace_mimebundle(seed.trace)
    assert {WIDGET_VIEW, "text/html", "text/plain"} <= set(data)
    assert data["text/plain"].startswith("<Trace 5 commands")
    hazards = HazardList(seed.trace)._repr_mimebundle_()[0]["text/html"]
    assert "STALE_UPLOAD" in hazards and 'data-lnb-view="hazards"' in hazards
    diff = DiffView(np.zeros(3), np.ones(3))._repr_mimebundle_()[0]
    assert WIDGET_VIEW in diff and 'data-lnb-view="diff"' in diff["text/html"]


def test_show_displays_the_right_widget(seed, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    assert show(seed.trace) is None  # a cell's last line does not display it again
    assert show(np.zeros(2), np.ones(2)) is None
    assert [type(w).__name__ for w in shown] == ["TraceViewer", "DiffView"]
    with pytest.raises(TypeError, match="show\\(\\) takes a Trace"):
        show(np.zeros(2))


def test_trace_display_hook_through_ipython_formatters(seed):
    """As the lead would register it: the last expression of a cell shows the viewer."""
    from IPython.core.formatters import DisplayFormatter

    formatter = DisplayFormatter()
    formatter.mimebundle_formatter.for_type(type(seed.trace), trace_mimebundle)
    data, _ = formatter.format(seed.trace)
    assert {WIDGET_VIEW, "text/html", "text/plain"} <= set(data)
    assert "STALE_UPLOAD" in data["text/html"]


def test_show_without_ipywidgets_displays_the_static_page(seed, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ipywidgets(name, *args, **kwargs):
        if name.startswith(("ipywidgets", "anywidget", "luisa_nb.widgets.viewer")) or (
            name == "luisa_nb.widgets.diff"
        ):
            raise ImportError(f"no {name} here")
        return real_import(name, *args, **kwargs)

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setattr(builtins, "__import__", no_ipywidgets)
    assert show(seed.trace) is None
    assert show(np.zeros(2), np.ones(2), names=("a", "b")) is None
    assert 'data-lnb-view="timeline"' in shown[0].data
    assert 'data-lnb-view="diff"' in shown[1].data and "2 of 2 elements differ" in shown[1].data
