"""AnalyzedTrace: cached results, and the same findings after a save/load round trip."""

import numpy as np
import pytest
from helpers.findings import findings

from luisa_nb.analysis import AnalyzedTrace, HazardKind
from luisa_nb.recording import Access, CommandKind
from luisa_nb.recording.synthetic_addresses import with_synthetic_addresses


def test_load_returns_an_analyzed_trace_with_the_same_findings(seed, tmp_path):
    path = seed.save(tmp_path / "seed.lnbtrace")
    loaded = AnalyzedTrace.load(path)
    assert isinstance(loaded, AnalyzedTrace)
    assert with_synthetic_addresses(loaded.records) == with_synthetic_addresses(seed.records)
    assert findings(loaded) == findings(seed)
    for before, after in zip(seed.uploads, loaded.uploads, strict=True):
        assert before.command_id == after.command_id and before.stale == after.stale
        np.testing.assert_array_equal(before.expected, after.expected)
        np.testing.assert_array_equal(before.staged, after.staged)
        np.testing.assert_array_equal(before.differing_indices, after.differing_indices)


def test_results_are_recomputed_when_records_are_added(make_builder):
    builder = make_builder()
    x = builder.buffer("x")
    builder.stream("a")
    builder.stream("b")
    builder.command(CommandKind.FILL, [builder.whole(x, Access.WRITE)], stream=0)
    trace = builder.trace
    assert trace.hazards == []
    assert trace.hazards is not trace.hazards  # callers get copies of the cached list
    builder.command(CommandKind.FILL, [builder.whole(x, Access.WRITE)], stream=1)
    assert [h.kind for h in trace.hazards] == [HazardKind.DEVICE_RACE]


def test_upload_of_a_command_that_is_not_an_upload_raises(seed):
    with pytest.raises(KeyError, match="#2 is not an upload"):
        seed.upload(2)
