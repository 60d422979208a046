"""The kernel compiler: Python kernel functions -> typed IR -> C (or per-thread Python).

The runtime uses :class:`KernelDefinition` (parse once), :func:`argument_type` and
``definition.executable(types, checks).launch(dims, buffers, scalars, cancel)`` (see
docs/kernels.md, "API used by the runtime"). Kernels call the builtins exported here
(``dispatch_id()``, ``sqrt``, ...).
"""

from luisa_nb.kernels.builtins import (
    abs,
    ceil,
    clamp,
    cos,
    dispatch_id,
    dispatch_size,
    exp,
    floor,
    log,
    max,
    min,
    pow,
    sin,
    sqrt,
    tan,
)
from luisa_nb.kernels.definition import KernelDefinition
from luisa_nb.kernels.executable import Executable, Parameter
from luisa_nb.kernels.toolchain import compiler_available
from luisa_nb.kernels.type_system import BufferType, ScalarType, argument_type

__all__ = [
    "BufferType",
    "Executable",
    "KernelDefinition",
    "Parameter",
    "ScalarType",
    "abs",
    "argument_type",
    "ceil",
    "clamp",
    "compiler_available",
    "cos",
    "dispatch_id",
    "dispatch_size",
    "exp",
    "floor",
    "log",
    "max",
    "min",
    "pow",
    "sin",
    "sqrt",
    "tan",
]
