"""What the IPython extension remembers: the last trace, and every hook it installed so
that ``%unload_ext`` can remove exactly those.

Importing this module does not import IPython, so ``lnb.last_trace()`` costs nothing
where no notebook is involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.errors import TraceError

if TYPE_CHECKING:
    from luisa_nb.analysis.comparison import Comparison


@dataclass
class InstalledHooks:
    """The hooks one ``%load_ext`` installed into one shell.

    ``magics`` maps ``"line"``/``"cell"`` to the magic names registered by
    ``magics_instance``; ``formatters`` lists ``(formatter, type,
    previous)``: the display formatter, the type registered on it, and what was registered
    for that type before (restored on unload).
    """

    shell: Any
    magics: dict[str, list[str]] = field(default_factory=dict)
    magics_instance: Any = None
    formatters: list[tuple[Any, type, Any]] = field(default_factory=list)


class ExtensionState:
    """The extension's state for this Python process."""

    def __init__(self) -> None:
        self.last_trace: AnalyzedTrace | None = None
        self.real_luisa: str | None = None
        """The backend of real luisa-python that ``%%luisa_trace`` cells run on, when
        ``%luisa_device luisa:BACKEND`` chose one."""
        self.last_comparison: Comparison | None = None
        self.hooks: InstalledHooks | None = None

    @property
    def loaded(self) -> bool:
        return self.hooks is not None


STATE = ExtensionState()


def last_trace() -> AnalyzedTrace:
    """The trace of the last cell run under ``%%luisa_trace`` in this session."""
    if STATE.last_trace is None:
        raise TraceError(
            "no trace yet: run a cell under %%luisa_trace (after %load_ext luisa_nb), or "
            "record one with `with lnb.trace() as t:`"
        )
    return STATE.last_trace
