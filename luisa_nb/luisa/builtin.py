"""luisa-python's ``luisa.builtin``: the kernel functions (``length``, ``lerp``,
``dispatch_id`` ...), for programs that import them by name. Those that share a name with
a Python builtin (``abs``, ``min``, ``round`` ...) are left out of ``import *``, so that
host code keeps Python's; kernels find them by name anyway."""

import builtins

from luisa_nb import kernels
from luisa_nb.luisa import mathtypes

_COMPILER_API = {
    "BufferType",
    "Executable",
    "KernelDefinition",
    "MatrixType",
    "Parameter",
    "ScalarType",
    "SharedArrayType",
    "VectorType",
    "argument_type",
    "compiler_available",
    "dtype_of",
}

__all__ = [
    name
    for name in kernels.__all__
    if name not in _COMPILER_API and name not in mathtypes.__all__ and not hasattr(builtins, name)
]
globals().update({name: getattr(kernels, name) for name in __all__})
