"""What a case can come to, and how an exception that ended a case is judged."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from luisa_nb.errors import LuisaNbError


class Outcome(str, enum.Enum):
    """The outcome of one case, in the order of the sweep's table."""

    CLEAN = "clean"
    """A luisa_nb error was raised, or the operation completed and its oracle passed."""
    RAW = "raw"
    """Another exception type escaped to the user."""
    HANG = "hang"
    """The case did not finish within its time limit."""
    CRASH = "crash"
    """The worker process died: a signal, or an exit the case did not ask for."""
    SILENT = "silent"
    """The operation completed, but its oracle says the result is wrong."""


class OracleFailure(AssertionError):
    """Raised by a case whose operation completed with a wrong result (a silent failure)."""


@dataclass(frozen=True)
class CaseResult:
    """A case's outcome; ``detail`` is the first line of what ended it, ``seconds`` how
    long it ran."""

    key: str
    area: str
    outcome: Outcome
    detail: str
    seconds: float

    def as_json(self) -> dict[str, object]:
        return {
            "case": self.key,
            "area": self.area,
            "outcome": self.outcome.value,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
        }


def first_line(error: BaseException) -> str:
    """``TypeName: the first line of the message`` (the message's ``str`` may itself raise)."""
    try:
        text = str(error)
    except Exception as failure:
        text = f"<str() raised {type(failure).__name__}>"
    line = text.strip().splitlines()[0] if text.strip() else ""
    return f"{type(error).__name__}: {line}"[:300]


def judge(error: BaseException | None) -> tuple[Outcome, str]:
    """The outcome of a case that raised ``error`` (None: it completed and its oracle
    passed)."""
    if error is None:
        return Outcome.CLEAN, "correct"
    if isinstance(error, OracleFailure):
        return Outcome.SILENT, str(error).strip().splitlines()[0][:300]
    if isinstance(error, LuisaNbError):
        return Outcome.CLEAN, first_line(error)
    return Outcome.RAW, first_line(error)
