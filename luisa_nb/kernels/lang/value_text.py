"""Vectors and matrices as luisa-python 0.3.7 prints them on the host: ``float4(3,3,3,3)``,
``int2(1,-1)``, ``bool2(true,false)``, ``float2x2([1,0], [0,1])``. A float component is
the shortest text that reads back as the same float32 (``0.1``, ``0.33333334``),
positional for exponents -5 < e < 16 and ``1e+16``/``1.5e-05`` style outside, as the
fmt library luisa-python uses writes it."""

from __future__ import annotations

from typing import Any

import numpy as np

SCIENTIFIC_BELOW = -4  # 0.0001 is positional, 1.5e-05 is not
SCIENTIFIC_FROM = 16  # 1000000000000000 is positional, 1e+16 is not


def component_text(value: Any) -> str:
    """One component (a numpy scalar) as luisa-python prints it."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (float, np.floating)):
        return float_text(value)
    return str(int(value))


def float_text(value: np.floating | float) -> str:
    """The shortest round-trip text of a float (of its own precision)."""
    if not np.isfinite(value):
        return "nan" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if value == 0:
        return "-0" if np.signbit(value) else "0"
    scientific = np.format_float_scientific(value, unique=True, trim="-", exp_digits=2)
    exponent = int(scientific.rsplit("e", 1)[1])
    if SCIENTIFIC_BELOW <= exponent < SCIENTIFIC_FROM:
        return np.format_float_positional(value, unique=True, trim="-")
    return scientific


def vector_text(name: str, components: np.ndarray) -> str:
    return f"{name}({','.join(component_text(c) for c in components)})"


def matrix_text(name: str, columns: np.ndarray) -> str:
    """``columns`` as rows of the array, each written ``[a,b]``."""
    texts = ("[" + ",".join(component_text(c) for c in column) + "]" for column in columns)
    return f"{name}({', '.join(texts)})"


def value_text(value: Any) -> str:
    """A struct field or array element: a number as :func:`component_text` writes it, a
    vector, matrix, struct or array as its ``repr``."""
    if isinstance(value, (bool, int, float, np.generic)):
        return component_text(value)
    return repr(value)
