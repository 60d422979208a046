"""Checking a run against the oracle and against the analysis.

Under ``staging="execute"`` every upload must send what stream order says, and every
buffer, host array and callback observation must equal the oracle's (mode
``"execute"``), bit for bit.

Under ``staging="submit"`` uploads may go stale, but the analysis must say exactly which:

1. the oracle replays the program with each upload sending the bytes the trace says it
   sent (mode ``"as-sent"``); an upload *went stale* when those bytes differ from what
   stream order, given everything before it, says it should send;
2. the uploads named by ``STALE_UPLOAD`` hazards must be exactly the uploads that went
   stale, no more and no fewer;
3. the final buffers, host arrays and callback observations must equal the replay's, so
   every difference from the ``"execute"`` oracle is explained by stale uploads.

Under both policies:

4. each synchronize raises :class:`~luisa_nb.errors.CommandFailedError` exactly when the
   oracle says, naming exactly the failed commands and callbacks it predicts, each with
   the type of exception it raised and each named in the message;
5. every command has one trace record, with the status the oracle predicts (``ok``,
   ``failed`` or ``skipped``); one that ran has its times, and its host read or write;
   every callback's record says whether it raised, and what; no sync point is left
   pending;
6. the analysis reports no ``DEVICE_RACE`` and no ``HOST_WRITE_IN_FLIGHT``: programs
   order every conflicting access and the host writes no array while it is uploaded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from luisa_nb.analysis import Hazard, HazardKind
from luisa_nb.analysis.differences import differing_bits
from luisa_nb.conformance.oracle import (
    Observation,
    Prediction,
    command_description,
    failure_label,
    predict,
)
from luisa_nb.conformance.program import (
    CALLBACK_ERRORS,
    FINAL_SYNC,
    Callback,
    Concurrent,
    Program,
    SyncKey,
)
from luisa_nb.conformance.runner import ProgramRun, run_program
from luisa_nb.errors import CommandFailedError
from luisa_nb.recording import CommandKind, Status, SyncKind
from luisa_nb.recording.naming import describe
from luisa_nb.runtime import Device

UNEXPECTED_HAZARDS = (HazardKind.DEVICE_RACE, HazardKind.HOST_WRITE_IN_FLIGHT)
"""Hazards no conformance program has (see rule 6)."""

SHOWN = 6
"""How many differing elements a message shows."""


@dataclass
class StaleUpload:
    """Upload ``index`` (issue order), command ``command_id``, sent bytes other than
    stream order says at element indices ``differing``."""

    index: int
    command_id: int
    differing: np.ndarray
    sent: np.ndarray
    expected: np.ndarray


def _differing(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element indices where the bits differ (so NaNs with equal bits are equal)."""
    if actual.size != expected.size:
        return np.arange(max(actual.size, expected.size))
    return differing_bits(actual, expected, actual.dtype.itemsize)


def stale_uploads(run: ProgramRun, replay: Prediction) -> list[StaleUpload]:
    """The uploads whose sent bytes differ from what stream order says they should send."""
    stale = []
    for index, command_id in enumerate(run.upload_ids):
        sent, expected = replay.sent_uploads[index], replay.expected_uploads[index]
        if expected is None:
            continue
        differing = _differing(sent, expected)
        if differing.size:
            stale.append(StaleUpload(index, command_id, differing, sent, expected))
    return stale


def _values(values: np.ndarray, indices: np.ndarray) -> str:
    return "[" + ", ".join(str(value) for value in values[indices[:SHOWN]]) + "]"


def _indices(indices: np.ndarray) -> str:
    shown = ", ".join(str(int(i)) for i in indices[:SHOWN])
    return shown + (", ..." if indices.size > SHOWN else "")


def _stale_text(run: ProgramRun, stale: StaleUpload) -> str:
    name = describe(run.trace, run.trace.command(stale.command_id))
    indices = stale.differing
    return (
        f"{name} went stale: {indices.size} of {stale.sent.size} elements differ from what "
        f"stream order says it sends (indices {_indices(indices)}: sent "
        f"{_values(stale.sent, indices)}, expected {_values(stale.expected, indices)})"
    )


def _hazard_text(hazards: list[Hazard]) -> str:
    return "".join(
        f"\n    {hazard.kind.value}: {hazard.message}\n    fix: {hazard.fix}" for hazard in hazards
    )


def _compare(kind: str, name: str, actual: np.ndarray, expected: np.ndarray, what: str) -> str:
    indices = _differing(actual, expected)
    if not indices.size:
        return ""
    actual, expected = actual.reshape(-1), expected.reshape(-1)
    return (
        f"{kind} {name!r} differs from {what} at {indices.size} of {expected.size} elements "
        f"(indices {_indices(indices)}): got {_values(actual, indices)}, expected "
        f"{_values(expected, indices)}"
    )


def _compare_callbacks(
    stream: str, actual: list[Observation], expected: list[Observation], what: str, ordered: bool
) -> list[str]:
    """Observations in order; by name where threads interleave the callbacks (not
    ``ordered``)."""
    if not ordered:
        actual = sorted(actual, key=lambda o: o.name)
        expected = sorted(expected, key=lambda o: o.name)
    names, wanted = [o.name for o in actual], [o.name for o in expected]
    if names != wanted:
        return [f"callbacks on {stream} ran as {names}; {what} says {wanted}"]
    problems = []
    for seen, predicted in zip(actual, expected, strict=True):
        for host, values in predicted.hosts.items():
            text = _compare("host array", host, seen.hosts[host], values, what)
            if text:
                problems.append(f"callback {seen.name!r} on {stream} saw {text}")
    return problems


def compare_arrays(
    buffers: dict[str, np.ndarray], hosts: dict[str, np.ndarray], expected: Prediction, what: str
) -> list[str]:
    """One line per buffer or host array whose bits differ from ``expected``'s."""
    problems = [
        _compare("buffer", name, buffers[name], values, what)
        for name, values in expected.buffers.items()
    ]
    problems += [
        _compare("host array", name, hosts[name], values, what)
        for name, values in expected.hosts.items()
    ]
    return [problem for problem in problems if problem]


def compare_results(run: ProgramRun, expected: Prediction, what: str) -> list[str]:
    """One line per buffer, host array or callback observation that differs."""
    problems = compare_arrays(run.buffers, run.hosts, expected, what)
    interleaved = run.program.interleaved_streams()
    for stream, observations in expected.callbacks.items():
        actual = run.callbacks.get(stream, [])
        problems += _compare_callbacks(
            stream, actual, observations, what, stream not in interleaved
        )
    return [problem for problem in problems if problem]


def failure_labels(run: ProgramRun, error: CommandFailedError) -> list[str]:
    """The failures of ``error`` as the oracle labels them, sorted."""
    ordinals = {command_id: ordinal for ordinal, command_id in enumerate(run.runtime_ids)}
    labels = []
    for item_id, description, exception in error.failures:
        what = command_description(ordinals[item_id]) if item_id in ordinals else description
        labels.append(failure_label(what, type(exception).__name__))
    return sorted(labels)


def _sync_name(program: Program, key: SyncKey) -> str:
    if key == FINAL_SYNC:
        return "the final device synchronize"
    step = program.steps[key[0]]
    if isinstance(step, Concurrent):
        branch_step = step.branches[key[1]][key[2]]
        return f"step {key[0] + 1}, thread {key[1]}: {branch_step}"
    return f"step {key[0] + 1}: {step}"


def compare_failures(run: ProgramRun, expected: Prediction) -> list[str]:
    """One line per synchronize that raised other than the oracle says (rule 4)."""
    problems = []
    for key in sorted({*expected.failures, *run.failures}):
        wanted = expected.failures.get(key, [])
        error = run.failures.get(key)
        got = [] if error is None else failure_labels(run, error)
        where = _sync_name(run.program, key)
        if got != wanted:
            problems.append(
                f"{where} raised {got or 'nothing'}; the oracle says {wanted or 'nothing'}"
            )
        if error is None:
            continue
        text = str(error)
        unnamed = [
            f"#{item_id} ({description})"
            for item_id, description, _ in error.failures
            if f"#{item_id} ({description})" not in text
        ]
        if unnamed:
            problems.append(f"{where}: the error does not name {unnamed}: {text!r}")
    return problems


def _callback_outcomes(program: Program) -> dict[str, list[tuple[str, str]]]:
    """Per stream, the sorted (status, exception type) of its callbacks' records."""
    outcomes: dict[str, list[tuple[str, str]]] = {stream: [] for stream in program.streams}
    for _, step in program.serial_steps():
        if isinstance(step, Callback):
            raises = step.raises
            outcome = ("ok", "") if raises is None else ("failed", CALLBACK_ERRORS[raises].__name__)
            outcomes[step.stream].append(outcome)
    return {stream: sorted(found) for stream, found in outcomes.items()}


def check_records(run: ProgramRun, expected: Prediction) -> list[str]:
    """Every way the trace's records differ from what the program did (rule 5)."""
    trace = run.trace
    records = {record.id: record for record in trace.commands}
    problems = []
    extra = sorted(set(records) - set(run.command_ids))
    if extra:
        problems.append(f"the trace holds records of commands the program did not issue: {extra}")
    for ordinal, (command_id, status) in enumerate(
        zip(run.command_ids, expected.statuses, strict=True)
    ):
        record = records.get(command_id)
        if record is None:
            problems.append(f"command {ordinal} (#{command_id}) has no record in the trace")
            continue
        name = describe(trace, record)
        if record.status.value != status:
            problems.append(
                f"{name} has status {record.status.value!r}; the oracle says {status!r}"
            )
        elif status == "ok":
            missing = [time for time in ("started", "finished") if getattr(record, time) is None]
            if record.kind is CommandKind.UPLOAD and record.host_read is None:
                missing.append("host_read")
            if record.kind is CommandKind.DOWNLOAD and record.host_write is None:
                missing.append("host_write")
            if missing:
                problems.append(f"{name} ran, but its record has no {', '.join(missing)}")
        elif status == "failed" and not record.error:
            problems.append(f"{name} failed, but its record has no error")
    streams = {stream_id: name for name, stream_id in run.stream_ids.items()}
    callbacks: dict[str, list[tuple[str, str]]] = {name: [] for name in run.program.streams}
    for sync in trace.syncs:
        if sync.status is Status.PENDING:
            problems.append(f"{describe(trace, sync)} never completed")
        elif sync.kind is SyncKind.CALLBACK and sync.stream in streams:
            error = (sync.error or "").split(":", 1)[0]
            callbacks[streams[sync.stream]].append((sync.status.value, error))
        elif sync.status is not Status.OK:
            problems.append(f"{describe(trace, sync)} has status {sync.status.value!r}")
    for stream, wanted in _callback_outcomes(run.program).items():
        got = sorted(callbacks[stream])
        if got != wanted:
            problems.append(
                f"the callback records of {stream} say (status, error) {got}; the program's "
                f"callbacks give {wanted}"
            )
    return problems


def unexpected_hazards(run: ProgramRun) -> list[str]:
    """Hazards the program cannot have (rule 6), in words."""
    return [
        f"the analysis reported {hazard.kind.value}, which the program cannot have:"
        f"{_hazard_text([hazard])}"
        for hazard in run.trace.hazards
        if hazard.kind in UNEXPECTED_HAZARDS
    ]


def verify_run(run: ProgramRun, staging: str) -> list[str]:
    """Every way ``run`` breaks the rules of the module docstring, in words."""
    replay = predict(run.program, "as-sent", run.sent())
    stale = stale_uploads(run, replay)
    reported: dict[int, list[Hazard]] = {}
    for hazard in run.trace.hazards:
        if hazard.kind is HazardKind.STALE_UPLOAD:
            reported.setdefault(hazard.command_ids[-1], []).append(hazard)
    problems = []
    for upload in stale:
        hazards = reported.get(upload.command_id, [])
        analysis = _hazard_text(hazards) or "\n    (the analysis reported no STALE_UPLOAD for it)"
        if staging == "execute":
            problems.append(
                f"{_stale_text(run, upload)}, under staging='execute' where every upload must "
                f"send what stream order says; the analysis says:{analysis}"
            )
        elif not hazards:
            problems.append(
                f"{_stale_text(run, upload)}, but the analysis reported no STALE_UPLOAD"
            )
    stale_ids = {upload.command_id for upload in stale}
    for command_id, hazards in reported.items():
        if command_id not in stale_ids:
            record = run.trace.command(command_id)
            name = describe(run.trace, record)
            sent = (
                "was skipped and sent nothing"
                if record.status is Status.SKIPPED
                else "sent exactly the bytes stream order says"
            )
            problems.append(
                f"the analysis reported a stale upload, but {name} {sent}:{_hazard_text(hazards)}"
            )
    if staging == "execute":
        problems += compare_results(run, predict(run.program, "execute"), "stream order")
    else:
        problems += compare_results(run, replay, "stream order given the bytes uploads sent")
    problems += compare_failures(run, replay)
    problems += check_records(run, replay)
    problems += unexpected_hazards(run)
    return problems


def failure_report(device: Device, program: Program, problems: list[str]) -> str:
    """The message of a failed conformance check."""
    lines = [
        f"conformance program {program.name!r} on backend {device.name!r} "
        f"(staging={device.staging!r}): {len(problems)} problem(s)",
        *(f"- {problem}" for problem in problems),
        "the program:",
        program.listing(),
    ]
    return "\n".join(lines)


def check_program(device: Device, program: Program) -> str | None:
    """Run ``program`` on ``device`` and verify it; the failure message, or ``None``."""
    run = run_program(device, program)
    problems = verify_run(run, device.staging)
    return failure_report(device, program, problems) if problems else None
