"""luisa-python's names of scalar types that Python lacks: ``uint``, ``long``, ``ulong``.

``luisa_nb.luisa.types`` exports these classes. Kernels recognise them by identity, so
``uint(x)`` converts inside a kernel as ``int(x)`` does; calling one anywhere else (Python
mode, the host) gives the numpy scalar the kernel would compute. Conversions are C casts:
integers wrap (``uint(-1) == 4294967295``), floats truncate toward zero.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels.rules import wrap_integer
from luisa_nb.kernels.type_system import ScalarType


def convert_scalar(value: Any, kind: ScalarType) -> np.generic:
    """``value`` (a Python or numpy scalar) converted to numeric type ``kind`` as a C cast
    converts it: integers wrap, floats to an integer type truncate, floats to a float type
    round to its precision."""
    if kind.is_float:
        return kind.dtype.type(value)
    if isinstance(value, (bool, np.bool_)):
        return kind.dtype.type(int(bool(value)))
    if isinstance(value, np.generic) and value.dtype.kind in "iuf":
        return value.astype(kind.dtype)
    if isinstance(value, int):
        return kind.dtype.type(wrap_integer(value, kind))
    if isinstance(value, float) and math.isfinite(value):
        return kind.dtype.type(wrap_integer(math.trunc(value), kind))
    raise InvalidArgumentError(
        f"{kind.value}() converts one finite number (a bool, int or float), got "
        f"{type(value).__name__} {value!r:.60}"
    )


class ScalarName:
    """A luisa-python scalar type name: the class is the type (for buffers, struct fields
    and ``buffer_read``), and calling it converts (``uint(x)``)."""

    kernel_type: ClassVar[ScalarType]
    dtype: ClassVar[np.dtype]

    def __new__(cls, value: Any = 0) -> Any:
        return convert_scalar(value, cls.kernel_type)


class uint(ScalarName):
    """luisa-python's 32-bit unsigned integer type; ``uint(x)`` converts."""

    kernel_type = ScalarType.UINT32
    dtype = np.dtype(np.uint32)  # so that np.dtype(uint), and kernels, know it


class long(ScalarName):
    """luisa-python's 64-bit signed integer type; ``long(x)`` converts."""

    kernel_type = ScalarType.INT64
    dtype = np.dtype(np.int64)


class ulong(ScalarName):
    """luisa-python's 64-bit unsigned integer type; ``ulong(x)`` converts."""

    kernel_type = ScalarType.UINT64
    dtype = np.dtype(np.uint64)


SCALAR_NAMES: tuple[type[ScalarName], ...] = (uint, long, ulong)
