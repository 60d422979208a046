"""The calls a finding's fix and a trace's notes name, in the API the trace's commands
came through (``trace.metadata.api``): luisa_nb's own (``stream.synchronize()``,
``staging='execute'``), its luisa-python frontend ``luisa_nb.luisa`` or real luisa-python
instrumented (``luisa.synchronize()``, and no staging setting: LuisaCompute has none)."""

from __future__ import annotations

from dataclasses import dataclass

from luisa_nb.recording import Trace


@dataclass(frozen=True)
class Vocabulary:
    """``synchronize``: the host wait; ``sync_advice``: the ways to wait for a download;
    ``execute``: what submits the gathered commands; ``staging_fix``: how to make uploads
    read host memory in stream order, where the API has a way (else empty)."""

    synchronize: str
    sync_advice: str
    execute: str
    staging_fix: str

    def not_executed(self, count: int) -> str:
        """``3 commands were not executed: call luisa.synchronize() or execute()``."""
        commands = "1 command was" if count == 1 else f"{count} commands were"
        return f"{commands} not executed: call {self.synchronize} or {self.execute}"


LUISA_NB = Vocabulary(
    "stream.synchronize()",
    "copy_to(..., sync=True) or stream.synchronize()",
    "stream.execute()",
    "use staging='execute'",
)
LUISA_FRONTEND = Vocabulary(
    "luisa.synchronize()",
    "copy_to(..., sync=True) or luisa.synchronize()",
    "execute()",
    "run on a device that stages at execution, e.g. luisa.init('cpu:execute')",
)
LUISA_PYTHON = Vocabulary(
    "luisa.synchronize()", "copy_to(..., sync=True) or luisa.synchronize()", "execute()", ""
)
_BY_API = {"luisa_nb": LUISA_NB, "luisa_nb.luisa": LUISA_FRONTEND, "luisa": LUISA_PYTHON}


def vocabulary_of(trace: Trace) -> Vocabulary:
    """The vocabulary of ``trace``'s API (luisa_nb's for a trace that names none)."""
    return _BY_API.get(trace.metadata.api, LUISA_NB)


def pending_note(trace: Trace) -> str | None:
    """What to tell the user about a trace that ended with commands still waiting in a
    command list (in the words of its API), or that recorded nothing; ``None`` when
    neither."""
    pending = trace.metadata.pending
    empty = trace.empty
    if not pending and not empty:
        return None
    if not pending:
        return (
            "the trace recorded no commands and no sync points: run the code that submits "
            "commands inside it"
        )
    note = vocabulary_of(trace).not_executed(len(pending))
    if empty:
        return f"the trace recorded no commands: {note} before the trace ends"
    return f"{note} before the trace ends; the trace holds the commands that ran"
