"""``dx``: a simulation of LuisaCompute's DirectX 12 backend.

Uploads are copied into an upload heap while the command list is recorded (at submit);
readbacks are copied to the host after the fence (once the submission has finished).
With ``reorder=True`` the commands of a submission run in the order a dependency
analysis of *device* buffers allows, as LuisaCompute's command reordering does: commands
linked only through host memory (a download into ``h``, then an upload from ``h``) may
swap. Kernels run as compiled C on the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from luisa_nb.backends.simulated import DEFAULT_STAGING_CAPACITY, SimulatedStagingBackend


class DxBackend(SimulatedStagingBackend):
    name = "dx"
    simulates = "LuisaCompute DirectX 12 backend"
    description = (
        "simulation of LuisaCompute's DX12 backend: uploads copied into a finite upload heap "
        "while the list is recorded, readbacks copied to the host after the fence; kernels run on "
        "the CPU"
    )

    def __init__(
        self, staging_capacity: int = DEFAULT_STAGING_CAPACITY, reorder: bool = False
    ) -> None:
        super().__init__(staging_capacity)
        self.reorder = reorder

    def schedule(self, commands: Sequence[Any]) -> Sequence[Any]:
        """With ``reorder``, run commands level by level: a command's level is one more
        than that of the latest earlier command whose device bytes conflict with its own
        (one of them writes); within a level, submission order is kept."""
        if not self.reorder:
            return commands
        levels: list[int] = []
        ranges = [command.device_ranges() for command in commands]
        for index, mine in enumerate(ranges):
            level = 0
            for earlier in range(index):
                if levels[earlier] >= level and _conflict(mine, ranges[earlier]):
                    level = levels[earlier] + 1
            levels.append(level)
        order = sorted(range(len(commands)), key=lambda index: levels[index])
        return [commands[index] for index in order]

    def info(self) -> dict[str, Any]:
        return {**super().info(), "reorder": self.reorder}


def _conflict(first: Sequence[Any], second: Sequence[Any]) -> bool:
    return any(
        a.overlaps(b) and (a.access.writes or b.access.writes) for a in first for b in second
    )


backend_class = DxBackend
