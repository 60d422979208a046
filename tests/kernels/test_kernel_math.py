"""Math builtins on scalars and vectors, in C and Python mode, against numpy float32."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.kernels import KernelDefinition, compiler_available
from luisa_nb.kernels.lang import math_builtins as mb
from luisa_nb.kernels.lang import vectors as vt

from . import vector_kernels
from .helpers import FakeBuffer, load_function, run

F32 = np.float32
MODES = ["python", pytest.param("c", marks=pytest.mark.skipif(
    not compiler_available(), reason="no C compiler"))]  # fmt: skip


def _round(x):
    truncated = np.trunc(x)
    return np.where(np.abs(x - truncated) >= F32(0.5), truncated + np.sign(x), truncated)


UNARY = {
    "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "atanh": np.arctanh, "exp": np.exp,
    "exp2": np.exp2, "exp10": lambda x: np.power(F32(10), x), "log": np.log,
    "log2": np.log2, "log10": np.log10, "rsqrt": lambda x: F32(1) / np.sqrt(x),
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": _round,
    "fract": lambda x: x - np.floor(x), "sign": lambda x: np.copysign(F32(1), x),
    "saturate": lambda x: np.clip(x, 0, 1), "abs": np.abs,
    "radians": lambda x: x * F32(np.pi / 180), "degrees": lambda x: x * F32(180 / np.pi),
    "acosh": np.arccosh,
}  # fmt: skip
BINARY = {
    "pow": np.power, "atan2": np.arctan2, "copysign": np.copysign,
    "fmod": lambda a, b: a - b * np.trunc(a / b), "mod": lambda a, b: a - b * np.floor(a / b),
    "step": lambda e, x: np.where(x < e, F32(0), F32(1)), "min": np.minimum,
    "max": np.maximum,
}  # fmt: skip


def math_source() -> str:
    """One kernel applying every function to a float3 and to its x component."""
    lines = [
        "from luisa_nb.kernels import *",
        "",
        "def kernel_under_test(xs, out):",
        "    i = dispatch_id().x",
        "    s = xs.read(i)",
        "    v = float3(s, 0.5 * s, -0.75 * s)",
        "    w = float3(0.3, -1.5, 2.5)",
    ]
    slot = 0
    for name in UNARY:
        argument = "v + 1" if name == "acosh" else "v"
        scalar = "s + 1" if name == "acosh" else "s"
        lines.append(f"    r = {name}({argument})")
        lines.append(f"    out.write(i * {SLOTS} + {slot}, float4(r, {name}({scalar})))")
        slot += 1
    for name in BINARY:
        lines.append(f"    r = {name}(v, w)")
        lines.append(f"    out.write(i * {SLOTS} + {slot}, float4(r, {name}(s, 0.75)))")
        slot += 1
    return "\n".join(lines) + "\n"


SLOTS = len(UNARY) + len(BINARY)


def expected_math(xs: np.ndarray) -> np.ndarray:
    v = np.stack([xs, F32(0.5) * xs, F32(-0.75) * xs], 1)
    w = np.array([0.3, -1.5, 2.5], F32)
    rows = []
    for name, function in UNARY.items():
        shift = F32(1) if name == "acosh" else F32(0)
        rows.append(np.concatenate([function(v + shift), function(xs + shift)[:, None]], 1))
    for function in BINARY.values():
        scalar = function(xs, np.full_like(xs, F32(0.75)))
        rows.append(np.concatenate([function(v, w), scalar[:, None]], 1))
    return np.stack(rows, 1).reshape(-1, 4)


@pytest.mark.parametrize("mode", MODES)
def test_math_builtins_match_numpy(tmp_path, mode) -> None:
    xs = np.array([0.1, 0.35, 0.5, 0.8, -0.6, 0.95], F32)
    out = FakeBuffer(np.zeros(len(xs) * SLOTS, vt.dtype_of(vt.float4)))
    function = load_function(tmp_path, math_source())
    with np.errstate(all="ignore"):
        run(KernelDefinition(function, mode=mode), len(xs), FakeBuffer(xs), out)
        expected = expected_math(xs)
    result = np.stack([out.array[name] for name in "xyzw"], 1)
    np.testing.assert_allclose(result, expected, rtol=3e-6, atol=1e-7, equal_nan=True)
    assert result.dtype == F32


def test_geometry_and_interpolation() -> None:
    results = {}
    for mode in ("c", "python") if compiler_available() else ("python",):
        out = FakeBuffer(np.zeros(6, F32))
        run(KernelDefinition(vector_kernels.geometry, mode=mode), 6, out)
        results[mode] = out.array
    i = np.arange(6, dtype=F32)
    a = np.stack([i + 1, np.full(6, 2, F32), np.full(6, -1, F32)], 1)
    b = np.stack([np.full(6, 0.5, F32), i, np.full(6, 3, F32)], 1)
    length = np.sqrt((a * a).sum(1))
    n = a / length[:, None]
    r = a - 2 * (n * a).sum(1)[:, None] * n
    t = np.clip(i / 4, 0, 1)
    value = length + (a * b).sum(1) + np.sqrt(((a - b) ** 2).sum(1)) + n[:, 0]
    value += np.cross(a, b)[:, 1] * F32(0.1) + r[:, 2]
    value += 1 + 0.25 * i * 2 + t * t * (3 - 2 * t) + (i >= 2)
    v = np.clip(a, 0, 1.5) + np.maximum(a, b) - np.minimum(b, 1)
    w = a * F32(0.3) - np.floor(a * F32(0.3))
    expected = value + v.sum(1) + w[:, 0] + w[:, 1]
    for result in results.values():
        np.testing.assert_allclose(result, expected, rtol=2e-6)
    if len(results) == 2:
        np.testing.assert_allclose(results["c"], results["python"], rtol=1e-6)


def test_python_mode_functions_keep_float32() -> None:
    v = vt.float3(1, 4, 9)
    assert mb.sqrt(v).x.dtype == F32 and mb.sqrt(v).z == 3
    assert mb.length(vt.float2(3, 4)) == 5 and mb.length(vt.float2(3, 4)).dtype == F32
    assert mb.dot(vt.float3(1, 2, 3), vt.float3(4, 5, 6)) == 32
    assert mb.cross(vt.float3(1, 0, 0), vt.float3(0, 1, 0)).z == 1
    assert mb.round(F32(2.5)) == 3 and mb.round(F32(-0.5)) == -1
    assert mb.select(1, 2, vt.bool2(True, False)).x == 2
    assert mb.select(vt.float2(1), vt.float2(2), False).y == 1
    assert mb.any(vt.bool3(False, True, False)) and not mb.all(vt.bool3(False, True, True))
    assert mb.max(vt.int2(1, 5), 3).y == 5 and mb.clamp(vt.float2(-1, 3), 0, 1).y == 1
    assert mb.isnan(vt.float2(np.nan, 0)).x
