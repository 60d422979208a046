"""The reproducer: a finding's dependency slice, shrunk by running candidates on luisa_nb,
written as a program that fails while the bug is present and passes with the fix."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.analysis.reproducer import (
    Fill,
    ReproProgram,
    choose_finding,
    dependency_slice,
    shrink,
)
from luisa_nb.analysis.reproducer_text import _fill, program_text, write_reproducer
from luisa_nb.errors import ReproducerError
from luisa_nb.seed import run_seed
from luisa_nb.testing.reproducers import reproducer, reproduces_on_luisa_nb, run_text
from tests.helpers.buried import BURIED_LIST, LIST_LENGTH, buried_stale_upload

MOST_LINES = 25


@pytest.fixture(scope="module")
def seed_trace(submit_device):
    return run_seed(submit_device).trace


@pytest.fixture(scope="module")
def buried_trace(submit_device):
    return buried_stale_upload(submit_device)


def stale(trace):
    return [h for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD]


def buried_list(trace):
    first = BURIED_LIST * LIST_LENGTH
    return [command.id for command in trace.commands[first : first + LIST_LENGTH]]


def test_the_seed_reduces_to_its_download_and_upload(seed_trace):
    found = reproducer(seed_trace, stale(seed_trace)[0])
    program = found.program
    assert [step.kind for step in program.steps] == ["write", "download", "upload", "end"]
    assert program.upload == program.download + 1
    assert [r.name for r in program.resources] == ["z"]
    assert [h.name for h in program.hosts] == ["z_data"]
    # host contents and what the download brings come from the trace's captured bytes
    assert program.hosts[0].initial == Fill("full", 123.0)
    assert program.steps[0].values == Fill("arange", 0.0, 1001.0)
    assert found.lines <= MOST_LINES
    assert "np.full(1024, 123.0, np.float32)" in found.text
    assert 'luisa.init("cpu", support_gui=False)' in found.text
    assert found.sliced_steps > len(program.steps)


def test_the_program_fails_on_luisa_nb_and_passes_with_the_fix(seed_trace):
    found = reproducer(seed_trace, stale(seed_trace)[0], api="lnb")
    assert run_text(found.text) == "failed"
    assert run_text(found.fixed_text) == "passed"
    assert "stream.synchronize()  # the fix" in found.fixed_text


def test_the_same_program_passes_under_execute_staging(seed_trace):
    found = reproducer(seed_trace, stale(seed_trace)[0], api="lnb")
    assert run_text(found.text.replace("cpu:submit", "cpu:execute")) == "passed"


def test_a_stale_upload_buried_in_5000_commands_shrinks_to_a_few_lines(buried_trace):
    assert len(buried_trace.commands) == 5000
    (finding,) = buried_trace.hazards
    found = reproducer(buried_trace, finding)
    assert set(finding.command_ids) <= set(buried_list(buried_trace))
    assert [step.kind for step in found.program.steps] == ["write", "download", "upload", "end"]
    assert found.lines <= MOST_LINES
    assert reproduces_on_luisa_nb(found.program)


def test_the_slice_keeps_only_the_commands_the_upload_depends_on(buried_trace):
    (finding,) = buried_trace.hazards
    sliced = dependency_slice(buried_trace, finding)
    ids = [step.command_id for step in sliced.steps if step.command_id is not None]
    assert ids and set(ids) <= set(buried_list(buried_trace))
    assert finding.command_ids[0] in ids and finding.command_ids[1] in ids


def test_shrinking_keeps_what_the_oracle_needs_and_counts_its_runs(seed_trace):
    sliced = dependency_slice(seed_trace, stale(seed_trace)[0])
    needed = {step.command_id for step in sliced.steps if step.kind == "write"} - {None}
    assert needed  # the dispatch that wrote z before the download

    def oracle(program: ReproProgram) -> bool:
        return needed <= {step.command_id for step in program.steps}

    shrunk, runs = shrink(sliced, oracle)
    kept = {step.command_id for step in shrunk.steps} - {None}
    assert kept == needed | {shrunk.download, shrunk.upload}
    assert runs >= 3


def test_a_slice_that_does_not_reproduce_is_an_error(seed_trace):
    with pytest.raises(ReproducerError, match="does not reproduce"):
        write_reproducer(seed_trace, stale(seed_trace)[0], lambda program: False)


def test_findings_are_chosen_by_number_or_the_first_stale_upload(seed_trace):
    hazards = seed_trace.hazards
    assert choose_finding(hazards) is stale(seed_trace)[0]
    assert choose_finding(hazards, 1) is hazards[0]
    with pytest.raises(ReproducerError, match="numbered from 1"):
        choose_finding(hazards, len(hazards) + 1)


def test_other_kinds_of_findings_are_refused_with_the_kinds_it_takes(seed_trace):
    finding = stale(seed_trace)[0]
    other = type(finding)(HazardKind.DEVICE_RACE, finding.command_ids, None, None, {}, "", "")
    with pytest.raises(ReproducerError, match="STALE_UPLOAD"):
        dependency_slice(seed_trace, other)


def test_an_unknown_api_is_refused(seed_trace):
    program = dependency_slice(seed_trace, stale(seed_trace)[0])
    with pytest.raises(ReproducerError, match="'luisa' or 'lnb'"):
        program_text(program, "cuda")


def test_fills_write_what_their_text_says():
    namespace = {"np": np}
    for fill in (Fill("zeros"), Fill("full", 2.5), Fill("index"), Fill("arange", 3.0, 0.25)):
        text = _fill(fill, (4, 8), "float32")
        assert np.array_equal(eval(text, namespace), fill.values((4, 8), "float32")), text


def test_the_notebook_view_offers_the_reproducer_text(submit_device):
    history = np.zeros(64, np.float32)
    frame = submit_device.create_buffer(64, np.float32, name="frame")
    previous = submit_device.create_buffer(64, np.float32, name="previous")
    with lnb.trace() as trace:
        submit_device.default_stream.submit(
            [
                frame.copy_from_async(np.ones(64, np.float32)),
                frame.copy_to_async(history),
                previous.copy_from_async(history),
            ]
        )
        submit_device.default_stream.synchronize()
    found = trace.reproducer()
    assert found.text.startswith('"""STALE_UPLOAD')
    assert found._repr_markdown_().startswith("```python\n")
    assert "previous.copy_from(history)" in found.text


def test_a_finding_in_one_list_is_stale_and_across_lists_racy(submit_device, seed_trace):
    from luisa_nb.analysis.outcomes import finding_outcome, trace_outcome

    same_list = finding_outcome(seed_trace, stale(seed_trace)[0])
    assert same_list.outcome == "stale"
    assert "stale on every backend that stages at submit" in same_list.reason
    source = submit_device.create_buffer(64, np.float32)
    target = submit_device.create_buffer(64, np.float32)
    host = np.zeros(64, np.float32)
    stream = submit_device.create_stream()
    with lnb.trace() as trace:
        stream.submit([source.copy_from_async(np.ones(64, np.float32)), source.copy_to_async(host)])
        stream.submit([target.copy_from_async(host)])
        stream.synchronize()
    assert len(trace.hazards) == 1
    across = trace_outcome(trace, trace.hazards)
    assert across.outcome == "racy"
    assert across.reason.startswith("racy: depends on whether list")
    assert trace_outcome(trace, []).outcome == "correct"


def random_findings(submit_device, count):
    from luisa_nb.conformance.generator import random_program
    from luisa_nb.conformance.runner import run_program

    for index in range(count):
        trace = run_program(submit_device, random_program(index), traced=True).trace
        yield from ((trace, finding) for finding in stale(trace))


def test_every_stale_upload_of_random_programs_gets_a_reproducer(submit_device):
    """Views, slices, reshaped host arrays and several lists: each reproducer fails on
    luisa_nb, passes with the fix, and reads no buffer that nothing wrote."""
    found = [reproducer(trace, finding) for trace, finding in random_findings(submit_device, 60)]
    assert len(found) > 30
    for each in found:
        assert each.program.well_defined()
        assert reproduces_on_luisa_nb(each.program)
        assert each.lines <= MOST_LINES


def test_a_download_in_an_earlier_list_shrinks_to_one_list(submit_device):
    source = submit_device.create_buffer(64, np.float32, name="source")
    target = submit_device.create_buffer(64, np.float32, name="target")
    host = np.zeros(64, np.float32)
    stream = submit_device.default_stream
    with lnb.trace() as trace:
        stream.submit([source.copy_from_async(np.ones(64, np.float32))])
        stream.submit([source.copy_to_async(host)])
        stream.submit([target.copy_from_async(host)])
        stream.synchronize()
    (finding,) = trace.hazards
    sliced = dependency_slice(trace, finding)
    assert [step.kind for step in sliced.steps].count("end") == 3
    found = trace.reproducer(finding)
    assert [step.kind for step in found.program.steps].count("end") == 1
    assert "luisa.execute()" not in found.text


def test_a_download_of_a_buffer_nothing_wrote_is_not_well_defined(seed_trace):
    program = dependency_slice(seed_trace, stale(seed_trace)[0])
    assert program.well_defined()
    download = next(i for i, step in enumerate(program.steps) if step.kind == "download")
    assert not program.without(set(range(download))).well_defined()


def test_to_dict_carries_what_a_view_shows(seed_trace):
    import json

    found = reproducer(seed_trace, stale(seed_trace)[0])
    data = json.loads(json.dumps(found.to_dict()))
    assert data["kind"] == "STALE_UPLOAD"
    assert data["command_ids"] == [found.program.download, found.program.upload]
    assert data["text"] == found.text and data["lines"] == found.lines
    assert data["device"] == "cpu:submit"
