"""Small constructors of typed IR for the adjoint code: arithmetic that broadcasts a scalar
over a vector, zeros and ones, components, and component-wise construction."""

from __future__ import annotations

from collections.abc import Callable

from luisa_nb.kernels import ir
from luisa_nb.kernels.type_system import KernelType, MatrixType, ScalarType, VectorType

BOOL = ScalarType.BOOL


def is_differentiable(kind: object) -> bool:
    """Float scalars, float vectors and matrices carry gradients."""
    if isinstance(kind, ScalarType):
        return kind.is_float
    if isinstance(kind, MatrixType):
        return True
    return isinstance(kind, VectorType) and kind.element.is_float


def element_type(kind: KernelType) -> ScalarType:
    return kind.element if isinstance(kind, (VectorType, MatrixType)) else kind


def constant(kind: KernelType, value: float) -> ir.Expression:
    """``value`` as a scalar of ``kind``, every component of a vector of ``kind``, or
    every element of a matrix of ``kind``."""
    scalar = ir.Constant(element_type(kind), float(value))
    if isinstance(kind, MatrixType):
        return ir.Construct(kind, (constant(kind.column, value),) * kind.size)
    return scalar if isinstance(kind, ScalarType) else ir.Construct(kind, (scalar,))


def zero(kind: KernelType) -> ir.Expression:
    return constant(kind, 0.0)


def zero_of(kind: KernelType) -> ir.Expression:
    """The zero of any scalar or vector type (false for bools)."""
    element = element_type(kind)
    value = False if element is BOOL else 0.0 if element.is_float else 0
    scalar = ir.Constant(element, value)
    return scalar if isinstance(kind, ScalarType) else ir.Construct(kind, (scalar,))


def is_zero(expression: ir.Expression) -> bool:
    if isinstance(expression, ir.Constant):
        return expression.value == 0
    if isinstance(expression, ir.Construct) and len(expression.arguments) == 1:
        return is_zero(expression.arguments[0])
    return False


def broadcast(expression: ir.Expression, kind: KernelType) -> ir.Expression:
    """A scalar spread over vector ``kind`` (a value of ``kind`` stays as it is)."""
    if expression.type == kind or not isinstance(kind, VectorType):
        return expression
    return ir.Construct(kind, (expression,))


def _shape(left: ir.Expression, right: ir.Expression) -> KernelType:
    return left.type if isinstance(left.type, VectorType) else right.type


def binary(operator: str, left: ir.Expression, right: ir.Expression) -> ir.Expression:
    """``left <operator> right`` for arithmetic on floats, a scalar broadcast over a vector;
    adding or subtracting a zero constant is skipped."""
    kind = _shape(left, right)
    if operator == "add" and is_zero(left):
        return broadcast(right, kind)
    if operator in ("add", "sub") and is_zero(right):
        return broadcast(left, kind)
    return ir.Binary(kind, operator, broadcast(left, kind), broadcast(right, kind))


def add(left: ir.Expression, right: ir.Expression) -> ir.Expression:
    return binary("add", left, right)


def sub(left: ir.Expression, right: ir.Expression) -> ir.Expression:
    return binary("sub", left, right)


def mul(left: ir.Expression, right: ir.Expression) -> ir.Expression:
    return binary("mul", left, right)


def div(left: ir.Expression, right: ir.Expression) -> ir.Expression:
    return binary("truediv", left, right)


def neg(operand: ir.Expression) -> ir.Expression:
    return ir.Unary(operand.type, "neg", operand)


def call(function: str, *arguments: ir.Expression) -> ir.Expression:
    """A math builtin whose result has the type of its first vector (or first) argument."""
    kinds = [a.type for a in arguments if isinstance(a.type, VectorType)]
    kind = kinds[0] if kinds else arguments[0].type
    return ir.Call(kind, function, tuple(broadcast(a, kind) for a in arguments))


def scalar_call(function: str, *arguments: ir.Expression) -> ir.Expression:
    """A vector builtin with a scalar result (``dot``, ``length``)."""
    return ir.Call(element_type(arguments[0].type), function, arguments)


def compare(operator: str, left: ir.Expression, right: ir.Expression) -> ir.Expression:
    """A scalar comparison."""
    return ir.Binary(BOOL, operator, left, right)


def select(condition: ir.Expression, if_true: ir.Expression, if_false: ir.Expression):
    """``if_true if condition else if_false`` for a scalar condition."""
    kind = _shape(if_true, if_false)
    return ir.Select(kind, condition, broadcast(if_true, kind), broadcast(if_false, kind))


def length_of(kind: KernelType) -> int:
    return kind.length if isinstance(kind, VectorType) else 1


def component(expression: ir.Expression, index: int) -> ir.Expression:
    """Component ``index`` of a vector (the value itself for a scalar)."""
    if not isinstance(expression.type, VectorType):
        return expression
    if isinstance(expression, ir.Construct) and len(expression.arguments) == 1:
        return expression.arguments[0]
    element = expression.type.element
    return ir.Element(element, expression, ir.Constant(ScalarType.INT32, index))


def componentwise(kind: KernelType, make: Callable[[int], ir.Expression]) -> ir.Expression:
    """A value of ``kind`` whose component ``k`` is ``make(k)`` (a scalar: ``make(0)``)."""
    if not isinstance(kind, VectorType):
        return make(0)
    return ir.Construct(kind, tuple(make(k) for k in range(kind.length)))


def component_sum(expression: ir.Expression) -> ir.Expression:
    """The sum of a vector's components (a scalar as it is)."""
    if not isinstance(expression.type, VectorType):
        return expression
    total = component(expression, 0)
    for index in range(1, expression.type.length):
        total = ir.Binary(total.type, "add", total, component(expression, index))
    return total


def column(matrix: ir.Expression, index: int) -> ir.Expression:
    """Column ``index`` of a matrix."""
    return ir.Element(matrix.type.column, matrix, ir.Constant(ScalarType.INT32, index))


def by_columns(kind: MatrixType, make: Callable[[int], ir.Expression]) -> ir.Expression:
    """A matrix of ``kind`` whose column ``j`` is ``make(j)``."""
    return ir.Construct(kind, tuple(make(j) for j in range(kind.size)))


def matrix_call(function: str, matrix: ir.Expression) -> ir.Expression:
    """``transpose`` or ``inverse`` of a matrix."""
    return ir.Call(matrix.type, function, (matrix,))


def frobenius(left: ir.Expression, right: ir.Expression) -> ir.Expression:
    """The sum of the element-wise products of two matrices."""
    total = scalar_call("dot", column(left, 0), column(right, 0))
    for j in range(1, left.type.size):
        total = add(total, scalar_call("dot", column(left, j), column(right, j)))
    return total
