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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from luisa_nb.analysis import Hazard, HazardKind
from luisa_nb.analysis.differences import differing_bits
from luisa_nb.conformance.oracle import Observation, Prediction, predict
from luisa_nb.conformance.program import Program
from luisa_nb.conformance.runner import ProgramRun, run_program
from luisa_nb.runtime import Device
from luisa_nb.trace.naming import describe

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
    stream: str, actual: list[Observation], expected: list[Observation], what: str
) -> list[str]:
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


def compare_results(run: ProgramRun, expected: Prediction, what: str) -> list[str]:
    """One line per buffer, host array or callback observation that differs."""
    problems = []
    for name, values in expected.buffers.items():
        problems.append(_compare("buffer", name, run.buffers[name], values, what))
    for name, values in expected.hosts.items():
        problems.append(_compare("host array", name, run.hosts[name], values, what))
    for stream, observations in expected.callbacks.items():
        problems += _compare_callbacks(stream, run.callbacks.get(stream, []), observations, what)
    return [problem for problem in problems if problem]


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
            name = describe(run.trace, run.trace.command(command_id))
            problems.append(
                f"the analysis reported a stale upload, but {name} sent exactly the bytes "
                f"stream order says:{_hazard_text(hazards)}"
            )
    if staging == "execute":
        problems += compare_results(run, predict(run.program, "execute"), "stream order")
    else:
        problems += compare_results(run, replay, "stream order given the bytes uploads sent")
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
