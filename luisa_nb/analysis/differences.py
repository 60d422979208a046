"""Element-by-element differences between two arrays, shared by upload checks, the
conformance suite, ``compare`` and the diff widgets."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def differing_bits(left: np.ndarray, right: np.ndarray, itemsize: int) -> np.ndarray:
    """Indices of the ``itemsize``-byte elements whose bits differ, over the whole
    elements both arrays hold (so NaNs with equal bits are equal)."""
    left = np.ascontiguousarray(left).reshape(-1).view(np.uint8)
    right = np.ascontiguousarray(right).reshape(-1).view(np.uint8)
    count = min(left.nbytes, right.nbytes) // itemsize
    left, right = left[: count * itemsize], right[: count * itemsize]
    unsigned = _UNSIGNED.get(itemsize)
    if unsigned is not None:
        return np.flatnonzero(left.view(unsigned) != right.view(unsigned))
    return np.flatnonzero((left.reshape(count, itemsize) != right.reshape(count, itemsize)).any(1))


def differing_values(expected: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Flat indices where the values differ; NaN equals NaN."""
    with np.errstate(invalid="ignore"):
        unequal = expected != actual
    if expected.dtype.kind in "fc" and actual.dtype.kind in "fc":
        unequal &= ~(np.isnan(expected) & np.isnan(actual))
    return np.flatnonzero(unequal)


class LargestErrors(NamedTuple):
    """The largest absolute and relative error over differing elements, and where (flat
    indices). Relative error is ``|actual - expected| / |expected|``: inf where expected
    is 0, and both are inf where either value is NaN."""

    absolute: float
    absolute_at: int
    relative: float
    relative_at: int


def largest_errors(
    expected: np.ndarray, actual: np.ndarray, differing: np.ndarray
) -> LargestErrors | None:
    """``None`` when nothing differs or the values are not numbers."""
    if not differing.size or expected.dtype.kind not in "biuf":
        return None
    wanted = expected.reshape(-1)[differing].astype(np.float64)
    got = actual.reshape(-1)[differing].astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        absolute = np.abs(got - wanted)
        absolute[np.isnan(absolute)] = np.inf
        relative = absolute / np.abs(wanted)
    relative[np.isnan(relative)] = np.inf
    at_absolute, at_relative = int(np.argmax(absolute)), int(np.argmax(relative))
    return LargestErrors(
        float(absolute[at_absolute]),
        int(differing[at_absolute]),
        float(relative[at_relative]),
        int(differing[at_relative]),
    )
