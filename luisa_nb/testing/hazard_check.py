"""The trace a test records, the ``luisa_no_hazards`` check on it, and saving it."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from luisa_nb.analysis import AnalyzedTrace, Hazard, HazardKind
from luisa_nb.errors import ConfigurationError
from luisa_nb.recording import recorder
from luisa_nb.runtime.real_luisa import start_real_luisa

TRACE_FILE_NAME = "luisa-trace.lnbtrace"


class TracedTest:
    """A trace (``capture="full"``) recording while one test runs; ``directory()`` makes
    the folder to save it in when the test fails."""

    def __init__(self, directory: Callable[[], Path], real_luisa: str | None = None) -> None:
        self.directory = directory
        self.trace = AnalyzedTrace(capture="full")
        self.recording = False
        self.saved: Path | None = None
        self.namespace: dict[str, object] = {}
        self.real_luisa = real_luisa
        """The backend of real luisa-python (instrumented) whose commands it records."""
        self._luisa: Any = None

    def start(self) -> None:
        if self.real_luisa is not None:
            self._luisa = start_real_luisa(self.real_luisa)
        recorder.start(self.trace)
        self.recording = True

    def stop(self) -> None:
        """Stop recording (after synchronizing real luisa-python, so that the commands the
        test left in its list are recorded); name host arrays and buffers after the test's
        variables."""
        if self.recording:
            try:
                if self._luisa is not None:
                    self._luisa.synchronize()
            finally:
                recorder.stop(self.trace, self.namespace)
                self.recording = False

    def save(self) -> Path:
        """Write the trace into a new directory from ``directory()``; returns its path."""
        self.stop()
        self.saved = self.trace.save(Path(self.directory()) / TRACE_FILE_NAME)
        return self.saved


@contextmanager
def locals_at_return(function: Callable[..., Any]) -> Iterator[dict[str, object]]:
    """Collect the local variables of ``function``, and of the functions of its source
    file that it calls, as they return (on this thread, in the block), so that a trace
    can name host arrays after them; ``function``'s own names win. Does nothing while a
    profiler is installed."""
    found: dict[str, object] = {}
    code = getattr(inspect.unwrap(function), "__code__", None)
    if code is None or sys.getprofile() is not None:
        yield found
        return
    helpers: dict[str, object] = {}
    own: dict[str, object] = {}

    def profile(frame: FrameType, event: str, argument: object) -> None:
        if event == "return" and frame.f_code.co_filename == code.co_filename:
            (own if frame.f_code is code else helpers).update(frame.f_locals)

    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(None)
        found.update(helpers)
        found.update(own)


def hazard_kinds(args: Iterable[object], kinds: object = None) -> frozenset[HazardKind] | None:
    """The kinds a ``luisa_no_hazards`` marker names (positionally or as ``kinds=``);
    ``None`` when it names none, meaning every kind."""
    named = list(args)
    if kinds is not None:
        named += [kinds] if isinstance(kinds, (str, HazardKind)) else list(kinds)
    if not named:
        return None
    found = set()
    for kind in named:
        try:
            found.add(HazardKind(kind.upper() if isinstance(kind, str) else kind))
        except ValueError:
            choices = ", ".join(k.value for k in HazardKind)
            raise ConfigurationError(
                f"luisa_no_hazards: {kind!r} is not a hazard kind; use some of {choices}"
            ) from None
    return frozenset(found)


def unwanted_hazards(trace: AnalyzedTrace, kinds: frozenset[HazardKind] | None) -> list[Hazard]:
    return [h for h in trace.hazards if kinds is None or h.kind in kinds]


def hazard_report(hazards: list[Hazard], kinds: frozenset[HazardKind] | None) -> str:
    """The failure message: every hazard in words, with its fix."""
    scope = "" if kinds is None else f" of kind {', '.join(sorted(k.value for k in kinds))}"
    count = f"{len(hazards)} hazard{'s' if len(hazards) != 1 else ''}"
    lines = [f"luisa_no_hazards: the trace of this test has {count}{scope}:"]
    lines += [str(hazard) for hazard in hazards]
    return "\n".join(lines)
