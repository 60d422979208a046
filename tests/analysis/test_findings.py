"""Findings grouped by the place in the program that causes them: a loop with one bug is
one finding with a count, the flat list keeps every occurrence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import luisa_nb as lnb
from luisa_nb.analysis import AnalyzedTrace, HazardKind, group_findings


def _stale_loop(steps: int, *, second_bug: bool = False) -> AnalyzedTrace:
    """``steps`` stale uploads of ``h`` into ``b`` after a download of ``a`` into ``h``,
    in one loop (staging at submit, no synchronize between); with ``second_bug``, a
    second loop doing the same into ``c`` from ``g``."""
    device = lnb.create_device("cpu", staging="submit")
    a = device.create_buffer(4, np.float32, name="a")
    b = device.create_buffer(4, np.float32, name="b")
    c = device.create_buffer(4, np.float32, name="c")
    h = np.zeros(4, np.float32)
    g = np.zeros(4, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        for _ in range(steps):
            stream.submit([a.copy_to_async(h), b.copy_from_async(h)])
        if second_bug:
            for _ in range(steps):
                stream.submit([a.copy_to_async(g), c.copy_from_async(g)])
        stream.synchronize()
    return trace


def test_a_loop_with_one_bug_is_one_finding_with_its_count():
    trace = _stale_loop(50)
    assert len(trace.hazards) == 50, "the flat list keeps every occurrence for tools"
    (group,) = trace.findings
    assert group.kind is HazardKind.STALE_UPLOAD
    assert group.count == 50
    assert group.first is trace.hazards[0] and group.last is trace.hazards[-1]
    assert group.occurrences == tuple(range(50))
    assert group.command_ids == tuple(hazard.command_ids for hazard in trace.hazards)
    assert group.place() == "download a -> h → upload b <- h"
    first, last = group.command_ids[0], group.command_ids[-1]
    assert group.occurrence_text() == (
        f"first #{first[0]} → #{first[1]}, last #{last[0]} → #{last[1]}"
    )
    assert str(group).startswith(f"STALE_UPLOAD \N{MULTIPLICATION SIGN}50 (first #{first[0]}")


def test_two_places_are_two_findings_in_order_of_first_occurrence():
    trace = _stale_loop(5, second_bug=True)
    groups = trace.findings
    assert [group.count for group in groups] == [5, 5]
    assert [group.place() for group in groups] == [
        "download a -> h → upload b <- h",
        "download a -> g → upload c <- g",
    ]
    assert groups[0].occurrences == tuple(range(5))
    assert groups[1].occurrences == tuple(range(5, 10))


def test_grouping_is_generic_over_kinds_and_saved_traces(tmp_path):
    trace = _stale_loop(3)
    loaded = AnalyzedTrace.load(trace.save(tmp_path / "loop.lnbtrace"))
    (group,) = loaded.findings
    assert group.count == 3 and group.place() == "download a -> h → upload b <- h"
    assert group_findings(trace, []) == []
    latent = replace(trace.hazards[1], kind=HazardKind.LATENT_STALE_UPLOAD)
    mixed = group_findings(trace, [trace.hazards[0], latent, trace.hazards[2]])
    assert [(g.kind, g.occurrences) for g in mixed] == [
        (HazardKind.STALE_UPLOAD, (0, 2)),
        (HazardKind.LATENT_STALE_UPLOAD, (1,)),
    ], "the same commands with another kind of finding are another finding"


def test_a_single_occurrence_names_its_commands():
    trace = _stale_loop(1)
    (group,) = trace.findings
    download, upload = group.command_ids[0]
    assert group.count == 1
    assert group.occurrence_text() == f"#{download} → #{upload}"
    assert group.to_dict()["count"] == 1
    assert group.to_dict()["first"] == trace.hazards[0].to_dict()
