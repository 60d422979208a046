"""luisa-python's type names, and the numpy dtype of a buffer of each.

``int``, ``float`` and ``bool`` are Python's own and mean int32, float32 and bool;
``uint``, ``long`` and ``ulong`` are uint32, int64 and uint64 (calling one converts, in
kernels too: ``uint(x)`` is C's ``(uint32_t)x``); vectors (``float3``) are
laid out as LuisaCompute lays them out (``float3`` takes 16 bytes). The 16-bit types
(``half``, ``short``, ``ushort``) are not supported.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels import dtype_of as numpy_dtype_of
from luisa_nb.kernels.lang.scalar_names import long, uint, ulong
from luisa_nb.luisa import mathtypes
from luisa_nb.luisa.missing import MISSING, Missing
from luisa_nb.runtime.device import buffer_dtype

half, short, ushort = MISSING["half"], MISSING["short"], MISSING["ushort"]

_SCALAR_DTYPES: dict[Any, np.dtype] = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int32),
    float: np.dtype(np.float32),
    uint: np.dtype(np.uint32),
    long: np.dtype(np.int64),
    ulong: np.dtype(np.uint64),
}


def element_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of a buffer element of luisa type ``dtype`` (or of a numpy dtype)."""
    known = _SCALAR_DTYPES.get(dtype)
    if known is not None:
        return known
    if isinstance(dtype, Missing):
        dtype.fail()
    if hasattr(dtype, "__lnb_type__"):
        return numpy_dtype_of(dtype)
    try:
        return buffer_dtype(dtype)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"a luisa buffer holds int, uint, long, ulong, float, bool, a vector type such as "
            f"float3, or a numpy dtype; got {dtype!r}"
        ) from None


def element_type_of(value: Any) -> Any:
    """The luisa type of a host value, as ``Buffer.from_list`` infers it."""
    if isinstance(value, np.generic):
        return value.dtype
    if hasattr(type(value), "__lnb_type__"):
        return type(value)
    for python_type in (bool, int, float):
        if isinstance(value, python_type):
            return python_type
    raise InvalidArgumentError(
        f"cannot tell the luisa type of {type(value).__name__} {value!r:.40}; pass a numpy "
        "array to Buffer.from_array"
    )


_NUMPY_SCALAR_NAMES: dict[type, Any] = {
    np.bool_: bool,
    np.int32: int,
    np.float32: float,
    np.uint32: uint,
    np.int64: long,
    np.uint64: ulong,
}
_TYPE_ATTRIBUTES = ("texture3DType", "texture2DType", "bufferType")
_TYPE_CLASSES = ("BufferType", "Texture2DType", "Texture3DType", "SharedArrayType")


def dtype_of(value: Any) -> Any:
    """The luisa type of ``value``, as luisa-python's ``luisa.types.dtype_of`` gives it:
    ``int``, ``float``, ``bool`` (numpy scalars by their luisa names: ``uint`` for a
    ``np.uint32``), a vector or matrix class (``float3``), a struct's ``StructType``, an
    array's ``ArrayType``, a buffer's ``BufferType``, an image's ``Texture2DType``; a type
    itself gives ``type``."""
    kind = type(value)
    if kind in (bool, int, float, str) or isinstance(value, types.ModuleType):
        return kind
    if kind in _NUMPY_SCALAR_NAMES:
        return _NUMPY_SCALAR_NAMES[kind]
    declared = getattr(kind, "__lnb_type__", None)
    if declared is not None:
        return declared if getattr(declared, "aggregate", False) else kind
    for attribute in _TYPE_ATTRIBUTES:
        if hasattr(kind, attribute):
            return getattr(value, attribute)
    if isinstance(value, type) or getattr(value, "__lnb_type__", None) is not None:
        return type
    if kind.__name__ in _TYPE_CLASSES:
        return type
    if kind.__name__ in ("BindlessArray", "Accel", "IndirectDispatchBuffer"):
        return kind
    if isinstance(value, list):
        raise InvalidArgumentError("a list has no luisa type; make it an array: luisa.array([...])")
    raise InvalidArgumentError(
        f"{kind.__name__} {value!r:.40} has no luisa type; luisa values are numbers, vectors, "
        "matrices, structs, arrays, buffers, images and the types themselves"
    )


VECTOR_TYPES = {name: getattr(mathtypes, name) for name in mathtypes.__all__ if "make_" not in name}
globals().update(VECTOR_TYPES)

__all__ = ["dtype_of", "half", "long", "short", "uint", "ulong", "ushort", *VECTOR_TYPES]
