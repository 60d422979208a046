"""Matrix types under luisa-python's names (``float2x2``, ``float3x3``, ``float4x4``).

Square float32 matrices stored by columns, as in LuisaCompute: ``m[i]`` is column ``i``
(a ``float3`` for a ``float3x3``) and ``m[i][j]`` its row ``j``. ``m * v`` and ``m @ v``
multiply a column vector, ``m * m`` and ``m @ m`` are the matrix product, ``m * s`` and
``s * m`` scale, ``+``/``-`` work element by element on matrices of one size. The same
classes are the values of Python mode and of the host. Products, the determinant and
the inverse are computed with the operations, in the order, that the emitted C uses
(the formulas below generate both), so both modes give identical float32 results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels.lang.value_text import matrix_text
from luisa_nb.kernels.lang.vectors import Vector, VectorIndexError, value_type, vector_class
from luisa_nb.kernels.type_system import (
    MatrixType,
    PromotionError,
    ScalarType,
    VectorType,
    article,
    promote,
)

F32 = np.float32


def determinant_formula(columns: Sequence[Sequence[Any]]) -> Any:
    """The determinant of the matrix whose ``columns[c][r]`` is row ``r`` of column ``c``,
    expanded along the first row; works on anything with ``+``, ``-``, ``*`` and unary
    ``-`` (numpy float32 scalars, or C expression builders)."""
    size = len(columns)
    if size == 1:
        return columns[0][0]
    total = None
    for column in range(size):
        minor = [[columns[c][r] for r in range(1, size)] for c in range(size) if c != column]
        term = columns[column][0] * determinant_formula(minor)
        if total is None:
            total = term
        elif column % 2:
            total = total - term
        else:
            total = total + term
    return total


def cofactor_formula(columns: Sequence[Sequence[Any]], row: int, column: int) -> Any:
    """Element (``row``, ``column``) of the adjugate: the signed minor without row
    ``column`` and column ``row``."""
    size = len(columns)
    minor = [[columns[c][r] for r in range(size) if r != column] for c in range(size) if c != row]
    value = determinant_formula(minor)
    return -value if (row + column) % 2 else value


def inverse_formula(columns: Sequence[Sequence[Any]], scale: Any) -> list[list[Any]]:
    """The columns of the inverse: each adjugate element times ``scale`` (``1 / det``)."""
    size = len(columns)
    return [
        [cofactor_formula(columns, row, column) * scale for row in range(size)]
        for column in range(size)
    ]


def product_formula(columns: Sequence[Sequence[Any]], vector: Sequence[Any]) -> list[Any]:
    """``m * v``: row ``r`` is ``m[0][r] * v[0] + m[1][r] * v[1] + ...``, left to right."""
    size = len(columns)
    rows = []
    for row in range(size):
        total = columns[0][row] * vector[0]
        for column in range(1, size):
            total = total + columns[column][row] * vector[column]
        rows.append(total)
    return rows


def resized_formula(columns: Sequence[Sequence[Any]], size: int, zero: Any, one: Any) -> list:
    """A matrix of ``size`` from one of another size, as LuisaCompute converts: the
    upper-left block is kept, new elements come from the identity."""
    old = len(columns)
    return [
        [columns[c][r] if c < old and r < old else (one if r == c else zero) for r in range(size)]
        for c in range(size)
    ]


def _scalar_operand(value: Any, what: str) -> np.float32 | None:
    """``value`` as the float32 a matrix is scaled by, None if it is not a number."""
    typed = value_type(value)
    if typed is None or not isinstance(typed[0], ScalarType):
        return None
    try:
        element = promote(ScalarType.FLOAT32, typed[0], False, typed[1])
    except PromotionError as error:
        raise InvalidArgumentError(f"{what}: {error}") from None
    if element is not ScalarType.FLOAT32:
        raise InvalidArgumentError(
            f"{what}: matrices hold float32 elements and the result would be {element}; "
            f"convert the scalar with float(...)"
        )
    return F32(value)


def _type_name(value: Any) -> str:
    typed = value_type(value)
    if typed is None:
        return type(value).__name__
    return str(typed[0])


class Matrix:
    """Base class of the matrix types; ``__lnb_type__`` is the :class:`MatrixType`.
    ``_values[c]`` holds column ``c``; ``np.asarray(m)`` is the matrix as mathematics
    writes it (``a[row, column]``)."""

    __slots__ = ("_values",)
    __lnb_type__: ClassVar[MatrixType]
    __array_ufunc__ = None  # numpy scalars defer to our reflected operators

    def __init__(self, *arguments: Any) -> None:
        self._values = construct_columns(self.__lnb_type__, arguments)

    @classmethod
    def wrap(cls, values: np.ndarray) -> Matrix:
        """A matrix around ``values`` (float32 columns, not copied)."""
        matrix = object.__new__(cls)
        matrix._values = values
        return matrix

    def copy(self) -> Matrix:
        return self.wrap(self._values.copy())

    @classmethod
    def component_view(cls, array: np.ndarray) -> np.ndarray:
        """A writable (n, size, size) view of the columns of a buffer array of this type."""
        size = cls.__lnb_type__.size
        padded = 4 if size == 3 else size
        return array.view(np.float32).reshape(len(array), size, padded)[:, :, :size]

    def __repr__(self) -> str:
        return matrix_text(type(self).__name__, self._values)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._values.T.astype(dtype or np.float32)

    def __len__(self) -> int:
        return self.__lnb_type__.size

    def __iter__(self) -> Iterator[Vector]:
        return (self[index] for index in range(len(self)))

    def _index(self, index: Any) -> int:
        size = self.__lnb_type__.size
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
            raise VectorIndexError(f"{type(self).__name__} indices are integers, got {index!r}")
        if not 0 <= index < size:
            raise VectorIndexError(
                f"index {index} is outside {type(self).__name__}, which has {size} columns "
                f"(0 <= i < {size})"
            )
        return int(index)

    def __getitem__(self, index: Any) -> Vector:
        """Column ``index``; it shares the matrix's storage, so ``m[i][j] = x`` stores."""
        return vector_class(self.__lnb_type__.column).wrap(self._values[self._index(index)])

    def __setitem__(self, index: Any, value: Any) -> None:
        column = self.__lnb_type__.column
        kind = value_type(value)
        if kind is None or not (
            isinstance(kind[0], VectorType)
            and kind[0].length == column.length
            and kind[0].element is not ScalarType.BOOL
        ):
            raise InvalidArgumentError(
                f"a column of {type(self).__name__} takes {article(column)}, got "
                f"{_type_name(value)}"
            )
        self._values[self._index(index)] = np.asarray(value, dtype=np.float32)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def _failure(self, verb: str, left: Any, right: Any, why: str) -> InvalidArgumentError:
        return InvalidArgumentError(
            f"cannot {verb} {_type_name(left)} and {_type_name(right)}{why}"
        )

    def _product(self, other: Any, operator: str) -> Any:
        kind = self.__lnb_type__
        other_type = value_type(other)
        if other_type is not None and other_type[0] == kind:
            columns = [product_formula(self._values, column) for column in other._values]
            return self.wrap(np.array(columns, dtype=np.float32))
        if other_type is not None and other_type[0] == kind.column:
            rows = product_formula(self._values, other._values)
            return vector_class(kind.column).wrap(np.array(rows, dtype=np.float32))
        if operator == "*":
            scale = _scalar_operand(other, f"cannot multiply {kind} and {_type_name(other)}")
            if scale is not None:
                return self.wrap(self._values * scale)
        if other_type is None:
            return NotImplemented
        raise self._failure("multiply", self, other, multiply_hint(kind, other_type[0], operator))

    def __mul__(self, other: Any) -> Any:
        return self._product(other, "*")

    def __matmul__(self, other: Any) -> Any:
        return self._product(other, "@")

    def __rmul__(self, other: Any) -> Any:
        scale = _scalar_operand(
            other, f"cannot multiply {_type_name(other)} and {self.__lnb_type__}"
        )
        if scale is not None:
            return self.wrap(scale * self._values)
        return self._reflected_product(other, "*")

    def __rmatmul__(self, other: Any) -> Any:
        return self._reflected_product(other, "@")

    def _reflected_product(self, other: Any, operator: str) -> Any:
        other_type = value_type(other)
        if other_type is None:
            return NotImplemented
        hint = multiply_hint(other_type[0], self.__lnb_type__, operator)
        raise self._failure("multiply", other, self, hint)

    def _elementwise(self, other: Any, verb: str, function: Callable[..., Any]) -> Any:
        if value_type(other) is None:
            return NotImplemented
        if value_type(other)[0] != self.__lnb_type__:
            raise self._failure(verb, self, other, ": matrices combine element by element only "
                                "with matrices of the same size")  # fmt: skip
        return self.wrap(function(self._values, other._values))

    def __add__(self, other: Any) -> Any:
        return self._elementwise(other, "add", np.add)

    def __sub__(self, other: Any) -> Any:
        return self._elementwise(other, "subtract", np.subtract)

    def __radd__(self, other: Any) -> Any:
        if value_type(other) is None:
            return NotImplemented
        raise self._failure("add", other, self, ": matrices add only to matrices of one size")

    def __rsub__(self, other: Any) -> Any:
        if value_type(other) is None:
            return NotImplemented
        raise self._failure("subtract", other, self, ": matrices subtract only from matrices")

    def __truediv__(self, other: Any) -> Any:
        scale = _scalar_operand(other, f"cannot divide {self.__lnb_type__} by {_type_name(other)}")
        if scale is not None:
            return self.wrap(self._values / scale)
        if value_type(other) is None:
            return NotImplemented
        raise self._failure("divide", self, other, DIVISION_HINT)

    def __rtruediv__(self, other: Any) -> Any:
        if value_type(other) is None:
            return NotImplemented
        raise self._failure("divide", other, self, DIVISION_HINT)

    def __neg__(self) -> Matrix:
        return self.wrap(np.negative(self._values))


DIVISION_HINT = ": a matrix divides only by a scalar (each element is divided)"


def multiply_hint(left: Any, right: Any, operator: str) -> str:
    """Why ``left <operator> right`` is not a product of a matrix, for error messages."""
    if isinstance(right, MatrixType) and isinstance(left, VectorType):
        return (
            ": luisa-python multiplies a matrix by a column vector (m * v), not a row vector "
            "by a matrix; write transpose(m) * v"
        )
    matrix = next((kind for kind in (left, right) if isinstance(kind, MatrixType)), None)
    if matrix is None:
        return (
            ": @ multiplies a matrix by a matrix or a vector; use * for numbers, dot() for vectors"
        )
    if operator == "@" and ScalarType in (type(left), type(right)):
        return ": @ multiplies a matrix by a matrix or a vector; scale with *"
    return f": {matrix} multiplies {article(matrix)}, {article(matrix.column)} or a scalar"


def construct_columns(kind: MatrixType, arguments: tuple[Any, ...]) -> np.ndarray:
    """The columns of ``kind(*arguments)`` on the host: none (zeros), one number (the
    diagonal), ``size`` float vectors (the columns), ``size * size`` numbers (by columns)
    or a matrix of any size (resized as LuisaCompute resizes)."""
    size = kind.size
    if not arguments:
        return np.zeros((size, size), np.float32)
    typed = [value_type(argument) for argument in arguments]
    if len(arguments) == 1 and typed[0] is not None and isinstance(typed[0][0], MatrixType):
        source = arguments[0]._values
        return np.array(resized_formula(source, size, F32(0), F32(1)), dtype=np.float32)
    if all(t is not None and isinstance(t[0], ScalarType) for t in typed):
        if len(arguments) == 1:
            return np.diag(np.full(size, arguments[0], dtype=np.float32))
        if len(arguments) == size * size:
            values = [np.float32(argument) for argument in arguments]
            return np.array(values, dtype=np.float32).reshape(size, size)
    elif len(arguments) == size and all(t is not None and t[0] == kind.column for t in typed):
        return np.array([argument._values for argument in arguments], dtype=np.float32)
    names = ", ".join(_type_name(argument) for argument in arguments)
    raise InvalidArgumentError(f"{kind}() {CONSTRUCTOR_FORMS.format(kind=kind)}; got {names}")


CONSTRUCTOR_FORMS = (
    "takes no arguments (zeros), {kind.size}x{kind.size} numbers (column by column), "
    "{kind.size} {kind.column} columns, or a matrix"
)


def _matrix_class(size: int) -> type[Matrix]:
    kind = MatrixType(size)
    cls = type(str(kind), (Matrix,), {"__slots__": (), "__lnb_type__": kind})
    cls.__module__ = __name__
    cls.__doc__ = f"A {size}x{size} float32 matrix, stored by columns."
    return cls


float2x2 = _matrix_class(2)
float3x3 = _matrix_class(3)
float4x4 = _matrix_class(4)
MATRIX_CLASSES: tuple[type[Matrix], ...] = (float2x2, float3x3, float4x4)
_CLASS_OF_TYPE = {cls.__lnb_type__: cls for cls in MATRIX_CLASSES}


def matrix_class(kind: MatrixType) -> type[Matrix]:
    """The class of ``kind``."""
    return _CLASS_OF_TYPE[kind]


def composite_class(kind: VectorType | MatrixType) -> type[Vector] | type[Matrix]:
    """The class of a vector or matrix type."""
    return matrix_class(kind) if isinstance(kind, MatrixType) else vector_class(kind)


def _make_function(cls: type[Matrix]) -> Callable[..., Matrix]:
    def make(*arguments: Any) -> Matrix:
        return cls(*arguments)

    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    make.__doc__ = f"``{cls.__name__}(*arguments)``, as luisa-python's make_{cls.__name__}."
    return make


make_float2x2 = _make_function(float2x2)
make_float3x3 = _make_function(float3x3)
make_float4x4 = _make_function(float4x4)


def _matrix_argument(value: Any, name: str) -> Matrix:
    if not isinstance(value, Matrix):
        raise InvalidArgumentError(f"{name}() takes a matrix, got {_type_name(value)}")
    return value


def transpose(m: Matrix) -> Matrix:
    """The transposed matrix."""
    return _matrix_argument(m, "transpose").wrap(np.ascontiguousarray(m._values.T))


def determinant(m: Matrix) -> np.float32:
    """The determinant, a float32 (cofactor expansion along the first row)."""
    return F32(determinant_formula(_matrix_argument(m, "determinant")._values))


def inverse(m: Matrix) -> Matrix:
    """The inverse: the adjugate times ``1 / determinant(m)`` (inf or nan elements when
    the matrix is singular, as in C)."""
    columns = _matrix_argument(m, "inverse")._values
    with np.errstate(all="ignore"):
        scale = F32(1) / F32(determinant_formula(columns))
        return m.wrap(np.array(inverse_formula(columns, scale), dtype=np.float32))


MATRIX_FUNCTIONS = (make_float2x2, make_float3x3, make_float4x4, transpose, determinant, inverse)
