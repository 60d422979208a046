"""Executables: one specialisation of a kernel, ready to launch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from luisa_nb.kernels import ir
from luisa_nb.kernels.c_emitter import CEmitter, argument_struct
from luisa_nb.kernels.toolchain import build_library, load_function


@dataclass(frozen=True)
class Parameter:
    """One launch parameter: an argument, or a captured buffer (``capture`` is the object)."""

    name: str
    kind: str  # "buffer" | "scalar"
    dtype: np.dtype
    access: str  # "read" | "write" | "read_write" | "none"; "read" for scalars
    capture: object | None = None


def parameters_of(kernel: ir.KernelIR) -> list[Parameter]:
    """Arguments in call order, then captured buffers."""
    access = kernel.buffer_access()
    parameters = []
    for name, kind, index in kernel.arguments:
        if kind == "buffer":
            dtype, mode = kernel.buffers[index].element.dtype, access[index]
        else:
            dtype, mode = kernel.scalars[index].type.dtype, "read"
        parameters.append(Parameter(name, kind, dtype, mode))
    for index, slot in enumerate(kernel.buffers):
        if slot.capture is not None:
            dtype = slot.element.dtype
            parameters.append(Parameter(slot.name, "buffer", dtype, access[index], slot.capture))
    return parameters


class Executable:
    """A kernel specialised on argument types; ``launch`` runs it over a 3-D grid."""

    mode: str
    source: str

    def __init__(self, kernel: ir.KernelIR) -> None:
        self.name = kernel.name
        self.parameters = parameters_of(kernel)
        self.buffer_parameters = [p for p in self.parameters if p.kind == "buffer"]
        self.scalar_parameters = [p for p in self.parameters if p.kind == "scalar"]

    def launch(
        self, dims: tuple[int, int, int], buffers: Sequence[Any], scalars: Sequence[Any]
    ) -> None:
        """Run ``dims[0] * dims[1] * dims[2]`` threads."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} mode={self.mode}>"


class CExecutable(Executable):
    """Compiled C; ``launch`` takes the address of element 0 of each buffer."""

    mode = "c"

    def __init__(self, kernel: ir.KernelIR, emitter_class: type[CEmitter] = CEmitter) -> None:
        super().__init__(kernel)
        emitter = emitter_class(kernel)
        self.source = emitter.emit()
        library = build_library(emitter.entry_name, self.source)
        self._function = load_function(library, emitter.entry_name)
        self._pack = argument_struct(kernel).pack

    def launch(
        self, dims: tuple[int, int, int], buffers: Sequence[int], scalars: Sequence[Any]
    ) -> None:
        self._function(self._pack(*dims, *buffers, *scalars))
