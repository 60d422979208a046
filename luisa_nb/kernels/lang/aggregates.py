"""Structs and arrays: luisa-python's ``StructType(**fields)`` and ``ArrayType(size,
dtype)``, kernel types laid out as LuisaCompute lays them out (C layout: each member at
its alignment, the struct's alignment the largest of its members' and the one asked for,
an array ``size`` elements of its element's size), and their values in Python mode and
on the host.

A buffer of a struct or array has the numpy structured dtype :attr:`StructType.dtype`,
which carries its kernel type in its metadata (``dtype.metadata["lnb_type"]``).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels.lang.matrices import composite_class, matrix_class
from luisa_nb.kernels.lang.value_text import value_text
from luisa_nb.kernels.lang.vectors import Vector, VectorIndexError, components_of, vector_class
from luisa_nb.kernels.type_system import (
    MatrixType,
    ScalarType,
    VectorType,
    article,
    is_aggregate_type,
    luisa_type_name,
)

_struct_numbers = itertools.count()


def kernel_type_of(kind: Any) -> Any:
    """The kernel type named by ``kind``: a kernel type, a vector class (``float3``),
    ``bool``/``int``/``float``, or a numpy scalar dtype."""
    if isinstance(kind, (ScalarType, VectorType, MatrixType, StructType, ArrayType)):
        return kind
    declared = getattr(kind, "__lnb_type__", None)
    if isinstance(declared, (VectorType, MatrixType)):
        return declared
    python_types = {bool: ScalarType.BOOL, int: ScalarType.INT32, float: ScalarType.FLOAT32}
    if isinstance(kind, type) and kind in python_types:  # a dtype equals int: not one
        return python_types[kind]
    try:
        return ScalarType.from_dtype(np.dtype(kind))
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{kind!r} is not a kernel type; struct fields and array elements are bool, int, "
            f"float, numpy scalar types, vectors (float3 ...), structs or arrays"
        ) from None


def alignment_of(kind: Any) -> int:
    if isinstance(kind, ScalarType):
        return kind.dtype.itemsize
    return kind.alignment


is_aggregate = is_aggregate_type


class StructType:
    """A struct of named fields (luisa-python's ``StructType(my_v0=float3, ...)``).

    Calling it makes a value: ``S(a=..., b=...)`` (fields not given are zero), or ``S()``;
    with an ``__init__`` method (``add_method(f, "__init__")``) the arguments go to it.
    ``add_method(function, name)`` adds a method kernels call as ``s.name(...)``, with
    ``s`` as its first parameter (passed by reference). Types compare by identity.
    """

    aggregate = True

    def __init__(self, alignment: int = 1, **fields: Any) -> None:
        if not fields:
            raise InvalidArgumentError("StructType() needs at least one field: StructType(a=float)")
        if not isinstance(alignment, int) or alignment < 1 or alignment & (alignment - 1):
            raise InvalidArgumentError(f"struct alignment must be a power of 2, got {alignment!r}")
        self.fields: dict[str, Any] = {name: kernel_type_of(t) for name, t in fields.items()}
        self.alignment = max(alignment, *(alignment_of(t) for t in self.fields.values()))
        self.methods: dict[str, Any] = {}
        self.number = next(_struct_numbers)
        self.__lnb_type__ = self
        offsets, offset = [], 0
        for kind in self.fields.values():
            offset += -offset % alignment_of(kind)
            offsets.append(offset)
            offset += kind.dtype.itemsize
        self.dtype = np.dtype(
            {
                "names": list(self.fields),
                "formats": [kind.dtype for kind in self.fields.values()],
                "offsets": offsets,
                "itemsize": offset + -offset % self.alignment,
            },
            metadata={"lnb_type": self},
        )
        self.value_class: type[Struct] = type(
            f"struct{self.number}", (Struct,), {"__slots__": (), "__lnb_type__": self}
        )

    def add_method(self, function: Any, name: str | None = None) -> None:
        """Add ``function`` (a kernel/callable whose first parameter is the struct) as a
        method ``name`` (default: the function's name)."""
        name = name or function.__name__
        if name in self.fields:
            raise InvalidArgumentError(
                f"struct method {name!r} has the name of a field; rename the method"
            )
        self.methods[name] = function

    def __call__(self, *arguments: Any, **values: Any) -> Struct:
        if "__init__" in self.methods:
            value = self.value_class.zero()
            python_callable(self.methods["__init__"])(value, *arguments, **values)
            return value
        if arguments:
            raise InvalidArgumentError(
                f"{self}() takes field values by name ({', '.join(self.fields)}=...)"
            )
        return self.value_class.zero(values)

    def __repr__(self) -> str:
        """As luisa-python writes a struct type, ``print`` too: ``StructType[16](a:float3,
        b:int)``, with its alignment in brackets."""
        fields = ", ".join(f"{name}:{luisa_type_name(kind)}" for name, kind in self.fields.items())
        return f"StructType[{self.alignment}]({fields})"


class ArrayType:
    """A fixed-size array of ``size`` elements of ``dtype`` (luisa-python's
    ``ArrayType(size, dtype)``). ``A()`` is zeroed, ``A([v0, v1, ...])`` holds values."""

    aggregate = True

    def __init__(self, size: int, dtype: Any) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise InvalidArgumentError(f"array size must be a positive int, got {size!r}")
        self.size = size
        self.element = kernel_type_of(dtype)
        self.alignment = alignment_of(self.element)
        self.dtype = np.dtype(
            {"names": ["elements"], "formats": [(self.element.dtype, (size,))]},
            metadata={"lnb_type": self},
        )
        self.__lnb_type__ = self
        self.value_class: type[Array] = type(
            "Array", (Array,), {"__slots__": (), "__lnb_type__": self}
        )

    def __call__(self, values: Any = None) -> Array:
        value = self.value_class.zero()
        if values is not None:
            if len(values) != self.size:
                raise InvalidArgumentError(f"{self} takes {self.size} values, got {len(values)}")
            for index, element in enumerate(values):
                value[index] = element
        return value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArrayType) and (other.size, other.element) == (
            self.size,
            self.element,
        )

    def __hash__(self) -> int:
        return hash((ArrayType, self.size, self.element))

    def __repr__(self) -> str:
        """As luisa-python writes an array type, ``print`` too: ``ArrayType(3,int2)``."""
        return f"ArrayType({self.size},{luisa_type_name(self.element)})"


def zero_value(kind: Any) -> Any:
    """The zero of a kernel type, as Python mode holds it."""
    if isinstance(kind, ScalarType):
        return kind.dtype.type(0)
    if isinstance(kind, (VectorType, MatrixType)):
        return composite_class(kind)()
    return kind.value_class.zero()


def converted(kind: Any, value: Any) -> Any:
    """``value`` stored into a place of type ``kind`` (a copy for vectors and aggregates;
    scalars and vector elements converted as C converts them)."""
    if isinstance(kind, ScalarType):
        return kind.dtype.type(value)
    if isinstance(kind, VectorType):
        if not isinstance(value, Vector):
            raise InvalidArgumentError(
                f"{article(kind)} field takes {article(kind)}, got {value!r:.60}"
            )
        return vector_class(kind).wrap(components_of(value, kind.element.dtype))
    if getattr(type(value), "__lnb_type__", None) != kind:
        raise InvalidArgumentError(
            f"{article(kind)} place takes {article(kind)} value, got {value!r:.60}"
        )
    return value.copy()


def from_record(kind: Any, record: Any) -> Any:
    """A Python-mode value of ``kind`` from a numpy record (or scalar) of its dtype."""
    if isinstance(kind, ScalarType):
        return kind.dtype.type(record)
    if isinstance(kind, VectorType):
        values = np.array([record[field] for field in kind.fields], dtype=kind.element.dtype)
        return vector_class(kind).wrap(values)
    if isinstance(kind, MatrixType):
        fields = kind.column.fields
        columns = [[column[field] for field in fields] for column in record["columns"]]
        return matrix_class(kind).wrap(np.array(columns, dtype=np.float32))
    if isinstance(kind, StructType):
        value = kind.value_class.__new__(kind.value_class)
        object.__setattr__(
            value, "_values", {n: from_record(t, record[n]) for n, t in kind.fields.items()}
        )
        return value
    value = kind.value_class.__new__(kind.value_class)
    elements = record["elements"]
    object.__setattr__(value, "_values", [from_record(kind.element, e) for e in elements])
    return value


def to_record(kind: Any, value: Any) -> Any:
    """``value`` of ``kind`` as what numpy assigns into a record of its dtype."""
    if isinstance(kind, ScalarType):
        return value
    if isinstance(kind, VectorType):
        return tuple(components_of(value, kind.element.dtype).tolist())
    if isinstance(kind, MatrixType):
        return ([tuple(column) for column in value._values.tolist()],)
    if isinstance(kind, StructType):
        return tuple(to_record(t, value._values[n]) for n, t in kind.fields.items())
    return ([to_record(kind.element, element) for element in value._values],)


def to_bytes(kind: Any, value: Any) -> bytes:
    """``value`` laid out as in a buffer of ``kind`` (for kernel arguments)."""
    array = np.zeros(1, kind.dtype)
    array[0] = to_record(kind, value)
    return array.tobytes()


class _PythonCallables(threading.local):
    resolvers: list[Callable[[Any], Callable[..., Any]]]

    def __init__(self) -> None:
        self.resolvers = []


python_callables = _PythonCallables()
"""Per thread: a stack of functions giving the Python-mode function of a callable;
Python-mode launches push theirs while they run."""


def python_callable(function: Any) -> Callable[..., Any]:
    """What a struct method runs in Python mode (and on the host): the Python-mode
    function of the callable while a kernel runs, else the plain function."""
    if python_callables.resolvers:
        return python_callables.resolvers[-1](function)
    definition = getattr(function, "__lnb_kernel_definition__", None)
    return function if definition is None else definition.function


class Struct:
    """A struct value; fields are attributes, methods call the struct type's methods."""

    __slots__ = ("_values",)
    __lnb_type__: StructType

    @classmethod
    def zero(cls, values: dict[str, Any] | None = None) -> Struct:
        kind = cls.__lnb_type__
        unknown = set(values or ()) - set(kind.fields)
        if unknown:
            raise InvalidArgumentError(
                f"{kind} has no field {sorted(unknown)[0]!r}; its fields are "
                f"{', '.join(kind.fields)}"
            )
        value = cls.__new__(cls)
        fields = {name: zero_value(t) for name, t in kind.fields.items()}
        for name, given in (values or {}).items():
            fields[name] = converted(kind.fields[name], given)
        object.__setattr__(value, "_values", fields)
        return value

    def __getattr__(self, name: str) -> Any:
        kind = type(self).__lnb_type__
        if name in kind.methods:
            method = python_callable(kind.methods[name])
            return lambda *arguments: method(self, *arguments)
        raise AttributeError(f"{kind} has no field or method {name!r}")

    def __getattribute__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        return object.__getattribute__(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        kind = type(self).__lnb_type__
        if name not in kind.fields:
            raise AttributeError(f"{kind} has no field {name!r}")
        self._values[name] = converted(kind.fields[name], value)

    def copy(self) -> Struct:
        value = type(self).__new__(type(self))
        object.__setattr__(value, "_values", {n: _copied(v) for n, v in self._values.items()})
        return value

    def __repr__(self) -> str:
        """As luisa-python writes a struct, ``print`` too: ``{a:float3(4,4,4), b:2}``."""
        return "{" + ", ".join(f"{n}:{value_text(v)}" for n, v in self._values.items()) + "}"


class Array:
    """An array value: ``a[i]`` reads and writes an element."""

    __slots__ = ("_values",)
    __lnb_type__: ArrayType

    @classmethod
    def zero(cls) -> Array:
        kind = cls.__lnb_type__
        value = cls.__new__(cls)
        value._values = [zero_value(kind.element) for _ in range(kind.size)]
        return value

    def _index(self, index: Any) -> int:
        size = type(self).__lnb_type__.size
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
            raise InvalidArgumentError(f"array indices are integers, got {index!r}")
        if not 0 <= index < size:
            raise VectorIndexError(f"index {index} is outside an array of {size} elements")
        return int(index)

    def __getitem__(self, index: Any) -> Any:
        return self._values[self._index(index)]

    def __setitem__(self, index: Any, value: Any) -> None:
        element = type(self).__lnb_type__.element
        self._values[self._index(index)] = converted(element, value)

    def __len__(self) -> int:
        return type(self).__lnb_type__.size

    def copy(self) -> Array:
        value = type(self).__new__(type(self))
        value._values = [_copied(element) for element in self._values]
        return value

    def __repr__(self) -> str:
        """As luisa-python writes an array, ``print`` too: ``[5,32,6]``."""
        return f"[{','.join(value_text(v) for v in self._values)}]"


def _copied(value: Any) -> Any:
    return value.copy() if hasattr(type(value), "__lnb_type__") else value
