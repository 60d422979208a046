"""luisa-python's autodiff functions (``luisa.autodiff``): ``with autodiff():``,
``requires_grad``, ``backward``, ``grad``, ``detach``, ``one`` and ``zero``. The compiler
recognises them by identity and differentiates the block (``kernels.autodiff``); Python
mode runs the same differentiated code, so these bodies run only when called outside a
kernel, or ``detach``/``one``/``zero`` outside a block."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any, NoReturn

from luisa_nb.errors import KernelError
from luisa_nb.kernels.lang.scalar_names import convert_scalar
from luisa_nb.kernels.lang.vectors import vector_class
from luisa_nb.kernels.type_system import ScalarType, VectorType


def _outside(name: str) -> NoReturn:
    raise KernelError(
        f"{name}() only works inside `with autodiff():` in a kernel or callable; "
        f"dispatch the kernel"
    )


def autodiff() -> AbstractContextManager[None]:
    """``with autodiff():`` opens a block whose ``backward`` computes gradients."""
    return nullcontext()


def requires_grad(*values: Any) -> None:
    """Mark locals whose gradients ``grad`` will give after ``backward``."""
    _outside("requires_grad")


def backward(value: Any, seed: Any = None) -> None:
    """Propagate ``seed`` (one by default) back from ``value`` to every marked local."""
    _outside("backward")


def grad(value: Any) -> Any:
    """The gradient of the ``backward`` value with respect to a marked local."""
    _outside("grad")


def detach(value: Any) -> Any:
    """``value``, through which no gradient flows."""
    return value.copy() if hasattr(value, "copy") else value


def _filled(kind: Any, number: float) -> Any:
    kernel_type = getattr(kind, "__lnb_type__", None)
    if isinstance(kernel_type, VectorType):
        return vector_class(kernel_type)(number)
    scalars = {float: ScalarType.FLOAT32, int: ScalarType.INT32, bool: ScalarType.BOOL}
    scalar = scalars.get(kind, getattr(kind, "kernel_type", None))
    if not isinstance(scalar, ScalarType):
        raise KernelError(f"one()/zero() take a scalar or vector type, got {kind!r}")
    return convert_scalar(number, scalar)


def one(kind: Any) -> Any:
    """One of type ``kind`` (every component of a vector)."""
    return _filled(kind, 1)


def zero(kind: Any) -> Any:
    """Zero of type ``kind``."""
    return _filled(kind, 0)


AUTODIFF_FUNCTIONS = (autodiff, requires_grad, backward, grad, detach, one, zero)
