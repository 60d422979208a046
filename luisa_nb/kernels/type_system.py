"""Kernel types, the types of launch arguments, and the promotion rules shared by every
emitter. Nothing here knows about C or Python mode.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
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


VECTOR_ELEMENTS = (ScalarType.BOOL, ScalarType.INT32, ScalarType.UINT32, ScalarType.FLOAT32)
ELEMENT_NAMES = {  # luisa-python's names of the scalar types
    ScalarType.BOOL: "bool",
    ScalarType.INT32: "int",
    ScalarType.UINT32: "uint",
    ScalarType.INT64: "long",
    ScalarType.UINT64: "ulong",
    ScalarType.FLOAT32: "float",
}


def luisa_type_name(kind: Any) -> str:
    """A kernel type as luisa-python 0.3.7 names it in a struct's or array's ``repr``:
    ``int``, ``uint``, ``float3``, ``float3x3``, and a nested struct or array by its
    ``repr``."""
    if isinstance(kind, ScalarType):
        return ELEMENT_NAMES.get(kind, kind.value)
    if isinstance(kind, (VectorType, MatrixType)):
        return str(kind)
    return repr(kind)


@dataclass(frozen=True)
class VectorType:
    """A vector of 2 to 4 components of bool, int32, uint32 or float32 (luisa-python's
    ``float3`` ...). Laid out as in LuisaCompute: 3-component vectors take the room and
    alignment of 4 (a ``float3`` is 16 bytes)."""

    element: ScalarType
    length: int

    @property
    def fields(self) -> tuple[str, ...]:
        return ("x", "y", "z", "w")[: self.length]

    @property
    def padded_length(self) -> int:
        return 4 if self.length == 3 else self.length

    @property
    def alignment(self) -> int:
        return self.element.dtype.itemsize * self.padded_length

    @property
    def dtype(self) -> np.dtype:
        """A structured dtype with fields x, y, ... and the LuisaCompute size."""
        size = self.element.dtype.itemsize
        return np.dtype(
            {
                "names": list(self.fields),
                "formats": [self.element.dtype] * self.length,
                "offsets": [size * index for index in range(self.length)],
                "itemsize": self.alignment,
                "aligned": True,
            }
        )

    def __str__(self) -> str:
        return f"{ELEMENT_NAMES[self.element]}{self.length}"


@dataclass(frozen=True)
class MatrixType:
    """A square float32 matrix of ``size`` columns (column-major, as in luisa-python)."""

    size: int

    @property
    def element(self) -> ScalarType:
        return ScalarType.FLOAT32

    @property
    def column(self) -> VectorType:
        return VectorType(ScalarType.FLOAT32, self.size)

    @property
    def alignment(self) -> int:
        return self.column.alignment

    @property
    def dtype(self) -> np.dtype:
        """A structured dtype with one field, ``columns``: ``size`` column vectors."""
        column = self.column
        return np.dtype(
            {
                "names": ["columns"],
                "formats": [(column.dtype, (self.size,))],
                "itemsize": column.alignment * self.size,
                "aligned": True,
            }
        )

    def __str__(self) -> str:
        return f"float{self.size}x{self.size}"


IMAGE_KINDS = {"float": ScalarType.FLOAT32, "int": ScalarType.INT32, "uint": ScalarType.UINT32}


SAMPLER_FILTERS = ("point", "linear")
SAMPLER_ADDRESSES = ("edge", "repeat", "mirror", "zero")


@dataclass(frozen=True)
class Sampler:
    """How a bindless array's slot samples its image: ``filter`` "point" or "linear",
    ``address`` "edge", "repeat", "mirror" or "zero" (see ``c.bindless``)."""

    filter: str = "linear"
    address: str = "repeat"

    def __str__(self) -> str:
        return f"{self.filter}/{self.address}"


@dataclass(frozen=True)
class ImageType:
    """A 2D image as kernels see it: ``width`` x ``height`` texels of ``channels`` (1, 2
    or 4) values of ``kind`` (float32, int32 or uint32), each channel stored as the numpy
    dtype named ``storage``; texel (x, y) starts at channel ``(y * width + x) * channels``.
    A 3D image has a ``depth`` too, and texel (x, y, z) starts at channel
    ``((z * height + y) * width + x) * channels``. The size is part of the type: a kernel
    is compiled once per image size."""

    kind: ScalarType
    channels: int
    storage: str
    width: int
    height: int
    depth: int = 0  # a 3D image's depth; 0 for 2D images
    sampler: Sampler | None = None  # its bindless slot's sampler; None outside bindless arrays

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of one stored channel."""
        return np.dtype(self.storage)

    @property
    def normalized(self) -> bool:
        """Whether float texels are stored as unsigned normalized integers (byte, short)."""
        return self.kind.is_float and self.dtype.kind == "u"

    @property
    def texel(self) -> ScalarType | VectorType:
        """What ``read`` gives and ``write`` takes: the kind, or a vector of it."""
        return self.kind if self.channels == 1 else VectorType(self.kind, self.channels)

    @property
    def size(self) -> tuple[int, ...]:
        """``(width, height)``, or ``(width, height, depth)`` for a 3D image."""
        return (self.width, self.height, self.depth) if self.depth else (self.width, self.height)

    def __str__(self) -> str:
        size = "x".join(map(str, self.size))
        sampled = f", {self.sampler}" if self.sampler else ""
        return f"image{'3d' if self.depth else ''}[{self.texel}, {self.storage}, {size}{sampled}]"


def is_image_like(value: Any) -> bool:
    """Duck typing: a buffer-like object whose ``__lnb_image__`` is true."""
    return bool(getattr(value, "__lnb_image__", False)) and is_buffer_like(value)


def image_type(image: Any) -> ImageType:
    """The :class:`ImageType` of an image object (``kind``, ``channels``, ``width``,
    ``height`` and a ``dtype`` of its stored channels)."""
    return ImageType(
        IMAGE_KINDS[image.kind],
        image.channels,
        image.dtype.name,
        image.width,
        image.height,
        getattr(image, "depth", None) or 0,
    )


@dataclass(frozen=True)
class IndirectType:
    """An indirect dispatch buffer as kernels see it: a buffer of uint32 words that
    ``set_dispatch_count`` and ``set_kernel`` fill (see ``kernels/indirect.py`` for the
    layout). Its capacity is not part of the type: the buffer's word count is checked."""

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.uint32)

    def __str__(self) -> str:
        return "indirect dispatch buffer"


def is_indirect_like(value: Any) -> bool:
    """Duck typing: ``__lnb_indirect__`` is true and ``memory`` is the buffer of words a
    kernel writes (``runtime.IndirectDispatchBuffer``)."""
    return bool(getattr(value, "__lnb_indirect__", False))


VECTOR_TYPES = tuple(
    VectorType(element, length) for element in VECTOR_ELEMENTS for length in (2, 3, 4)
)
MATRIX_TYPES = tuple(MatrixType(size) for size in (2, 3, 4))
INT3 = VectorType(ScalarType.INT32, 3)
UINT3 = VectorType(ScalarType.UINT32, 3)

KernelType = ScalarType | VectorType | MatrixType


@dataclass(frozen=True)
class BufferType:
    """The type of a buffer argument: a 1-D array of ``element``; an image is a buffer of
    its stored channels whose element is its :class:`ImageType`."""

    element: KernelType | ImageType | IndirectType

    @property
    def dtype(self) -> np.dtype:
        return self.element.dtype

    @classmethod
    def of_dtype(cls, dtype: np.dtype) -> BufferType:
        """The buffer type of a numpy dtype; ``ValueError`` if kernels cannot use it. A
        struct or array dtype carries its type in ``dtype.metadata["lnb_type"]``."""
        aggregate = (dtype.metadata or {}).get("lnb_type")
        if aggregate is not None:
            return cls(aggregate)
        known = _BUFFER_TYPE_OF_DTYPE.get(dtype)
        return known if known is not None else cls(ScalarType.from_dtype(dtype))

    def __str__(self) -> str:
        return f"buffer[{self.element}]"


@dataclass(frozen=True)
class BindlessType:
    """A bindless array as kernels see it: its emplaced resources in ``(slot, kind)``
    order, each as ``(slot, type, size)``: a :class:`BufferType` (of an element or of an
    :class:`ImageType` with the image's :class:`Sampler`) and the element count. A slot
    holds up to one resource of each kind (see :func:`resource_kind_of`), so it may
    appear up to three times. The resources are part of the type: a kernel is compiled
    once per set of resources."""

    entries: tuple[tuple[int, BufferType, int], ...]

    def __str__(self) -> str:
        listed = ", ".join(f"{slot}: {kind}" for slot, kind, _ in self.entries)
        return f"bindless[{listed}]"


RESOURCE_KINDS = ("buffer", "texture2d", "texture3d")  # the entries of a bindless slot


def resource_kind_of(element: Any) -> str:
    """The kind of bindless slot entry (:data:`RESOURCE_KINDS`) a buffer slot of
    ``element`` type fills."""
    if not isinstance(element, ImageType):
        return "buffer"
    return "texture3d" if element.depth else "texture2d"


def is_bindless_like(value: Any) -> bool:
    """Duck typing: ``__lnb_bindless__`` is true, ``resources()`` gives the emplaced
    buffers and images by ``(slot, kind)`` (kind in :data:`RESOURCE_KINDS`),
    ``samplers()`` the images' samplers by ``(slot, kind)`` and ``views()`` the resources
    in sorted ``(slot, kind)`` order."""
    return bool(getattr(value, "__lnb_bindless__", False))


_BUFFER_TYPE_OF_DTYPE = {
    t.dtype: BufferType(t) for t in (*ScalarType, *VECTOR_TYPES, *MATRIX_TYPES)
}

INT32_RANGE = (-(2**31), 2**31 - 1)


def is_buffer_like(value: Any) -> bool:
    """Duck typing: ``__lnb_buffer__`` is true and ``dtype`` is a numpy dtype."""
    return bool(getattr(value, "__lnb_buffer__", False)) and isinstance(
        getattr(value, "dtype", None), np.dtype
    )


def argument_type(value: Any) -> ScalarType | VectorType | MatrixType | BufferType:
    """The kernel type of a launch argument.

    ``bool`` -> bool, ``int`` -> int32 (it must fit), ``float`` -> float32, numpy scalars
    keep their dtype, vectors (``float3(1, 2, 3)``) and matrices their type, buffer-like
    objects give a :class:`BufferType` (of a vector or matrix type when the dtype is
    ``dtype_of`` that type; of an :class:`ImageType` for images, of an
    :class:`IndirectType` for indirect dispatch buffers).
    """
    kind = type(value)
    if kind is float:
        return ScalarType.FLOAT32
    value_type = getattr(kind, "__lnb_type__", None)
    if isinstance(value_type, (VectorType, MatrixType)) or is_aggregate_type(value_type):
        return value_type
    if is_image_like(value):
        return BufferType(image_type(value))
    if is_indirect_like(value):
        return BufferType(IndirectType())
    if is_bindless_like(value):
        samplers = value.samplers()
        entries = []
        for entry, resource in sorted(value.resources().items()):
            slot = entry[0]
            kind = argument_type(resource)
            if isinstance(kind.element, ImageType):
                kind = BufferType(replace(kind.element, sampler=samplers.get(entry, Sampler())))
            entries.append((slot, kind, int(resource.size)))
        return BindlessType(tuple(entries))
    if is_buffer_like(value):
        try:
            return BufferType.of_dtype(value.dtype)
        except ValueError as error:
            raise KernelArgumentError(
                f"buffer argument {value!r}: {error}, or a vector dtype made by "
                f"dtype_of(float3) ..."
            ) from None
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
        f"kernel arguments must be buffers, bool/int/float scalars, vectors, matrices or "
        f"structs, got "
        f"{type(value).__name__} {value!r:.60}"
    )


def article(kind: object) -> str:
    """``kind`` as text after its indefinite article: "an int32", "a float3"."""
    text = str(kind)
    return f"{'an' if text[:1] in ('a', 'e', 'i', 'o') else 'a'} {text}"


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


_C_SIGN_MIXING: ContextVar[bool] = ContextVar("c_sign_mixing", default=False)


@contextmanager
def c_sign_mixing(enabled: bool = True) -> Iterator[None]:
    """While the block runs (with ``enabled``), :func:`promote` combines signed with
    unsigned integers as C does instead of rejecting them: the kernel rules of
    luisa-python turn this on while a kernel is typed and while Python mode runs it."""
    token = _C_SIGN_MIXING.set(enabled)
    try:
        yield
    finally:
        _C_SIGN_MIXING.reset(token)


_LUISA_TYPES: ContextVar[bool | None] = ContextVar("luisa_types", default=None)
_host_luisa_types = [False]  # a luisa_nb.luisa session's host code, outside kernels


@contextmanager
def luisa_types(enabled: bool = True) -> Iterator[None]:
    """While the block runs (with ``enabled``), types follow luisa-python 0.3.7 where it
    converts implicitly: :func:`assignable` lets any number be stored into any numeric
    place (converted as a C cast); host integer vectors divide as C divides (see
    :func:`host_vectors_divide_as_integers`). Kernel rules set it while a kernel is typed and while
    Python mode runs it; elsewhere :func:`set_host_luisa_types` decides."""
    token = _LUISA_TYPES.set(enabled)
    try:
        yield
    finally:
        _LUISA_TYPES.reset(token)


def set_host_luisa_types(enabled: bool) -> None:
    """Whether host code outside any kernel rules follows :func:`luisa_types`: on while a
    ``luisa_nb.luisa`` session is open (``init()`` to ``del_device()``), as host vectors
    in luisa-python divide as integers."""
    _host_luisa_types[0] = enabled


def luisa_types_active() -> bool:
    """Whether :func:`luisa_types` is on (in a kernel being typed or run, or host code)."""
    enabled = _LUISA_TYPES.get()
    return _host_luisa_types[0] if enabled is None else enabled


def host_vectors_divide_as_integers() -> bool:
    """Whether host code (no kernel rules in force) follows luisa-python's host vectors,
    where ``/`` on integer vectors gives C's truncated quotient (``int2(3) / int2(2) ==
    int2(1, 1)``); in its kernels, as for scalars, ``/`` gives floats."""
    return _LUISA_TYPES.get() is None and _host_luisa_types[0]


def promote(left: ScalarType, right: ScalarType, left_weak: bool, right_weak: bool) -> ScalarType:
    """The common type of two numeric operands.

    A weak operand (a Python literal or captured Python number) adopts the other
    operand's type; int with float gives the float; int32 with int64 gives int64;
    float32 with float64 gives float64. Mixing signed with unsigned is rejected, except
    under :func:`c_sign_mixing`: then, as in C, the unsigned type wins unless the signed
    one is wider (int32 with uint32 gives uint32, int64 with uint32 gives int64).
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
        if _C_SIGN_MIXING.get():
            signed, unsigned = _signed_of(left, right), _unsigned_of(left, right)
            return signed if signed.bits > unsigned.bits else unsigned
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
    into uint64; a weak literal into any type that represents it; under
    :func:`luisa_types`, any number into any numeric type.
    """
    if target == value:
        return True
    if value.is_numeric and target.is_numeric and luisa_types_active():
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


COMPARISON_OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge")
BOOL_OPERATORS = ("bitand", "bitor", "bitxor", "eq", "ne")
BITWISE_OPERATORS = ("bitand", "bitor", "bitxor", "lshift", "rshift")
OPERATOR_VERBS = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "divide",
    "floordiv": "floor-divide",
    "mod": "take the remainder of",
    "div": "divide",
    "rem": "take the remainder of",
    "pow": "raise",
    "select": "select between",
}


def shape_of(kernel_type: KernelType, element: ScalarType) -> ScalarType | VectorType:
    """A scalar or vector type shaped like ``kernel_type`` holding ``element``."""
    if isinstance(kernel_type, VectorType):
        return VectorType(element, kernel_type.length)
    return element


def is_aggregate_type(kernel_type: Any) -> bool:
    """Whether ``kernel_type`` is a struct or array type (``aggregates``)."""
    return getattr(kernel_type, "aggregate", False) is True


def is_composite(kernel_type: Any) -> bool:
    """Whether ``kernel_type`` is a vector or a matrix."""
    return isinstance(kernel_type, (VectorType, MatrixType))


def element_of(kernel_type: KernelType) -> ScalarType:
    return kernel_type if isinstance(kernel_type, ScalarType) else kernel_type.element


def elementwise_types(
    operator: str,
    left: ScalarType | VectorType,
    right: ScalarType | VectorType,
    left_weak: bool = False,
    right_weak: bool = False,
) -> tuple[ScalarType | VectorType, ScalarType | VectorType]:
    """(operand type, result type) of ``operator`` ("add", "lt", ...) applied component by
    component to two operands of which at least one is a vector; a scalar is broadcast.
    Elements promote as scalars do. :class:`PromotionError` says why they do not combine.
    """
    verb = OPERATOR_VERBS.get(operator, "compare" if operator in COMPARISON_OPERATORS else "")
    what = f"cannot {verb or 'apply ' + operator + ' to'} {left} and {right}"
    lengths = {t.length for t in (left, right) if isinstance(t, VectorType)}
    if len(lengths) > 1:
        raise PromotionError(f"{what}: the vectors have different lengths")
    length = lengths.pop()
    left_element, right_element = element_of(left), element_of(right)
    if ScalarType.BOOL in (left_element, right_element):
        if left_element == right_element and operator in (*BOOL_OPERATORS, "select"):
            operand = VectorType(ScalarType.BOOL, length)
            return operand, operand
        raise PromotionError(f"{what}: bool values take no part in arithmetic; convert them")
    try:
        element = promote(left_element, right_element, left_weak, right_weak)
    except PromotionError as error:
        raise PromotionError(f"{what}: {error}") from None
    if element not in VECTOR_ELEMENTS:
        raise PromotionError(
            f"{what}: vectors hold 32-bit elements and the result would be {element}; "
            f"convert the scalar first (float(...), int(...))"
        )
    if operator in BITWISE_OPERATORS and not element.is_integer:
        raise PromotionError(f"{what}: bitwise operators need integer operands")
    if operator == "pow" and not element.is_float:
        raise PromotionError(
            f"{what}: ** on vectors needs float vectors; convert with float{length}(...)"
        )
    if operator == "truediv":
        element = true_division_type(element)
    operand = VectorType(element, length)
    if operator in COMPARISON_OPERATORS:
        return operand, VectorType(ScalarType.BOOL, length)
    return operand, operand
