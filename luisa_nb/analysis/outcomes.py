"""What a stale-upload finding does on a runtime that stages uploads at submit, as real
luisa-python shows it over repeated runs: ``stale`` every time, ``racy`` (timing decides),
or ``correct``; with the reason.

LuisaCompute's CPU backend copies every upload of a command list into staging memory when
the list is submitted, on the submitting thread, and runs the list later on one worker
thread per stream. So an upload that reads host memory a download *of the same list*
writes is stale on every run. When the download is in an earlier list, with no host
synchronize between, the upload is correct exactly when the worker has run that download
before the upload's list is submitted: a race between the host thread and the worker. Under
``staging="execute"`` both are correct.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from luisa_nb.analysis.hazards import Hazard, HazardKind
from luisa_nb.recording import Trace

STALE, RACY, CORRECT = "stale", "racy", "correct"
_ORDER = {CORRECT: 0, RACY: 1, STALE: 2}


@dataclass(frozen=True)
class StagingOutcome:
    """``outcome`` is ``stale``, ``racy`` or ``correct`` under submit staging."""

    outcome: str
    reason: str

    def __str__(self) -> str:
        return f"{self.outcome}: {self.reason}"


def finding_outcome(trace: Trace, finding: Hazard) -> StagingOutcome:
    """The outcome of one ``STALE_UPLOAD`` or ``LATENT_STALE_UPLOAD`` finding under
    submit staging; other findings are about something else, and ``correct`` here."""
    if finding.kind not in (HazardKind.STALE_UPLOAD, HazardKind.LATENT_STALE_UPLOAD):
        return StagingOutcome(CORRECT, f"a {finding.kind.value} finding is not a staging race")
    download, upload = (trace.command(command_id) for command_id in finding.command_ids)
    if download.stream == upload.stream and download.submission == upload.submission:
        return StagingOutcome(
            STALE,
            f"stale on every backend that stages at submit: #{upload.id} reads host memory "
            f"when list {upload.submission} is submitted, before #{download.id} of the same "
            "list has run",
        )
    return StagingOutcome(
        RACY,
        f"racy: depends on whether list {download.submission} (with #{download.id}) has "
        f"finished before list {upload.submission} (with #{upload.id}) is submitted",
    )


def trace_outcome(trace: Trace, hazards: Sequence[Hazard]) -> StagingOutcome:
    """The worst outcome of ``hazards`` (``stale`` over ``racy`` over ``correct``)."""
    outcomes = [finding_outcome(trace, hazard) for hazard in hazards]
    racing = [outcome for outcome in outcomes if outcome.outcome != CORRECT]
    if not racing:
        return StagingOutcome(CORRECT, "no upload reads host memory a pending download writes")
    return max(racing, key=lambda outcome: _ORDER[outcome.outcome])
