"""The oracle, the random program generator and the checks of the conformance suite."""

import dataclasses

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import AnalyzedTrace, HazardKind
from luisa_nb.conformance import programs
from luisa_nb.conformance.generator import RANDOM_PROGRAMS, random_program
from luisa_nb.conformance.oracle import predict
from luisa_nb.conformance.program import Download, Submit, Synchronize, Upload
from luisa_nb.conformance.runner import run_program
from luisa_nb.conformance.verify import failure_report, verify_run
from luisa_nb.seed import expected_rows


def _initial(program, name):
    spec = next(s for s in (*program.buffers, *program.hosts) if s.name == name)
    return spec.initial(program.name)


def test_seed_follows_stream_order_under_execute_and_is_stale_under_submit():
    program = programs.seed()
    execute, submit = predict(program, "execute"), predict(program, "submit")
    np.testing.assert_array_equal(execute.buffers["x"], expected_rows())
    np.testing.assert_array_equal(execute.hosts["z_data"], expected_rows())
    np.testing.assert_array_equal(submit.hosts["z_data"], expected_rows())
    np.testing.assert_array_equal(submit.buffers["x"], np.full(1024, 123.0, np.float32))
    np.testing.assert_array_equal(submit.expected_uploads[1], expected_rows())
    np.testing.assert_array_equal(submit.sent_uploads[1], np.full(1024, 123.0, np.float32))


@pytest.mark.parametrize(
    ("make_program", "stale_under_submit"),
    [
        (programs.copy_only, True),
        (programs.copy_only_separate_lists, True),
        (programs.copy_only_synchronized, False),
        (programs.copy_only_stream_synchronized, False),
    ],
)
def test_copy_only_lists(make_program, stale_under_submit):
    program = make_program()
    h1, h2 = _initial(program, "h1"), _initial(program, "h2")
    np.testing.assert_array_equal(predict(program, "execute").buffers["b"], h1)
    submitted = predict(program, "submit").buffers["b"]
    np.testing.assert_array_equal(submitted, h2 if stale_under_submit else h1)


def test_as_sent_replays_the_given_bytes():
    program = programs.copy_only()
    sent = [_initial(program, "h1"), np.zeros(64, np.float32)]
    replay = predict(program, "as-sent", sent)
    np.testing.assert_array_equal(replay.buffers["b"], np.zeros(64))
    np.testing.assert_array_equal(replay.expected_uploads[1], _initial(program, "h1"))
    with pytest.raises(ValueError, match=r"sent\[1\] has 3 elements"):
        predict(program, "as-sent", [sent[0], np.zeros(3, np.float32)])
    with pytest.raises(ValueError, match="exactly when mode='as-sent'"):
        predict(program, "execute", sent)
    with pytest.raises(ValueError, match="is not an oracle mode"):
        predict(program, "later")


def test_callbacks_see_the_host_arrays_in_stream_order():
    program = programs.callbacks()
    observed = predict(program, "execute").callbacks
    assert [o.name for o in observed["main"]] == ["after the first list", "after the fill", "last"]
    assert [o.name for o in observed["side"]] == [
        "side, after the event",
        "side, after its download",
    ]
    first = observed["main"][0]
    np.testing.assert_array_equal(first.hosts["h2"], _initial(program, "h1"))
    filled = observed["main"][1].hosts["h2"]
    np.testing.assert_array_equal(filled[32:48], np.full(16, 2.5, np.float32))


def test_random_programs_are_deterministic_and_within_bounds():
    assert random_program(7) == random_program(7)
    assert random_program(7) != random_program(8)
    for index in range(RANDOM_PROGRAMS):
        program = random_program(index)
        lists = [step for step in program.steps if isinstance(step, Submit)]
        assert 2 <= len(program.buffers) <= 4 and 2 <= len(program.hosts) <= 3
        assert 1 <= len(lists) <= 3


def _overlap(first, second):
    return first.array == second.array and first.start < second.stop and second.start < first.stop


@pytest.mark.parametrize("index", range(0, RANDOM_PROGRAMS, 5))
def test_random_uploads_send_wrong_bytes_exactly_when_they_read_too_early(index):
    """In the oracle's worst case of submit staging, an upload's bytes differ from stream
    order exactly when an unsynchronized download ahead of it wrote its host memory: no
    download writes a value that memory held before, so timing and bytes agree."""
    program = random_program(index)
    prediction = predict(program, "submit")
    pending, early = [], []
    for step in program.steps:
        if isinstance(step, Synchronize):
            pending.clear()
        elif isinstance(step, Submit):
            ahead = list(pending)
            for command in step.commands:
                if isinstance(command, Upload):
                    early.append(any(_overlap(command.source, d) for d in ahead))
                elif isinstance(command, Download):
                    ahead.append(command.target)
            pending = ahead
    wrong = [
        not np.array_equal(sent, expected)
        for sent, expected in zip(prediction.sent_uploads, prediction.expected_uploads, strict=True)
    ]
    assert wrong == early


@pytest.fixture(scope="module")
def submit_device():
    return lnb.create_device("cpu", staging="submit")


def test_verify_accepts_a_correct_run(submit_device):
    run = run_program(submit_device, programs.copy_only())
    assert verify_run(run, "submit") == []


def test_verify_names_a_stale_upload_the_analysis_missed(submit_device, monkeypatch):
    run = run_program(submit_device, programs.copy_only())
    monkeypatch.setattr(AnalyzedTrace, "hazards", property(lambda self: []))
    [problem] = verify_run(run, "submit")
    assert problem.startswith(f"#{run.upload_ids[1]} upload b <- h2 went stale: 64 of 64 elements")
    assert problem.endswith("but the analysis reported no STALE_UPLOAD")


def test_verify_names_a_stale_upload_the_analysis_made_up(submit_device, monkeypatch):
    run = run_program(submit_device, programs.copy_only_synchronized())
    [hazard] = run_program(submit_device, programs.copy_only()).trace.hazards
    made_up = dataclasses.replace(hazard, command_ids=(0, run.upload_ids[1]))
    monkeypatch.setattr(AnalyzedTrace, "hazards", property(lambda self: [made_up]))
    [problem] = verify_run(run, "submit")
    assert problem.startswith(
        f"the analysis reported a stale upload, but #{run.upload_ids[1]} upload b <- h2 sent "
        "exactly the bytes stream order says:\n    STALE_UPLOAD: "
    )


def test_verify_names_the_first_differing_elements(submit_device):
    run = run_program(submit_device, programs.copy_only())
    run.buffers["b"][[3, 9]] = -1.0
    [problem] = verify_run(run, "submit")
    assert problem.startswith(
        "buffer 'b' differs from stream order given the bytes uploads sent at 2 of 64 elements "
        "(indices 3, 9): got [-1.0, -1.0], expected ["
    )
    execute = run_program(lnb.create_device("cpu", staging="execute"), programs.copy_only())
    execute.hosts["h2"][5] = 0.5
    [problem] = verify_run(execute, "execute")
    assert problem.startswith("host array 'h2' differs from stream order at 1 of 64 elements")
    report = failure_report(submit_device, execute.program, [problem])
    assert report.splitlines()[0] == (
        "conformance program 'copy_only' on backend 'cpu' (staging='submit'): 1 problem(s)"
    )
    assert report.splitlines()[-2:] == [
        "the program:",
        "  1. submit to main: [upload a[0:64] <- h1[0:64], download a[0:64] -> h2[0:64], "
        "upload b[0:64] <- h2[0:64]]",
    ]


def test_stale_hazards_of_the_copy_only_list_name_the_upload(submit_device):
    run = run_program(submit_device, programs.copy_only())
    stale = [h for h in run.trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
    assert [h.command_ids[-1] for h in stale] == [run.upload_ids[1]]
