"""Functions a kernel may call. The compiler recognises them by identity; in Python mode
they run as written, on numpy scalars, so float32 math stays float32.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import numpy as np

from luisa_nb.errors import KernelError


class Int3(NamedTuple):
    """Three int32 components, as ``dispatch_id()`` returns."""

    x: np.int32
    y: np.int32
    z: np.int32


class _ThreadState(threading.local):
    dispatch_id: Int3 | None = None
    dispatch_size: Int3 | None = None


thread_state = _ThreadState()


def dispatch_id() -> Int3:
    """The id of the current thread, with ``.x .y .z``. Only valid inside a kernel."""
    value = thread_state.dispatch_id
    if value is None:
        raise KernelError("dispatch_id() only works inside a kernel; dispatch the kernel")
    return value


def dispatch_size() -> Int3:
    """The dispatch size, with ``.x .y .z``. Only valid inside a kernel."""
    value = thread_state.dispatch_size
    if value is None:
        raise KernelError("dispatch_size() only works inside a kernel; dispatch the kernel")
    return value


def _floating(value: Any) -> np.floating:
    """``value`` as a numpy float: floats keep their type, everything else is float32."""
    return value if isinstance(value, np.floating) else np.float32(value)


def sqrt(value: Any) -> np.floating:
    """Square root; integers are converted to float32."""
    return np.sqrt(_floating(value))


def sin(value: Any) -> np.floating:
    """Sine of an angle in radians."""
    return np.sin(_floating(value))


def cos(value: Any) -> np.floating:
    """Cosine of an angle in radians."""
    return np.cos(_floating(value))


def tan(value: Any) -> np.floating:
    """Tangent of an angle in radians."""
    return np.tan(_floating(value))


def exp(value: Any) -> np.floating:
    """``e`` raised to ``value``."""
    return np.exp(_floating(value))


def log(value: Any) -> np.floating:
    """Natural logarithm."""
    return np.log(_floating(value))


def pow(base: Any, exponent: Any) -> np.floating:
    """``base ** exponent`` in floating point."""
    base, exponent = _floating(base), _floating(exponent)
    return np.power(base, exponent)


def floor(value: Any) -> np.floating:
    """Largest integral value not above ``value``, as a float (unlike ``math.floor``)."""
    return np.floor(_floating(value))


def ceil(value: Any) -> np.floating:
    """Smallest integral value not below ``value``, as a float (unlike ``math.ceil``)."""
    return np.ceil(_floating(value))


def min(first: Any, second: Any, *others: Any) -> Any:
    """The smallest argument, in the arguments' common type."""
    result = np.minimum(first, second)
    for other in others:
        result = np.minimum(result, other)
    return result


def max(first: Any, second: Any, *others: Any) -> Any:
    """The largest argument, in the arguments' common type."""
    result = np.maximum(first, second)
    for other in others:
        result = np.maximum(result, other)
    return result


def clamp(value: Any, low: Any, high: Any) -> Any:
    """``min(max(value, low), high)``."""
    return np.minimum(np.maximum(value, low), high)


def abs(value: Any) -> Any:
    """Absolute value, in the argument's type."""
    return np.abs(value)


MATH_BUILTINS = (sqrt, sin, cos, tan, exp, log, pow, floor, ceil, clamp, min, max, abs)
