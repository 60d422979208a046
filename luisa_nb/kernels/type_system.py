"""Kernel types, the types of launch arguments, and the promotion rules shared by every
emitter. Nothing here knows about C or Python mode.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from luisa_nb.errors import KernelArgumentError


class ScalarType(enum.Enum):
    """A scalar type of the kernel language; the value is the numpy dtype name."""

    BOOL = "bool"
    INT32 = "int32"
    UINT32 = "uint32"
    INT64 = "int64"
    UINT64 = "uint64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of this type."""
        return np.dtype(self.value)

    @property
    def is_integer(self) -> bool:
        return self in INTEGER_TYPES

    @property
    def is_signed(self) -> bool:
        return self in (ScalarType.INT32, ScalarType.INT64)

    @property
    def is_float(self) -> bool:
        return self in (ScalarType.FLOAT32, ScalarType.FLOAT64)

    @property
    def is_numeric(self) -> bool:
        return self is not ScalarType.BOOL

    @property
    def bits(self) -> int:
        return self.dtype.itemsize * 8

    @classmethod
    def from_dtype(cls, dtype: Any) -> ScalarType:
        """The scalar type of a numpy dtype; ``ValueError`` if kernels cannot use it."""
        known = _SCALAR_TYPE_OF_DTYPE.get(dtype)
        if known is not None:
            return known
        name = np.dtype(dtype).name
        try:
            return cls(name)
        except ValueError:
            supported = ", ".join(member.value for member in cls)
            raise ValueError(
                f"dtype {name} is not a kernel type (supported: {supported})"
            ) from None

    def __repr__(self) -> str:
        return f"ScalarType.{self.name}"

    def __str__(self) -> str:
        return self.value


_SCALAR_TYPE_OF_DTYPE: dict[np.dtype, ScalarType] = {t.dtype: t for t in ScalarType}

INTEGER_TYPES = frozenset(
    (ScalarType.INT32, ScalarType.UINT32, ScalarType.INT64, ScalarType.UINT64)
)


@dataclass(frozen=True)
class VectorType:
    """A small vector such as the ``int3`` that ``dispatch_id()`` returns."""

    element: ScalarType
    length: int

    @property
    def fields(self) -> tuple[str, ...]:
        return ("x", "y", "z", "w")[: self.length]

    def __str__(self) -> str:
        return f"{self.element.value}x{self.length}"


INT3 = VectorType(ScalarType.INT32, 3)


@dataclass(frozen=True)
class BufferType:
    """The type of a buffer argument: a 1-D array of ``element``."""

    element: ScalarType

    @property
    def dtype(self) -> np.dtype:
        return self.element.dtype

    def __str__(self) -> str:
        return f"buffer[{self.element.value}]"


KernelType = ScalarType | VectorType

_BUFFER_TYPE_OF_DTYPE = {t.dtype: BufferType(t) for t in ScalarType}

INT32_RANGE = (-(2**31), 2**31 - 1)


def is_buffer_like(value: Any) -> bool:
    """Duck typing: ``__lnb_buffer__`` is true and ``dtype`` is a numpy dtype."""
    return bool(getattr(value, "__lnb_buffer__", False)) and isinstance(
        getattr(value, "dtype", None), np.dtype
    )


def argument_type(value: Any) -> ScalarType | BufferType:
    """The kernel type of a launch argument.

    ``bool`` -> bool, ``int`` -> int32 (it must fit), ``float`` -> float32, numpy scalars
    keep their dtype, buffer-like objects give a :class:`BufferType`.
    """
    kind = type(value)
    if kind is float:
        return ScalarType.FLOAT32
    if is_buffer_like(value):
        buffer_type = _BUFFER_TYPE_OF_DTYPE.get(value.dtype)
        if buffer_type is not None:
            return buffer_type
        try:
            return BufferType(ScalarType.from_dtype(value.dtype))
        except ValueError as error:
            raise KernelArgumentError(f"buffer argument {value!r}: {error}") from None
    if isinstance(value, (bool, np.bool_)):
        return ScalarType.BOOL
    if isinstance(value, np.generic):
        try:
            return ScalarType.from_dtype(value.dtype)
        except ValueError as error:
            raise KernelArgumentError(f"scalar argument {value!r}: {error}") from None
    if isinstance(value, int):
        if not INT32_RANGE[0] <= value <= INT32_RANGE[1]:
            raise KernelArgumentError(
                f"int argument {value} does not fit int32; pass np.int64({value}) for a "
                f"64-bit parameter"
            )
        return ScalarType.INT32
    if isinstance(value, float):
        return ScalarType.FLOAT32
    raise KernelArgumentError(
        f"kernel arguments must be buffers or bool/int/float scalars, got "
        f"{type(value).__name__} {value!r:.60}"
    )


class PromotionError(Exception):
    """Two operand types do not combine; the message says why and what to do."""


def fits(value: int | float | bool, scalar_type: ScalarType) -> bool:
    """Whether a Python literal can be represented by ``scalar_type`` without change."""
    if scalar_type.is_float:
        return True
    if scalar_type is ScalarType.BOOL:
        return isinstance(value, bool)
    if isinstance(value, float):
        return False
    info = np.iinfo(scalar_type.dtype)
    return int(info.min) <= int(value) <= int(info.max)


def promote(left: ScalarType, right: ScalarType, left_weak: bool, right_weak: bool) -> ScalarType:
    """The common type of two numeric operands.

    A weak operand (a Python literal or captured Python number) adopts the other
    operand's type; int with float gives the float; int32 with int64 gives int64;
    float32 with float64 gives float64. Mixing signed with unsigned is rejected.
    """
    if ScalarType.BOOL in (left, right):
        raise PromotionError("bool values take no part in arithmetic; convert with int(...)")
    if left == right:
        return left
    if left_weak and not right_weak:
        if left.is_float and right.is_integer:
            return ScalarType.FLOAT32
        return right
    if right_weak and not left_weak:
        if right.is_float and left.is_integer:
            return ScalarType.FLOAT32
        return left
    if left.is_float or right.is_float:
        if left.is_float and right.is_float:
            return ScalarType.FLOAT64
        return left if left.is_float else right
    if left.is_signed != right.is_signed:
        raise PromotionError(
            f"mixing signed {_signed_of(left, right).value} and unsigned "
            f"{_unsigned_of(left, right).value} is ambiguous; make both operands the same "
            f"type (e.g. int(...) for int32)"
        )
    return left if left.bits > right.bits else right


def _signed_of(left: ScalarType, right: ScalarType) -> ScalarType:
    return left if left.is_signed else right


def _unsigned_of(left: ScalarType, right: ScalarType) -> ScalarType:
    return right if left.is_signed else left


def assignable(target: ScalarType, value: ScalarType, weak: bool) -> bool:
    """Whether a value of type ``value`` may be stored into ``target`` implicitly.

    Allowed: the same type; any integer into a float; int32 into int64 and uint32
    into uint64; a weak literal into any type that represents it.
    """
    if target == value:
        return True
    if weak and value.is_numeric and target.is_numeric:
        return value.is_integer or target.is_float
    if value.is_integer and target.is_float:
        return True
    return (
        value.is_integer
        and target.is_integer
        and value.is_signed == target.is_signed
        and value.bits < target.bits
    )


def true_division_type(operand: ScalarType) -> ScalarType:
    """The result of ``/``: floats keep their type; 64-bit ints give float64, others float32."""
    if operand.is_float:
        return operand
    return ScalarType.FLOAT64 if operand.bits == 64 else ScalarType.FLOAT32
