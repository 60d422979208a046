"""The oracle, the random program generator and the checks of the conformance suite."""

import dataclasses
import threading

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import AnalyzedTrace, HazardKind
from luisa_nb.conformance import programs
from luisa_nb.conformance.generator import RANDOM_PROGRAMS, random_program
from luisa_nb.conformance.oracle import predict
from luisa_nb.conformance.program import (
    FINAL_SYNC,
    ArraySpec,
    Callback,
    Concurrent,
    Copy,
    Dispatch,
    Download,
    Fill,
    HostSlice,
    Program,
    Submit,
    Synchronize,
    Upload,
    View,
)
from luisa_nb.conformance.runner import ConformanceError, run_program
from luisa_nb.conformance.verify import failure_report, verify_run
from luisa_nb.recording import Status, recorder
from luisa_nb.runtime import Device
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


def _spec_program(steps, streams=("main",)):
    buffers = (ArraySpec("a", 8), ArraySpec("b", 8))
    hosts = (ArraySpec("h", 8), ArraySpec("empty", 0))
    return Program("unit", buffers, hosts, tuple(steps), streams)


def test_a_trap_fails_and_skips_the_rest_of_its_list():
    a, b = View("a", 0, 8), View("b", 0, 8)
    program = _spec_program(
        [
            Submit((Fill(a, -1.0), Dispatch("trap", (a,)), Fill(b, -2.0), Upload(b, _h(0, 8)))),
            Submit((Dispatch("trap", (View("a", 3, 3),)), Fill(b, -3.0))),
        ]
    )
    prediction = predict(program)
    assert prediction.statuses == ["ok", "failed", "skipped", "skipped", "ok", "ok"]
    assert prediction.failures == {FINAL_SYNC: ["command 1: KernelIndexError"]}
    assert prediction.expected_uploads == [None] and prediction.sent_uploads == [None]
    np.testing.assert_array_equal(prediction.buffers["a"], np.full(8, -1.0, np.float32))
    np.testing.assert_array_equal(prediction.buffers["b"], np.full(8, -3.0, np.float32))
    replay = predict(program, "as-sent", [None])
    assert replay.statuses == prediction.statuses


def _h(start, stop, shape=None, array="h"):
    return HostSlice(array, start, stop, shape)


def test_raising_callbacks_fail_at_the_next_synchronize_of_their_stream():
    program = _spec_program(
        [
            Callback("main", "plain", "exception"),
            Callback("side", "exit", "system_exit", ("h",)),
            Synchronize("side"),
            Callback("main", "interrupt", "keyboard_interrupt", ()),
            Synchronize(),
            Callback("side", "unprintable", "unprintable"),
        ],
        streams=("main", "side"),
    )
    prediction = predict(program)
    assert prediction.failures == {
        (2,): ["callback 'exit': SystemExit"],
        (4,): ["callback 'interrupt': KeyboardInterrupt", "callback 'plain': ValueError"],
        FINAL_SYNC: ["callback 'unprintable': UnprintableError"],
    }
    assert [list(o.hosts) for o in prediction.callbacks["main"]] == [["h", "empty"], []]
    assert [list(o.hosts) for o in prediction.callbacks["side"]] == [["h"], ["h", "empty"]]
    with pytest.raises(ValueError, match="raises='later' is not one of"):
        Callback("main", "bad", "later")


def test_zero_byte_commands_change_nothing():
    empty = View("a", 4, 4)
    commands = (
        Upload(empty, _h(3, 3)),
        Upload(View("b", 8, 8), _h(0, 0, (0, 4), "empty")),
        Download(empty, _h(8, 8, (2, 0))),
        Copy(empty, View("b", 0, 0)),
        Fill(empty, -5.0),
        Dispatch("scale", (empty,)),
        Dispatch("vecadd", (empty, empty, View("b", 1, 1))),
    )
    program = _spec_program([Submit(commands)])
    prediction = predict(program)
    for name in ("a", "b"):
        np.testing.assert_array_equal(prediction.buffers[name], _initial(program, name))
    np.testing.assert_array_equal(prediction.hosts["h"], _initial(program, "h"))
    assert [sent.size for sent in prediction.sent_uploads] == [0, 0]
    assert prediction.statuses == ["ok"] * len(commands) and prediction.failures == {}


def test_concurrent_branches_run_one_after_another_in_the_oracle():
    first = (Submit((Upload(View("a", 0, 8), _h(0, 8)),), "t0"), Synchronize("t0"))
    second = (Submit((Fill(View("b", 0, 8), -1.0), Dispatch("trap", (View("b", 0, 1),))), "t1"),)
    program = _spec_program(
        [Synchronize(), Concurrent((first, second)), Synchronize()], ("main", "t0", "t1")
    )
    keys = [key for key, _ in program.serial_steps()]
    assert keys == [(0,), (1, 0, 0), (1, 0, 1), (1, 1, 0), (2,)]
    assert [str(command) for command in program.commands()][1:] == [
        "fill b[0:8] = -1.0",
        "dispatch trap(b[0:1])",
    ]
    prediction = predict(program)
    assert prediction.failures == {(2,): ["command 2: KernelIndexError"]}
    assert program.interleaved_streams() == set()
    locked = _spec_program([Concurrent((first[:1], second), locked=True)], ("main", "t0", "t1"))
    assert locked.interleaved_streams() == {"t0", "t1"}
    assert "2 threads (one lock around each step):\n     thread 0: submit to t0" in locked.listing()


@pytest.fixture(scope="module")
def execute_device():
    return lnb.create_device("cpu", staging="execute")


def test_runs_keep_failures_by_synchronize_and_verify_accepts_them(execute_device):
    a = View("a", 0, 8)
    program = _spec_program(
        [
            Submit((Dispatch("trap", (a,)), Upload(a, _h(0, 8)))),
            Callback("main", "loud", "unprintable"),
            Synchronize("main"),
            Submit((Download(View("b", 0, 8), _h(0, 8)),)),
            Callback("main", "quiet"),
        ]
    )
    run = run_program(execute_device, program, timeout=30)
    assert set(run.failures) == {(2,)}
    error = run.failures[(2,)]
    assert [description for _, description, _ in error.failures] == [
        "dispatch trap[8]",
        "callback 'loud'",
    ]
    assert run.sent() == [None]
    assert verify_run(run, "execute") == []


def test_verify_names_failures_and_records_other_than_predicted(execute_device):
    program = _spec_program(
        [Submit((Dispatch("trap", (View("a", 0, 2),)), Fill(View("b", 0, 1), -1.0)))]
    )
    run = run_program(execute_device, program)
    final = run.failures.pop(FINAL_SYNC)
    run.failures[(0,)] = final
    record = next(r for r in run.trace.commands if r.id == run.command_ids[1])
    record.status = Status.OK
    problems = verify_run(run, "execute")
    assert problems[0] == (
        "the final device synchronize raised nothing; the oracle says "
        "['command 0: KernelIndexError']"
    )
    assert problems[1] == (
        "step 1: submit to main: [dispatch trap(a[0:2]), fill b[0:1] = -1.0] raised "
        "['command 0: KernelIndexError']; the oracle says nothing"
    )
    assert problems[2] == f"#{record.id} fill b[0:1] has status 'ok'; the oracle says 'skipped'"
    assert len(problems) == 3


def test_a_run_that_hangs_is_reported(execute_device, monkeypatch):
    release = threading.Event()

    def hang(device):
        release.wait()
        raise RuntimeError("released")

    monkeypatch.setattr(Device, "synchronize", hang)
    try:
        with pytest.raises(ConformanceError, match=r"did not finish within 0.2 s: a submit or"):
            run_program(execute_device, programs.copy_only(), timeout=0.2)
        assert recorder.active_recorder() is recorder.NULL_RECORDER
    finally:
        release.set()
        for thread in threading.enumerate():
            if thread.name == "conformance copy_only":
                thread.join(5)
