"""Findings grouped by the place in the program that causes them.

A bug inside a loop makes one hazard per iteration: 5,000 stale uploads of one array,
each with its own command ids, times and message. As validation layers do (Vulkan's
SyncVal reports a hazard once per place, with a count), the views show one
:class:`FindingGroup` per place: the finding's kind, what each of its commands does
(its kind, kernel, the buffers it touches and its host array) and the memory the
finding names. The flat list (``trace.hazards``) stays for tools.

The recorder keeps no source line per command, so a place is known by what its
commands do rather than by file and line: two loops that upload the same host array
into the same buffer after the same download are one place (docs/hazards.md).
Grouping is generic over finding kinds: any :class:`Hazard` groups, whatever its kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from luisa_nb.analysis.hazards import Hazard
from luisa_nb.recording import Trace
from luisa_nb.recording.naming import describe

PlaceKey = tuple[Any, ...]


@dataclass(frozen=True)
class FindingGroup:
    """The findings of one place in the program: ``occurrences`` are their positions in
    the flat hazard list (in its order), ``command_ids`` each one's commands;
    ``descriptions`` say what the commands of the first occurrence do."""

    kind: Any
    descriptions: tuple[str, ...]
    occurrences: tuple[int, ...]
    command_ids: tuple[tuple[int, ...], ...]
    first: Hazard
    last: Hazard

    @property
    def count(self) -> int:
        return len(self.occurrences)

    @property
    def message(self) -> str:
        """The first occurrence's explanation."""
        return self.first.message

    @property
    def fix(self) -> str:
        """The first occurrence's fix."""
        return self.first.fix

    def place(self) -> str:
        """What the commands do, without their ids: ``download a -> h → upload b <- h``."""
        return " → ".join(_without_id(text) for text in self.descriptions)

    def occurrence_text(self) -> str:
        """``#1 → #2`` for one occurrence; ``first #1 → #2, last #9999 → #10000`` for
        several."""
        first = _ids_text(self.command_ids[0])
        if self.count == 1:
            return first
        return f"first {first}, last {_ids_text(self.command_ids[-1])}"

    def __str__(self) -> str:
        """The kind, count, first and last commands and message; the fix below. One
        occurrence reads as its hazard does."""
        if self.count == 1:
            return str(self.first)
        times = f"\N{MULTIPLICATION SIGN}{self.count} ({self.occurrence_text()})"
        return f"{_kind_value(self.kind)} {times}: {self.message}\n    fix: {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": _kind_value(self.kind),
            "count": self.count,
            "descriptions": list(self.descriptions),
            "occurrences": list(self.occurrences),
            "command_ids": [list(ids) for ids in self.command_ids],
            "first": self.first.to_dict(),
            "last": self.last.to_dict(),
        }


def group_findings(trace: Trace, hazards: Sequence[Hazard]) -> list[FindingGroup]:
    """``hazards`` (found in ``trace``) grouped by place, in the order of each group's
    first occurrence."""
    if not hazards:
        return []
    places = _Places(trace)
    members: dict[PlaceKey, list[int]] = {}
    for position, hazard in enumerate(hazards):
        members.setdefault(places.key(hazard), []).append(position)
    groups = []
    for positions in members.values():
        first, last = hazards[positions[0]], hazards[positions[-1]]
        groups.append(
            FindingGroup(
                first.kind,
                tuple(places.description(command) for command in first.command_ids),
                tuple(positions),
                tuple(hazards[position].command_ids for position in positions),
                first,
                last,
            )
        )
    return groups


class _Places:
    """What each command does, read from the trace's table columns (no record is made
    but for the first occurrence of a group)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.table = table = trace.table
        ids = table.numbers["id"]
        order = np.argsort(ids, kind="stable")
        self._ids, self._rows = ids[order], order
        self._kinds = table.numbers["kind"]
        self._commands: dict[int, tuple[Any, ...]] = {}

    def _row(self, command_id: int) -> int | None:
        position = int(np.searchsorted(self._ids, command_id))
        if position < len(self._ids) and self._ids[position] == command_id:
            return int(self._rows[position])
        return None

    def command(self, command_id: int) -> tuple[Any, ...]:
        """A command's kind, kernel label, touched buffers and host array name."""
        found = self._commands.get(command_id)
        if found is None:
            row = self._row(command_id)
            if row is None:
                found = (command_id,)  # a record the table does not hold: its own place
            else:
                objects = self.table.objects
                host = objects["host"][row]
                found = (
                    int(self._kinds[row]),
                    objects["label"][row],
                    tuple((r.buffer, r.access.value) for r in objects["device_ranges"][row]),
                    None if host is None else host.name,
                )
            self._commands[command_id] = found
        return found

    def key(self, hazard: Hazard) -> PlaceKey:
        memory = None
        if hazard.host is not None:
            memory = ("host", hazard.host.name)
        elif hazard.device is not None:
            memory = ("device", hazard.device.buffer)
        return (
            _kind_value(hazard.kind),
            tuple(self.command(command) for command in hazard.command_ids),
            memory,
        )

    def description(self, command_id: int) -> str:
        row = self._row(command_id)
        if row is None:
            return f"#{command_id}"
        return describe(self.trace, self.table.record(row))


def _kind_value(kind: Any) -> str:
    return getattr(kind, "value", str(kind))


def _without_id(description: str) -> str:
    head, _, rest = description.partition(" ")
    return rest if head.startswith("#") and rest else description


def _ids_text(ids: Sequence[int]) -> str:
    return " → ".join(f"#{command}" for command in ids)
