"""The kernel language's types and math functions under luisa-python's names."""

from luisa_nb.kernels import (
    abs,
    ceil,
    clamp,
    cos,
    dispatch_id,
    dispatch_size,
    exp,
    floor,
    log,
    max,
    min,
    pow,
    sin,
    sqrt,
    tan,
)

__all__ = [
    "abs",
    "ceil",
    "clamp",
    "cos",
    "dispatch_id",
    "dispatch_size",
    "exp",
    "floor",
    "log",
    "max",
    "min",
    "pow",
    "sin",
    "sqrt",
    "tan",
]
