"""Math functions kernels may call, for scalars and vectors (component-wise where
luisa-python is). The compiler recognises them by identity; Python mode runs them as
written. Operands combine by the kernel's rules (``type_system``), not NumPy's, and
float32 math stays float32, so both modes compute the same values (transcendental
functions may differ in the last bit between libm and NumPy).
"""

from __future__ import annotations

import builtins as python_builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.kernels.lang.vectors import Vector, components_of, value_type, vector_class
from luisa_nb.kernels.type_system import (
    KernelType,
    PromotionError,
    ScalarType,
    VectorType,
    elementwise_types,
    promote,
)


def operand_type(values: tuple[Any, ...], name: str) -> KernelType:
    """The common type of a builtin's operands, as the compiler types it."""
    typed = [value_type(value) for value in values]
    if python_builtins.any(t is None for t in typed):
        kinds = ", ".join(type(value).__name__ for value in values)
        raise InvalidArgumentError(f"{name}() takes numbers and vectors, got {kinds}")
    result, weak = typed[0]
    try:
        for kind, operand_weak in typed[1:]:
            if isinstance(result, VectorType) or isinstance(kind, VectorType):
                result, _ = elementwise_types("select", result, kind, weak, operand_weak)
            elif not (result is kind is ScalarType.BOOL):
                result = promote(result, kind, weak, operand_weak)
            weak = weak and operand_weak
    except PromotionError as error:
        raise InvalidArgumentError(f"{name}(): {error}") from None
    return result


def float_type(kind: KernelType) -> KernelType:
    """Float functions: floats keep their type, integers become float32."""
    if isinstance(kind, VectorType):
        return VectorType(ScalarType.FLOAT32, kind.length)
    return kind if kind.is_float else ScalarType.FLOAT32


def apply(
    function: Callable[..., Any],
    values: tuple[Any, ...],
    name: str,
    floating: bool = True,
) -> Any:
    """``function`` on numpy operands of the common (float) type of ``values``; the
    result is a numpy scalar or a vector of the result dtype."""
    kind = operand_type(values, name)
    if floating:
        kind = float_type(kind)
    element = kind.element if isinstance(kind, VectorType) else kind
    if isinstance(kind, VectorType):
        result = function(*(components_of(value, element.dtype) for value in values))
        result_type = VectorType(ScalarType.from_dtype(result.dtype), kind.length)
        return vector_class(result_type).wrap(result)
    return function(*(element.dtype.type(value) for value in values))


def _unary(numpy_function: Callable[..., Any], name: str, doc: str) -> Callable[[Any], Any]:
    def function(value: Any) -> Any:
        return apply(numpy_function, (value,), name)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


def _round_half_away(value: Any) -> Any:
    truncated = np.trunc(value)
    away = np.abs(value - truncated) >= value.dtype.type(0.5)
    return np.where(away, truncated + np.copysign(value.dtype.type(1), value), truncated)[()]


def _rsqrt(value: Any) -> Any:
    return value.dtype.type(1) / np.sqrt(value)


def _fract(value: Any) -> Any:
    return value - np.floor(value)


def _exp10(value: Any) -> Any:
    return np.power(value.dtype.type(10), value)


sqrt = _unary(np.sqrt, "sqrt", "Square root; integers are converted to float32.")
sin = _unary(np.sin, "sin", "Sine of an angle in radians.")
cos = _unary(np.cos, "cos", "Cosine of an angle in radians.")
tan = _unary(np.tan, "tan", "Tangent of an angle in radians.")
asin = _unary(np.arcsin, "asin", "Arc sine, in radians.")
acos = _unary(np.arccos, "acos", "Arc cosine, in radians.")
atan = _unary(np.arctan, "atan", "Arc tangent, in radians.")
sinh = _unary(np.sinh, "sinh", "Hyperbolic sine.")
cosh = _unary(np.cosh, "cosh", "Hyperbolic cosine.")
tanh = _unary(np.tanh, "tanh", "Hyperbolic tangent.")
asinh = _unary(np.arcsinh, "asinh", "Inverse hyperbolic sine.")
acosh = _unary(np.arccosh, "acosh", "Inverse hyperbolic cosine.")
atanh = _unary(np.arctanh, "atanh", "Inverse hyperbolic tangent.")
exp = _unary(np.exp, "exp", "``e`` raised to ``value``.")
exp2 = _unary(np.exp2, "exp2", "2 raised to ``value``.")
exp10 = _unary(_exp10, "exp10", "10 raised to ``value`` (``pow(10, value)``).")
log = _unary(np.log, "log", "Natural logarithm.")
log2 = _unary(np.log2, "log2", "Base-2 logarithm.")
log10 = _unary(np.log10, "log10", "Base-10 logarithm.")
rsqrt = _unary(_rsqrt, "rsqrt", "``1 / sqrt(value)``.")
floor = _unary(np.floor, "floor", "Largest integral value not above ``value``, as a float.")
ceil = _unary(np.ceil, "ceil", "Smallest integral value not below ``value``, as a float.")
trunc = _unary(np.trunc, "trunc", "``value`` rounded toward zero, as a float.")
round = _unary(_round_half_away, "round", "Nearest integral value; halves round away from 0.")
fract = _unary(_fract, "fract", "``value - floor(value)``.")


def isnan(value: Any) -> Any:
    """Whether ``value`` (or each component) is NaN."""
    return apply(np.isnan, (value,), "isnan")


def isinf(value: Any) -> Any:
    """Whether ``value`` (or each component) is infinite."""
    return apply(np.isinf, (value,), "isinf")


def saturate(value: Any) -> Any:
    """``clamp(value, 0, 1)``."""
    return apply(lambda v: np.minimum(np.maximum(v, 0), 1), (value,), "saturate")


def sign(value: Any) -> Any:
    """``copysign(1, value)``: 1.0 or -1.0 by the sign bit."""
    return apply(lambda v: np.copysign(v.dtype.type(1), v), (value,), "sign")


def radians(value: Any) -> Any:
    """Degrees to radians."""
    return apply(lambda v: v * v.dtype.type(math.pi / 180), (value,), "radians")


def degrees(value: Any) -> Any:
    """Radians to degrees."""
    return apply(lambda v: v * v.dtype.type(180 / math.pi), (value,), "degrees")


degree = degrees


def pow(base: Any, exponent: Any) -> Any:
    """``base ** exponent`` in floating point."""
    return apply(np.power, (base, exponent), "pow")


def atan2(y: Any, x: Any) -> Any:
    """The angle of the point (x, y), in radians."""
    return apply(np.arctan2, (y, x), "atan2")


def copysign(magnitude: Any, sign_source: Any) -> Any:
    """``magnitude`` with the sign of ``sign_source``."""
    return apply(np.copysign, (magnitude, sign_source), "copysign")


def fmod(x: Any, y: Any) -> Any:
    """``x - y * trunc(x / y)`` (luisa.util's fmod)."""
    return apply(lambda a, b: a - b * np.trunc(a / b), (x, y), "fmod")


def mod(x: Any, y: Any) -> Any:
    """``x - y * floor(x / y)`` (luisa.util's mod)."""
    return apply(lambda a, b: a - b * np.floor(a / b), (x, y), "mod")


def step(edge: Any, x: Any) -> Any:
    """0 where ``x < edge``, else 1 (as floats)."""
    return apply(
        lambda e, v: np.where(v < e, e.dtype.type(0), e.dtype.type(1))[()], (edge, x), "step"
    )


def lerp(a: Any, b: Any, t: Any) -> Any:
    """``a + t * (b - a)``."""
    return apply(lambda x, y, s: x + s * (y - x), (a, b, t), "lerp")


def _smoothstep(edge0: Any, edge1: Any, x: Any) -> Any:
    zero, one = x.dtype.type(0), x.dtype.type(1)
    t = (x - edge0) / (edge1 - edge0)
    t = np.where(t < zero, zero, np.where(t > one, one, t))
    return (t * t * (x.dtype.type(3) - x.dtype.type(2) * t))[()]


def smoothstep(edge0: Any, edge1: Any, x: Any) -> Any:
    """Hermite interpolation from 0 at ``edge0`` to 1 at ``edge1``."""
    return apply(_smoothstep, (edge0, edge1, x), "smoothstep")


def _fma(a: Any, b: Any, c: Any) -> Any:
    wide = np.float64 if a.dtype == np.float32 else np.longdouble
    return (a.astype(wide) * b.astype(wide) + c.astype(wide)).astype(a.dtype)[()]


def fma(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` with one rounding (Python mode: computed in double, then rounded)."""
    return apply(_fma, (a, b, c), "fma")


def min(first: Any, second: Any, *others: Any) -> Any:
    """The smallest argument (component-wise), in the arguments' common type."""
    values = (first, second, *others)
    return apply(lambda *v: _fold(np.minimum, v), values, "min", floating=False)


def max(first: Any, second: Any, *others: Any) -> Any:
    """The largest argument (component-wise), in the arguments' common type."""
    values = (first, second, *others)
    return apply(lambda *v: _fold(np.maximum, v), values, "max", floating=False)


def _fold(function: Callable[[Any, Any], Any], values: tuple[Any, ...]) -> Any:
    result = values[0]
    for value in values[1:]:
        result = function(result, value)
    return result


def clamp(value: Any, low: Any, high: Any) -> Any:
    """``min(max(value, low), high)``."""
    return apply(
        lambda v, lo, hi: np.minimum(np.maximum(v, lo), hi),
        (value, low, high),
        "clamp",
        floating=False,
    )


def abs(value: Any) -> Any:
    """Absolute value, in the argument's type."""
    return apply(np.abs, (value,), "abs", floating=False)


def _float_vector(value: Any, name: str) -> np.ndarray:
    kind = value_type(value)
    if kind is None or not isinstance(kind[0], VectorType) or not kind[0].element.is_float:
        raise InvalidArgumentError(f"{name}() takes float vectors, got {value!r:.60}")
    return value._values


def _dot(a: np.ndarray, b: np.ndarray) -> np.floating:
    """Sum of products from left to right, in float32 (as the C computes it)."""
    products = a * b
    total = products[0]
    for product in products[1:]:
        total = total + product
    return total


def dot(a: Any, b: Any) -> np.float32:
    """The dot product of two float vectors."""
    return _dot(_float_vector(a, "dot"), _float_vector(b, "dot"))


def length_squared(v: Any) -> np.float32:
    """``dot(v, v)``."""
    values = _float_vector(v, "length_squared")
    return _dot(values, values)


def length(v: Any) -> np.float32:
    """``sqrt(dot(v, v))``."""
    return np.sqrt(length_squared(v))


def distance(a: Any, b: Any) -> np.float32:
    """``length(a - b)``."""
    return length(a - b)


def distance_squared(a: Any, b: Any) -> np.float32:
    """``length_squared(a - b)``."""
    return length_squared(a - b)


def normalize(v: Any) -> Vector:
    """``v * (1 / sqrt(dot(v, v)))``."""
    values = _float_vector(v, "normalize")
    scale = np.float32(1) / np.sqrt(_dot(values, values))
    return type(v).wrap(values * scale)


def cross(a: Any, b: Any) -> Vector:
    """The cross product of two float3."""
    x, y = _float_vector(a, "cross"), _float_vector(b, "cross")
    values = np.array(
        [x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]],
        dtype=np.float32,
    )
    return type(a).wrap(values)


def reflect(incident: Any, normal: Any) -> Vector:
    """``incident - 2 * dot(normal, incident) * normal``."""
    i, n = _float_vector(incident, "reflect"), _float_vector(normal, "reflect")
    scale = np.float32(2) * _dot(n, i)
    return type(incident).wrap(i - scale * n)


def faceforward(normal: Any, incident: Any, reference: Any) -> Vector:
    """``normal`` if ``dot(reference, incident) < 0``, else ``-normal``."""
    n = _float_vector(normal, "faceforward")
    i, r = _float_vector(incident, "faceforward"), _float_vector(reference, "faceforward")
    return type(normal).wrap(n.copy() if _dot(r, i) < 0 else -n)


def _bool_vector(value: Any, name: str) -> np.ndarray:
    kind = value_type(value)
    if kind is None or kind[0] not in (VectorType(ScalarType.BOOL, n) for n in (2, 3, 4)):
        raise InvalidArgumentError(f"{name}() takes a bool vector, got {value!r:.60}")
    return value._values


def any(value: Any) -> np.bool_:
    """Whether any component of a bool vector is true."""
    return np.bool_(_bool_vector(value, "any").any())


def all(value: Any) -> np.bool_:
    """Whether every component of a bool vector is true."""
    return np.bool_(_bool_vector(value, "all").all())


def select(if_false: Any, if_true: Any, condition: Any) -> Any:
    """``if_true`` where ``condition`` holds, else ``if_false`` (component-wise for a bool
    vector condition). Note luisa-python's order: the false value comes first."""
    kind = operand_type((if_false, if_true), "select")
    if isinstance(condition, Vector):
        length = condition.__lnb_type__.length
        if not isinstance(kind, VectorType):
            kind = VectorType(kind, length)
        mask = _bool_vector(condition, "select")
    else:
        mask = bool(condition)
    element = kind.element if isinstance(kind, VectorType) else kind
    chosen = np.where(
        mask, components_of(if_true, element.dtype), components_of(if_false, element.dtype)
    )
    if isinstance(kind, VectorType):
        return vector_class(kind).wrap(np.broadcast_to(chosen, (kind.length,)).copy())
    return element.dtype.type(chosen[0])


MATH_BUILTINS = (
    sqrt, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh,
    exp, exp2, exp10, log, log2, log10, rsqrt, floor, ceil, trunc, round, fract,
    isnan, isinf, saturate, sign, radians, degrees, pow, atan2, copysign, fmod, mod,
    step, lerp, smoothstep, fma, min, max, clamp, abs, dot, length_squared, length,
    distance, distance_squared, normalize, cross, reflect, faceforward, any, all, select,
)  # fmt: skip
