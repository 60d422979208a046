"""Findings as plain values that do not depend on where host arrays lay in memory, so that
a trace and the same trace saved and loaded (its file holds synthetic addresses) give
equal lists. A test helper, not part of the package."""

from __future__ import annotations

from typing import Any

from luisa_nb.analysis import AnalyzedTrace


def findings(trace: AnalyzedTrace) -> list[dict[str, Any]]:
    """Each hazard's :meth:`~luisa_nb.analysis.Hazard.to_dict`, its host range's address
    made an offset into the host range of the hazard's last command."""
    hosts = {command.id: command.host for command in trace.commands}
    found = []
    for hazard in trace.hazards:
        fields = hazard.to_dict()
        if hazard.host is not None:
            fields["host"]["address"] -= hosts[hazard.command_ids[-1]].address
        found.append(fields)
    return found
