"""Analysis of a :class:`~luisa_nb.recording.Trace`, live or loaded: hazards and
expected-vs-staged bytes of uploads (docs/architecture.md §4). Reads only the trace layer,
never the runtime."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from luisa_nb.analysis.finding_groups import FindingGroup, group_findings
from luisa_nb.analysis.hazards import Hazard, HazardKind, find_hazards
from luisa_nb.analysis.replay import ReplayEngine, ReplayState
from luisa_nb.analysis.uploads import Source, UploadCheck, check_uploads, stale_uploads
from luisa_nb.analysis.vocabulary import Vocabulary, pending_note, vocabulary_of
from luisa_nb.errors import PendingCommandsWarning, RecordNotFoundError
from luisa_nb.recording import Trace
from luisa_nb.recording.naming import describe

if TYPE_CHECKING:
    import pandas
    import pyarrow

__all__ = [
    "AnalyzedTrace",
    "FindingGroup",
    "Hazard",
    "HazardKind",
    "ReplayEngine",
    "ReplayState",
    "Source",
    "UploadCheck",
    "Vocabulary",
    "check_uploads",
    "describe",
    "find_hazards",
    "group_findings",
    "pending_note",
    "stale_uploads",
    "vocabulary_of",
]


class AnalyzedTrace(Trace):
    """A trace that analyses itself: ``AnalyzedTrace.load(path).hazards`` (every finding),
    ``.findings`` (grouped by place).

    Results are cached and recomputed when records were added or the trace stopped since.
    """

    @functools.cached_property
    def _results(self) -> dict[str, tuple[tuple[tuple[int, int], int | None], Any]]:
        """Each analysis computed, by name, with the state of the trace it saw."""
        return {}

    @property
    def hazards(self) -> list[Hazard]:
        return list(self._cached("hazards", find_hazards))

    @property
    def findings(self) -> list[FindingGroup]:
        """The hazards grouped by the place in the program that causes them
        (:mod:`luisa_nb.analysis.finding_groups`); :attr:`hazards` is the flat list."""
        return list(self._cached("findings", _grouped))

    @property
    def uploads(self) -> list[UploadCheck]:
        return list(self._cached("uploads", check_uploads))

    def upload(self, command_id: int) -> UploadCheck:
        """The expected-vs-staged check of upload ``#command_id``."""
        for check in self._cached("uploads", check_uploads):
            if check.command_id == command_id:
                return check
        raise RecordNotFoundError(f"#{command_id} is not an upload with a host array in this trace")

    def findings_to_arrow(self) -> pyarrow.Table:
        """:attr:`hazards` as an Arrow table, a row each, linked to :meth:`to_arrow` by
        command id (docs/data.md); needs ``luisa_nb[data]``."""
        from luisa_nb.analysis.frames import findings_arrow

        return findings_arrow(self, self.hazards)

    def findings_to_pandas(self) -> pandas.DataFrame:
        """:meth:`findings_to_arrow` as a pandas DataFrame."""
        from luisa_nb.analysis.frames import findings_pandas

        return findings_pandas(self, self.hazards)

    def save_perfetto(self, path: str | os.PathLike[str]) -> Path:
        """Write the trace and its findings in Perfetto's protobuf format (opens in
        ui.perfetto.dev; smaller than :meth:`to_chrome_trace`); needs ``luisa_nb[data]``."""
        from luisa_nb.analysis.perfetto import save_perfetto

        return save_perfetto(self, self.hazards, path)

    def replay(self, to: int | None = None) -> ReplayState:
        """Every buffer and host array as they stood right after command ``#to`` (``None``:
        after the last); see :mod:`luisa_nb.analysis.replay`."""
        return self._cached("replay", ReplayEngine).state(to)

    def stopped_recording(self) -> None:
        """Warn (:class:`~luisa_nb.errors.PendingCommandsWarning`) when the trace ends with
        commands that were never executed, or recorded nothing at all."""
        note = pending_note(self)
        if note is not None:
            warnings.warn(note, PendingCommandsWarning, stacklevel=_outside_luisa_nb())

    def _cached(self, name: str, compute: Callable[[Trace], Any]) -> Any:
        state = (self.counts, self.metadata.stopped)
        entry = self._results.get(name)
        if entry is None or entry[0] != state:
            entry = (state, compute(self))
            self._results[name] = entry
        return entry[1]


def _grouped(trace: AnalyzedTrace) -> list[FindingGroup]:
    return group_findings(trace, trace._cached("hazards", find_hazards))


_LIBRARY = (str(Path(__file__).resolve().parents[1]), str(Path(contextlib.__file__).parent))


def _outside_luisa_nb() -> int:
    """The ``stacklevel`` of the innermost caller outside luisa_nb (and contextlib): the
    code whose trace ended."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY):
        frame, level = frame.f_back, level + 1
    return level
