"""Simulated backends: LuisaCompute backends whose hardware is not here, simulated on the CPU.

A simulated backend keeps the host-memory semantics of its namesake — uploads staged into
finite memory when the command list is submitted, downloads copied to the host once the
list has finished — and runs kernels with the CPU backend's compiled C. It says so in
``device.info`` (``"simulated": True``, and ``"simulates"``: the backend it stands for).
"""

from __future__ import annotations

from typing import Any, ClassVar

from luisa_nb.backends.cpu import CpuBackend
from luisa_nb.errors import ConfigurationError

DEFAULT_STAGING_CAPACITY = 64 * 1024 * 1024


class SimulatedStagingBackend(CpuBackend):
    """CPU execution with a simulated staging heap and readbacks after a fence."""

    is_simulated = True
    default_staging = "submit"
    readback = "fence"
    simulates: ClassVar[str]

    def __init__(self, staging_capacity: int = DEFAULT_STAGING_CAPACITY) -> None:
        if not isinstance(staging_capacity, int) or staging_capacity <= 0:
            raise ConfigurationError(
                f"{self.name}: staging_capacity must be a positive number of bytes, got "
                f"{staging_capacity!r}"
            )
        super().__init__()
        self.staging_capacity = staging_capacity

    def info(self) -> dict[str, Any]:
        return {**super().info(), "simulates": self.simulates}
