"""Argument types, promotion rules and the builtins outside kernels."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import KernelError
from luisa_nb.kernels import (
    BufferType,
    ScalarType,
    argument_type,
    clamp,
    dispatch_id,
    dispatch_size,
    floor,
    sqrt,
)
from luisa_nb.kernels import max as kernel_max
from luisa_nb.kernels.type_system import PromotionError, assignable, promote

from .helpers import FakeBuffer


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, ScalarType.BOOL),
        (np.bool_(False), ScalarType.BOOL),
        (3, ScalarType.INT32),
        (2.5, ScalarType.FLOAT32),
        (np.int64(3), ScalarType.INT64),
        (np.uint32(3), ScalarType.UINT32),
        (np.uint64(3), ScalarType.UINT64),
        (np.float64(3), ScalarType.FLOAT64),
        (np.float32(3), ScalarType.FLOAT32),
        (FakeBuffer([1, 2], np.int64), BufferType(ScalarType.INT64)),
        (FakeBuffer([1.0], np.float64), BufferType(ScalarType.FLOAT64)),
    ],
)
def test_argument_type(value, expected) -> None:
    assert argument_type(value) == expected


def test_buffer_type_properties() -> None:
    buffer_type = BufferType(ScalarType.UINT32)
    assert buffer_type.dtype == np.dtype(np.uint32) and str(buffer_type) == "buffer[uint32]"
    assert ScalarType.from_dtype(np.dtype("float64")) is ScalarType.FLOAT64


@pytest.mark.parametrize(
    ("left", "right", "left_weak", "right_weak", "expected"),
    [
        ("int32", "float32", False, False, "float32"),
        ("int64", "float32", False, False, "float32"),
        ("int32", "int64", False, False, "int64"),
        ("uint32", "uint64", False, False, "uint64"),
        ("float32", "float64", False, False, "float64"),
        ("uint32", "int32", False, True, "uint32"),
        ("int32", "float32", False, True, "float32"),
        ("float64", "float32", False, True, "float64"),
        ("int64", "int32", False, True, "int64"),
    ],
)
def test_promotion(left, right, left_weak, right_weak, expected) -> None:
    result = promote(ScalarType(left), ScalarType(right), left_weak, right_weak)
    assert result is ScalarType(expected)
    swapped = promote(ScalarType(right), ScalarType(left), right_weak, left_weak)
    assert swapped is ScalarType(expected)


@pytest.mark.parametrize(
    ("left", "right"), [("int32", "uint32"), ("int64", "uint32"), ("bool", "int32")]
)
def test_ambiguous_promotion_is_rejected(left, right) -> None:
    with pytest.raises(PromotionError):
        promote(ScalarType(left), ScalarType(right), False, False)


def test_assignment_conversions() -> None:
    assert assignable(ScalarType.FLOAT32, ScalarType.INT32, weak=False)
    assert assignable(ScalarType.INT64, ScalarType.INT32, weak=False)
    assert assignable(ScalarType.UINT32, ScalarType.INT32, weak=True)
    assert not assignable(ScalarType.INT32, ScalarType.FLOAT32, weak=False)
    assert not assignable(ScalarType.FLOAT32, ScalarType.FLOAT64, weak=False)
    assert not assignable(ScalarType.UINT32, ScalarType.INT32, weak=False)
    assert not assignable(ScalarType.INT32, ScalarType.BOOL, weak=False)


def test_dispatch_builtins_outside_a_kernel() -> None:
    with pytest.raises(KernelError, match=r"dispatch_id\(\) only works inside a kernel"):
        dispatch_id()
    with pytest.raises(KernelError, match=r"dispatch_size\(\) only works inside a kernel"):
        dispatch_size()


def test_math_builtins_keep_float32() -> None:
    assert sqrt(np.float32(4)).dtype == np.float32
    assert sqrt(9) == 3 and sqrt(9).dtype == np.float32
    assert floor(np.float64(2.5)).dtype == np.float64 and floor(-2.5) == -3
    assert clamp(np.float32(5), 0, 2) == 2
    assert kernel_max(1, 7, 3) == 7


def literal_locals(ints, floats):
    c = 2147483647
    ints.write(0, c + 1)  # int32 wraps
    u = 3
    ints.write(1, (u * 1000000000) // 7)  # the product wraps before the division
    f = 0.1
    g = f * 3.0
    floats.write(0, g * 100000000.0 - 30000000.0)  # float32 rounding of 0.1 and 0.3
    h = 16777216.0
    floats.write(1, h + 1.0)


@pytest.mark.parametrize("mode", ["c", "python"])
def test_scalar_locals_hold_their_declared_types_in_both_modes(mode) -> None:
    from luisa_nb.kernels import KernelDefinition

    from .helpers import run

    ints, floats = FakeBuffer(np.zeros(2, np.int32)), FakeBuffer(np.zeros(2, np.float32))
    run(KernelDefinition(literal_locals, mode=mode), 1, ints, floats)
    wrapped = (3 * 1000000000 + 2**31) % 2**32 - 2**31
    assert ints.array.tolist() == [-(2**31), int(np.trunc(wrapped / 7))]
    g = np.float32(np.float32(0.1) * np.float32(3.0))
    expected = np.float32(g * np.float32(100000000.0)) - np.float32(30000000.0)
    assert floats.array.tolist() == [float(expected), 16777216.0]
