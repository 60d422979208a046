"""Findings: what the analysis reports, in one shape for every kind (docs/architecture.md
§4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from luisa_nb.recording import DeviceRange, HostRange
from luisa_nb.recording.records import record_to_dict


class HazardKind(str, Enum):
    """What went wrong."""

    STALE_UPLOAD = "STALE_UPLOAD"
    LATENT_STALE_UPLOAD = "LATENT_STALE_UPLOAD"
    HOST_WRITE_IN_FLIGHT = "HOST_WRITE_IN_FLIGHT"
    DEVICE_RACE = "DEVICE_RACE"
    HOST_USE_AFTER_FREE = "HOST_USE_AFTER_FREE"
    UNINITIALIZED_READ = "UNINITIALIZED_READ"


@dataclass(frozen=True)
class Hazard:
    """One finding. ``command_ids`` are in issue order (earlier first); ``host`` and
    ``device`` are the overlapping bytes (``device.access`` is the later command's);
    ``times`` holds the moments the finding rests on, in trace-clock nanoseconds.
    """

    kind: HazardKind
    command_ids: tuple[int, ...]
    host: HostRange | None = field(hash=False)
    device: DeviceRange | None = field(hash=False)
    times: dict[str, int] = field(hash=False)
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.message}\n    fix: {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "command_ids": list(self.command_ids),
            "host": None if self.host is None else record_to_dict(self.host),
            "device": None if self.device is None else record_to_dict(self.device),
            "times": dict(self.times),
            "message": self.message,
            "fix": self.fix,
        }
