"""Behavioural models of LuisaCompute backends whose hardware is not here.

A model keeps the host-memory semantics of its namesake — uploads staged into finite
memory when the command list is submitted, downloads copied to the host once the list has
finished — and runs kernels with the CPU backend's compiled C. It says so in
``device.info`` (``"model": True``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from luisa_nb.backends.cpu import CpuBackend
from luisa_nb.errors import ConfigurationError

DEFAULT_STAGING_CAPACITY = 64 * 1024 * 1024


class StagingModelBackend(CpuBackend):
    """CPU execution with a modelled staging heap and readbacks after a fence."""

    is_model = True
    default_staging = "submit"
    readback = "fence"
    models: ClassVar[str]

    def __init__(self, staging_capacity: int = DEFAULT_STAGING_CAPACITY) -> None:
        if not isinstance(staging_capacity, int) or staging_capacity <= 0:
            raise ConfigurationError(
                f"{self.name}: staging_capacity must be a positive number of bytes, got "
                f"{staging_capacity!r}"
            )
        super().__init__()
        self.staging_capacity = staging_capacity

    def info(self) -> dict[str, Any]:
        return {**super().info(), "models": self.models}
