"""The interface every backend fills in: device memory and the commands that touch it.

A backend is small. It allocates device memory, copies bytes between host arrays and
device memory, and runs compiled kernels. It does not decide *when* host memory is
read: that is the staging policy, shared by every backend in ``luisa_nb.runtime``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np


class Allocation(ABC):
    """Device memory of one buffer; released when garbage-collected."""

    nbytes: int


class KernelBuffer(NamedTuple):
    """One buffer argument of a dispatch: ``nbytes`` bytes at ``offset`` of ``allocation``."""

    allocation: Allocation
    offset: int
    nbytes: int
    dtype: np.dtype


class Backend(ABC):
    """Base class of backends. Subclasses set ``name`` and fill in the abstract hooks."""

    name: ClassVar[str]
    default_staging: ClassVar[str] = "execute"
    is_model: ClassVar[bool] = False
    description: ClassVar[str] = ""

    @abstractmethod
    def allocate(self, nbytes: int) -> Allocation: ...

    @abstractmethod
    def upload(self, allocation: Allocation, offset: int, data: np.ndarray) -> None:
        """Copy the uint8 array ``data`` into device memory at byte ``offset``."""

    @abstractmethod
    def download(self, allocation: Allocation, offset: int, out: np.ndarray) -> None:
        """Copy ``out.nbytes`` device bytes at ``offset`` into the uint8 array ``out``."""

    @abstractmethod
    def copy(
        self,
        source: Allocation,
        source_offset: int,
        target: Allocation,
        target_offset: int,
        nbytes: int,
    ) -> None: ...

    @abstractmethod
    def fill(self, allocation: Allocation, offset: int, nbytes: int, element: np.ndarray) -> None:
        """Repeat the one-element array ``element`` over ``nbytes`` bytes at ``offset``."""

    @abstractmethod
    def dispatch(
        self,
        executable: Any,
        dims: tuple[int, int, int],
        buffers: Sequence[KernelBuffer],
        scalars: Sequence[Any],
    ) -> None: ...

    def info(self) -> dict[str, Any]:
        """What the device reports about itself; the runtime adds the staging policy."""
        return {"name": self.name, "model": self.is_model, "description": self.description}
