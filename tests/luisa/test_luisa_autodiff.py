"""luisa-python's autodiff (``from luisa.autodiff import ...``) in ``luisa.func`` kernels:
the program in ``programs/autodiff.py`` on luisa_nb against the derivatives worked out by
hand, and beside real luisa-python 0.3.7 where it runs."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

import luisa_nb.luisa as luisa
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa
from tests.luisa.test_luisa_originals import program
from tests.luisa.test_luisa_originals import run as run_original

PROGRAM = Path(__file__).parent / "programs" / "autodiff.py"
X = np.array([0.5, 1.0, -2.0, 3.0, 0.25, -0.75, 1.75, 2.5])
# float32 kernels against float64 formulas
RELATIVE, ABSOLUTE = 2e-6, 2e-6


def inside(value: np.ndarray, low: float, high: float) -> np.ndarray:
    """Where clamp passes its argument's gradient on: low <= value <= high."""
    return ((value >= low) & (value <= high)).astype(float)


def expected_gradients() -> dict[str, np.ndarray]:
    x = X
    half = np.exp(x / 2)
    return {
        "chain": 3 * x**2
        + np.cos(x) * half
        + 0.5 * np.sin(x) * half
        - (1 - x**2) / (x**2 + 1) ** 2,
        "branch": np.where(x > 0.7, 6 * x, 2 * x * np.cos(x * x) + 1),
        "selected": np.where(x > 0.7, -np.sin(x), 2 * x),
        "callable": 3 * x**2 + 2 * (x + 1),
        "pieces": 1 + 4 * x + (x >= 0.7) + inside(x, 0.0, 1.0),
        "seeded": 2.5 * 2 * x,
        "inner": 2 * inside(2 * x, -1.0, 1.5),
    }


def expected_vector_gradients() -> np.ndarray:
    v = np.stack([X, 2 * X, np.ones_like(X)], axis=1)
    return v / np.linalg.norm(v, axis=1, keepdims=True) + np.array([1.0, 2.0, 3.0])


def functions(x: float) -> float:
    """The "functions" block in float64."""
    value = abs(x) * (x * x + 1) ** 1.5 + np.arctan2(x, 2.0) + 1.3 * x + min(x, 0.6)
    return value + np.tanh(x) + 2**x + np.log(x * x + 1) + np.sqrt(x * x + 1) + x * x + 1


def geometry(v: np.ndarray) -> float:
    """The "geometry" block in float64."""
    normal = np.array([0.0, 1.0, 0.0])
    reflected = v - 2 * np.dot(normal, v) * normal
    w = v / np.linalg.norm(v) * 2 + np.cross(v, [0.3, 0.2, 0.1]) + reflected
    return float(np.dot(w, v) + np.linalg.norm(v - 1.0) + np.dot(v, v))


def components(v: np.ndarray, x: float) -> float:
    """The "components" block in float64."""
    u = v * x
    u[1] = u[0] * 2
    return float(u[1] + u[2] * v[1] + np.sin(u[0]))


def central(function, point: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """Central differences of ``function`` at ``point`` (a vector), in float64."""
    return np.array(
        [
            (function(point + e) - function(point - e)) / (2 * step)
            for e in np.eye(len(point)) * step
        ]
    )


def luisa_nb_result() -> dict[str, list]:
    luisa.del_device()
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            run_on_luisa_nb(PROGRAM)
    finally:
        luisa.del_device()
    return json.loads(printed.getvalue().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def ours() -> dict[str, list]:
    return luisa_nb_result()


def test_gradients_are_the_derivatives(ours):
    for row, expected in expected_gradients().items():
        np.testing.assert_allclose(ours[row], expected, rtol=RELATIVE, atol=ABSOLUTE, err_msg=row)
    np.testing.assert_allclose(
        ours["vector"], expected_vector_gradients(), rtol=RELATIVE, atol=ABSOLUTE
    )


def test_gradients_match_central_differences(ours):
    """The blocks with many functions, against float64 central differences."""
    by = {"functions": [], "geometry": [], "components": [], "components_by_vector": []}
    for x in X:
        v = np.array([x, 2 * x, 1.0])
        by["functions"].append(central(lambda p: functions(p[0]), np.array([x]))[0])
        by["geometry"].append(central(geometry, v))
        both = central(lambda p: components(p[:3], p[3]), np.append(v, x))
        by["components_by_vector"].append(both[:3])
        by["components"].append(both[3])
    for row, expected in by.items():
        # float32 gradients against float64 differences
        np.testing.assert_allclose(ours[row], expected, rtol=1e-5, atol=1e-5, err_msg=row)


def test_gradients_agree_with_real_luisa(ours):
    """Equal to real luisa-python's, except clamp above its upper bound: 0.3.7 passes the
    gradient on there (LuisaCompute's later test-autodiff-clamp-builtin.py expects 0,
    as the derivative is); luisa_nb gives 0."""
    require_real_luisa()
    real = json.loads(run_on_real_luisa(PROGRAM).strip().splitlines()[-1])
    rows = ("chain", "branch", "selected", "callable", "seeded", "functions", "components")
    for row in (*rows, "vector", "geometry", "components_by_vector"):
        np.testing.assert_allclose(ours[row], real[row], rtol=1e-6, atol=1e-6, err_msg=row)
    above = {"pieces": X > 1.0, "inner": 2 * X > 1.5}
    slope = {"pieces": 1.0, "inner": 2.0}
    for row, mask in above.items():
        np.testing.assert_allclose(np.array(ours[row])[~mask], np.array(real[row])[~mask])
        np.testing.assert_allclose(
            np.array(ours[row])[mask], np.array(real[row])[mask] - slope[row]
        )


def test_luisacompute_test_autodiff_runs_unchanged(tmp_path, monkeypatch):
    """LuisaCompute's src/tests/python/test-autodiff.py (``git show
    HEAD:src/tests/python/test-autodiff.py > DIR/test-autodiff.py``, DIR being
    LUISA_NB_LUISA_PROGRAMS, see test_luisa_originals.py): ``x*x + y.x*y.x + y.y*y.y``
    differentiated by a float and a float2, 1024 threads; the gradients are ``2x`` and
    ``2y``, exact in float32."""
    found = run_original(program("test-autodiff.py", tmp_path), monkeypatch)
    np.testing.assert_array_equal(found["dx_result"], 2 * found["x_values"])
    np.testing.assert_array_equal(found["dy_result"], 2 * found["y_values"])
    assert found["dx_result"].max() == 2046.0
