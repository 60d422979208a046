"""Vector types under luisa-python's names (``float3``, ``int2``, ``bool4`` ...).

The compiler recognises the classes and the ``make_*`` functions by identity. The same
classes are the values of Python mode and of the host: components live in a small numpy
array of the element dtype, and operators follow the kernel's typing rules (weak Python
numbers, NEP 50 style; see ``type_system.elementwise_types``), so Python mode computes
what the C does. Swizzles (``v.xy``, ``v.zyx``) read new vectors; assigning to a swizzle
without repeated components writes into the vector.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from luisa_nb.errors import InvalidArgumentError, KernelError
from luisa_nb.kernels.lang.value_text import vector_text
from luisa_nb.kernels.type_system import (
    MatrixType,
    PromotionError,
    ScalarType,
    VectorType,
    article,
    element_of,
    elementwise_types,
    host_vectors_divide_as_integers,
    is_aggregate_type,
)

NUMPY_OPERATIONS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "truediv": np.true_divide,
    "floordiv": np.floor_divide,
    "mod": np.remainder,
    "pow": np.power,
    "bitand": np.bitwise_and,
    "bitor": np.bitwise_or,
    "bitxor": np.bitwise_xor,
    "lshift": np.left_shift,
    "rshift": np.right_shift,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def c_quotient(left: np.ndarray | np.integer, right: np.ndarray | np.integer) -> Any:
    """C's integer ``left / right`` on numpy operands of one dtype (0 for a zero divisor)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        floored = np.floor_divide(left, right)
        remainder = np.fmod(left, right)
    inexact_negative = (remainder != 0) & ((remainder < 0) != (right < 0))
    return (floored + inexact_negative).astype(floored.dtype)


class VectorIndexError(KernelError, IndexError):
    """A vector or matrix was indexed outside its components (Python mode and host)."""


def value_type(value: Any) -> tuple[ScalarType | VectorType | MatrixType, bool] | None:
    """(kernel type, weak) of a Python-mode value, or None for anything else. Python
    numbers are weak: they adopt the other operand's type."""
    declared = getattr(type(value), "__lnb_type__", None)
    if declared is not None:
        return declared, False
    if isinstance(value, (bool, np.bool_)):
        return ScalarType.BOOL, False
    if isinstance(value, np.generic):  # before int/float: np.float64 is a float
        try:
            return ScalarType.from_dtype(value.dtype), False
        except ValueError:
            return None
    if isinstance(value, int):
        return (ScalarType.INT32 if -(2**31) <= value < 2**31 else ScalarType.INT64), True
    if isinstance(value, float):
        return ScalarType.FLOAT32, True
    return None


def components_of(value: Any, dtype: np.dtype) -> np.ndarray:
    """A scalar or vector value as a 1-D array of ``dtype`` (converting like a C cast)."""
    if isinstance(value, Vector):
        return value._values.astype(dtype)
    if isinstance(value, np.generic):
        return np.asarray(value).astype(dtype).reshape(1)
    return np.array([value], dtype=dtype)


class Vector:
    """Base class of the vector types; ``__lnb_type__`` is the :class:`VectorType`."""

    __slots__ = ("_values",)
    __lnb_type__: ClassVar[VectorType]
    __array_ufunc__ = None  # numpy scalars defer to our reflected operators

    def __init__(self, *arguments: Any) -> None:
        self._values = construct_components(self.__lnb_type__, arguments)

    @classmethod
    def wrap(cls, values: np.ndarray) -> Vector:
        """A vector around ``values`` (already of the right dtype and length; not copied)."""
        vector = object.__new__(cls)
        vector._values = values
        return vector

    def copy(self) -> Vector:
        return self.wrap(self._values.copy())

    def __getattr__(self, name: str) -> Any:
        """A swizzle that repeats a component (``v.xxy``, read-only): its property is made
        on first use, as there are over a thousand of them."""
        cls = type(self)
        length = cls.__lnb_type__.length
        if not 2 <= len(name) <= 4 or name.strip(SWIZZLE_LETTERS[:length]):
            raise AttributeError(f"{cls.__name__!r} object has no attribute {name!r}")
        indices = tuple(SWIZZLE_LETTERS.index(letter) for letter in name)
        result = vector_class(VectorType(cls.__lnb_type__.element, len(name)))
        swizzle = _swizzle_property(indices, result)
        setattr(cls, name, swizzle)
        return swizzle.__get__(self)

    @classmethod
    def component_view(cls, array: np.ndarray) -> np.ndarray:
        """A writable (n, length) view of the components of a buffer array of this type."""
        element = cls.__lnb_type__.element.dtype
        padded = array.dtype.itemsize // element.itemsize
        return array.view(element).reshape(len(array), padded)[:, : cls.__lnb_type__.length]

    def __repr__(self) -> str:
        return vector_text(type(self).__name__, self._values)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._values.astype(dtype or self._values.dtype)

    def __len__(self) -> int:
        return self.__lnb_type__.length

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def _index(self, index: Any) -> int:
        length = self.__lnb_type__.length
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
            raise VectorIndexError(f"{type(self).__name__} indices are integers, got {index!r}")
        if not 0 <= index < length:
            raise VectorIndexError(
                f"index {index} is outside {type(self).__name__}, which has {length} "
                f"components (0 <= i < {length})"
            )
        return int(index)

    def __getitem__(self, index: Any) -> Any:
        return self._values[self._index(index)]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._values[self._index(index)] = value

    def __bool__(self) -> bool:
        raise KernelError(
            f"{article(type(self).__name__)} has no single truth value; use all(...) or any(...)"
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, and == is component-wise

    def _operate(self, operator: str, left: Any, right: Any) -> Any:
        left_type, right_type = value_type(left), value_type(right)
        if left_type is None or right_type is None:
            return NotImplemented
        if isinstance(left_type[0], MatrixType) or isinstance(right_type[0], MatrixType):
            return NotImplemented
        integer_division = (
            operator == "truediv"
            and host_vectors_divide_as_integers()
            and element_of(left_type[0]).is_integer
            and element_of(right_type[0]).is_integer
        )
        try:
            operand, result = elementwise_types(
                "floordiv" if integer_division else operator,
                left_type[0],
                right_type[0],
                left_type[1],
                right_type[1],
            )
        except PromotionError as error:
            raise InvalidArgumentError(str(error)) from None
        dtype = operand.element.dtype
        operation = c_quotient if integer_division else NUMPY_OPERATIONS[operator]
        values = operation(components_of(left, dtype), components_of(right, dtype))
        return vector_class(result).wrap(values.astype(result.element.dtype, copy=False))

    def __neg__(self) -> Vector:
        if self.__lnb_type__.element is ScalarType.BOOL:
            raise InvalidArgumentError(f"unary - does not apply to {type(self).__name__}")
        return self.wrap(np.negative(self._values))

    def __pos__(self) -> Vector:
        return self.copy()

    def __invert__(self) -> Vector:
        if not self.__lnb_type__.element.is_integer:
            raise InvalidArgumentError(f"~ needs an integer vector, not {type(self).__name__}")
        return self.wrap(np.invert(self._values))

    def __abs__(self) -> Vector:
        if self.__lnb_type__.element is ScalarType.BOOL:
            raise InvalidArgumentError(f"abs() does not apply to {type(self).__name__}")
        return self.wrap(np.abs(self._values))


def _binary_methods(operator: str) -> tuple[Any, Any]:
    def forward(self: Vector, other: Any) -> Any:
        return self._operate(operator, self, other)

    def reflected(self: Vector, other: Any) -> Any:
        return self._operate(operator, other, self)

    return forward, reflected


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift"):
    _forward, _reflected = _binary_methods(_name)
    setattr(Vector, f"__{_name}__", _forward)
    setattr(Vector, f"__r{_name}__", _reflected)
for _name, _method in (("bitand", "and"), ("bitor", "or"), ("bitxor", "xor")):
    _forward, _reflected = _binary_methods(_name)
    setattr(Vector, f"__{_method}__", _forward)
    setattr(Vector, f"__r{_method}__", _reflected)
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Vector, f"__{_name}__", _binary_methods(_name)[0])


def construct_components(vector_type: VectorType, arguments: tuple[Any, ...]) -> np.ndarray:
    """The components of ``vector_type(*arguments)``: none (zeros), one scalar (broadcast),
    or scalars and vectors whose components add up to the length; each is converted as
    ``int(...)``/``float(...)`` convert (``bool``: non-zero is true)."""
    dtype = vector_type.element.dtype
    name = str(vector_type)
    if not arguments:
        return np.zeros(vector_type.length, dtype)
    parts = []
    for argument in arguments:
        if value_type(argument) is None or isinstance(value_type(argument)[0], MatrixType):
            raise InvalidArgumentError(
                f"{name}() takes numbers and vectors, got {type(argument).__name__} "
                f"{argument!r:.60}"
            )
        try:
            parts.append(components_of(argument, dtype))
        except (OverflowError, ValueError) as error:
            raise InvalidArgumentError(f"{name}({argument!r}): {error}") from None
    values = np.concatenate(parts)
    if len(values) == 1:
        return np.repeat(values, vector_type.length)
    if len(values) != vector_type.length:
        raise InvalidArgumentError(
            f"{name}() needs one scalar or {vector_type.length} components in all, got "
            f"{len(values)}"
        )
    return values


SWIZZLE_LETTERS = "xyzw"


def _component_property(index: int) -> property:
    def read(self: Vector) -> Any:
        return self._values[index]

    def write(self: Vector, value: Any) -> None:
        self._values[index] = value

    return property(read, write)


def _swizzle_property(indices: tuple[int, ...], result: type[Vector]) -> property:
    selection = list(indices)

    def read(self: Vector) -> Vector:
        return result.wrap(self._values[selection])

    def write(self: Vector, value: Any) -> None:
        self._values[selection] = components_of(value, self._values.dtype)

    return property(read, write if len(set(indices)) == len(indices) else None)


def _vector_class(element: ScalarType, length: int) -> type[Vector]:
    vector_type = VectorType(element, length)
    cls = type(str(vector_type), (Vector,), {"__slots__": (), "__lnb_type__": vector_type})
    cls.__module__ = __name__
    cls.__doc__ = f"A vector of {length} {element} components."
    return cls


bool2 = _vector_class(ScalarType.BOOL, 2)
bool3 = _vector_class(ScalarType.BOOL, 3)
bool4 = _vector_class(ScalarType.BOOL, 4)
int2 = _vector_class(ScalarType.INT32, 2)
int3 = _vector_class(ScalarType.INT32, 3)
int4 = _vector_class(ScalarType.INT32, 4)
uint2 = _vector_class(ScalarType.UINT32, 2)
uint3 = _vector_class(ScalarType.UINT32, 3)
uint4 = _vector_class(ScalarType.UINT32, 4)
float2 = _vector_class(ScalarType.FLOAT32, 2)
float3 = _vector_class(ScalarType.FLOAT32, 3)
float4 = _vector_class(ScalarType.FLOAT32, 4)
VECTOR_CLASSES: tuple[type[Vector], ...] = (
    bool2, bool3, bool4, int2, int3, int4, uint2, uint3, uint4, float2, float3, float4,
)  # fmt: skip
_CLASS_OF_TYPE = {cls.__lnb_type__: cls for cls in VECTOR_CLASSES}


def vector_class(vector_type: VectorType) -> type[Vector]:
    """The class of ``vector_type``."""
    return _CLASS_OF_TYPE[vector_type]


for _cls in VECTOR_CLASSES:
    _length = _cls.__lnb_type__.length
    for _index in range(_length):
        setattr(_cls, SWIZZLE_LETTERS[_index], _component_property(_index))
    for _size in range(2, _length + 1):  # the writable swizzles; Vector.__getattr__ the rest
        _result = vector_class(VectorType(_cls.__lnb_type__.element, _size))
        for _indices in itertools.permutations(range(_length), _size):
            _swizzle = "".join(SWIZZLE_LETTERS[i] for i in _indices)
            setattr(_cls, _swizzle, _swizzle_property(_indices, _result))


def _make_function(cls: type[Vector]) -> Any:
    def make(*arguments: Any) -> Vector:
        return cls(*arguments)

    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    make.__doc__ = f"``{cls.__name__}(*arguments)``, as luisa-python's make_{cls.__name__}."
    return make


make_bool2 = _make_function(bool2)
make_bool3 = _make_function(bool3)
make_bool4 = _make_function(bool4)
make_int2 = _make_function(int2)
make_int3 = _make_function(int3)
make_int4 = _make_function(int4)
make_uint2 = _make_function(uint2)
make_uint3 = _make_function(uint3)
make_uint4 = _make_function(uint4)
make_float2 = _make_function(float2)
make_float3 = _make_function(float3)
make_float4 = _make_function(float4)
MAKE_FUNCTIONS = (
    make_bool2, make_bool3, make_bool4, make_int2, make_int3, make_int4,
    make_uint2, make_uint3, make_uint4, make_float2, make_float3, make_float4,
)  # fmt: skip


def dtype_of(kind: Any) -> np.dtype:
    """The numpy dtype of a buffer of ``kind``: a vector or matrix class (``float3``), a
    :class:`VectorType`/:class:`MatrixType`, a struct or array type, or a scalar type.
    ``dtype_of(float3)`` has fields x, y, z and itemsize 16, as LuisaCompute lays a
    ``float3`` out."""
    declared = getattr(kind, "__lnb_type__", kind)
    if isinstance(declared, (VectorType, MatrixType, ScalarType)) or is_aggregate_type(declared):
        return declared.dtype
    if kind in (bool, int, float):
        return np.dtype({bool: "bool", int: "int32", float: "float32"}[kind])
    raise InvalidArgumentError(f"dtype_of() takes a kernel type such as float3, got {kind!r}")
