"""Selection shared by the trace views: one command, or one hazard and both of its
commands. Validated here, in Python; the ES modules only report clicks.

Rules (``static/src/page.js`` applies the same ones in a static page):

- choosing a hazard selects both of its commands; ``selected_command`` becomes the
  later one (the upload of a stale upload);
- choosing a command outside the chosen hazard drops the hazard; choosing none drops both;
- ``selected_commands`` is derived: the hazard's commands, else ``[selected_command]``.
"""

from __future__ import annotations

from typing import Any

import traitlets
from traitlets import HasTraits, Int, List, TraitError, observe, validate


def selection_traits(sync: bool) -> tuple[Any, Any, Any]:
    """The three selection traits, tagged for syncing to the browser when ``sync``."""
    traits = (
        Int(None, allow_none=True, help="id of the selected record, or None"),
        Int(None, allow_none=True, help="index of the selected hazard, or None"),
        List(Int(), help="ids the views highlight (derived; do not set)"),
    )
    return tuple(trait.tag(sync=True) for trait in traits) if sync else traits


class SelectionMixin(HasTraits):
    """``selected_command``, ``selected_hazard`` and the derived ``selected_commands``.

    Subclasses call :meth:`_set_selectable` with the record ids and each hazard's command
    ids before anything is selected.
    """

    selected_command, selected_hazard, selected_commands = selection_traits(sync=False)

    _record_ids: frozenset[int] = frozenset()
    _hazard_commands: tuple[tuple[int, ...], ...] = ()

    def _set_selectable(
        self, record_ids: frozenset[int], hazard_commands: tuple[tuple[int, ...], ...]
    ) -> None:
        """``record_ids`` and ``hazard_commands`` as ``TimelineData.selectable`` has them
        (made once, shared by every view)."""
        self._record_ids = record_ids
        self._hazard_commands = hazard_commands

    @validate("selected_command")
    def _check_command(self, proposal: dict[str, Any]) -> int | None:
        value = proposal["value"]
        if value is None:
            return None
        if isinstance(value, bool) or value not in self._record_ids:
            if self._record_ids:
                known = (
                    f"its record ids run from #{min(self._record_ids)} to #{max(self._record_ids)}"
                )
            else:
                known = "it has no records"
            raise TraitError(
                f"selected_command={value!r}: this trace has no record #{value}; {known} "
                "(or pass None to clear the selection)"
            )
        return int(value)

    @validate("selected_hazard")
    def _check_hazard(self, proposal: dict[str, Any]) -> int | None:
        value = proposal["value"]
        if value is None:
            return None
        count = len(self._hazard_commands)
        if isinstance(value, bool) or not 0 <= value < count:
            valid = f"0..{count - 1}" if count else "none: it has no hazards"
            raise TraitError(
                f"selected_hazard={value!r}: this trace has {count} hazard(s); valid "
                f"indices: {valid} (or None)"
            )
        return int(value)

    @observe("selected_hazard")
    def _hazard_chosen(self, change: dict[str, Any]) -> None:
        index = change["new"]
        if index is not None:
            self.selected_command = self._hazard_commands[index][-1]
        self._derive_selection()

    @observe("selected_command")
    def _command_chosen(self, change: dict[str, Any]) -> None:
        command = change["new"]
        hazard = self.selected_hazard
        if command is None or (hazard is not None and command not in self._hazard_commands[hazard]):
            self.selected_hazard = None
        self._derive_selection()

    def _derive_selection(self) -> None:
        if self.selected_hazard is not None:
            ids = list(self._hazard_commands[self.selected_hazard])
        elif self.selected_command is not None:
            ids = [self.selected_command]
        else:
            ids = []
        if ids != list(self.selected_commands):
            self.selected_commands = ids


def link_selection(source: HasTraits, target: HasTraits) -> list[traitlets.link]:
    """Keep ``selected_command`` and ``selected_hazard`` of two views equal."""
    return [
        traitlets.link((source, name), (target, name))
        for name in ("selected_hazard", "selected_command")
    ]
