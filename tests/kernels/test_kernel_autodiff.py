"""Autodiff blocks (``with autodiff():``): gradients against central finite differences
of the same functions, on many random inputs, in C and in Python mode; what cannot be
differentiated is a compile error at its line."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import KernelCompileError, UnsupportedFeatureError
from luisa_nb.kernels import (
    KernelDefinition,
    argument_type,
    compiler_available,
    dispatch_id,
    dtype_of,
    float3,
)
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.lang.autodiff import autodiff, backward, grad, requires_grad

from . import autodiff_kernels
from .autodiff_kernels import CALLABLES
from .helpers import FakeBuffer, load_function, run
from .test_kernel_images import FakeImage

MODES = ["python", pytest.param("c", marks=pytest.mark.skipif(
    not compiler_available(), reason="no C compiler"))]  # fmt: skip
COUNT = 64  # random inputs per construct
STEP = 1e-6  # central differences in float64: truncation ~1e-12, rounding ~1e-10
# gradients in float64 against float64 differences
RELATIVE, ABSOLUTE = 1e-6, 1e-6


def gradient_kernel(function):
    """A kernel that differentiates ``function(x, y)`` by both arguments."""

    def differentiate(xs, ys, values, dxs, dys):
        i = dispatch_id().x
        x = xs.read(i)
        y = ys.read(i)
        with autodiff():
            requires_grad(x, y)
            value = function(x, y)
            backward(value)
            dx = grad(x)
            dy = grad(y)
        values.write(i, value)
        dxs.write(i, dx)
        dys.write(i, dy)

    return differentiate


def value_kernel(function):
    def evaluate(xs, ys, values):
        i = dispatch_id().x
        values.write(i, function(xs.read(i), ys.read(i)))

    return evaluate


def inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, COUNT), rng.uniform(-1.5, 1.5, COUNT)


def evaluate(definition: KernelDefinition, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    values = FakeBuffer(np.zeros(COUNT))
    run(definition, COUNT, FakeBuffer(x), FakeBuffer(y), values)
    return values.array


def differences(definition, x, y) -> tuple[np.ndarray, np.ndarray]:
    """Central differences of the function a value kernel computes."""
    dx = (evaluate(definition, x + STEP, y) - evaluate(definition, x - STEP, y)) / (2 * STEP)
    dy = (evaluate(definition, x, y + STEP) - evaluate(definition, x, y - STEP)) / (2 * STEP)
    return dx, dy


def gradients(definition, x, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    values, dxs, dys = (FakeBuffer(np.zeros(COUNT)) for _ in range(3))
    run(definition, COUNT, FakeBuffer(x), FakeBuffer(y), values, dxs, dys)
    return values.array, dxs.array, dys.array


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CALLABLES))
def test_gradients_of_callables_match_central_differences(name, mode):
    function = CALLABLES[name]
    x, y = inputs(seed=sorted(CALLABLES).index(name))
    values, dx, dy = gradients(KernelDefinition(gradient_kernel(function), mode=mode), x, y)
    forward = KernelDefinition(value_kernel(function), mode=mode)
    np.testing.assert_allclose(values, evaluate(forward, x, y), rtol=1e-12)
    expected_dx, expected_dy = differences(forward, x, y)
    np.testing.assert_allclose(dx, expected_dx, rtol=RELATIVE, atol=ABSOLUTE)
    np.testing.assert_allclose(dy, expected_dy, rtol=RELATIVE, atol=ABSOLUTE)
    assert np.abs(dx).max() > 0.1 and np.abs(dy).max() > 0.1  # the check can fail


@pytest.mark.parametrize("mode", MODES)
def test_branches_and_loops_in_the_block_itself(mode):
    x, y = inputs(seed=99)
    definition = KernelDefinition(autodiff_kernels.in_block, mode=mode)
    values, dx, dy = gradients(definition, x, y)
    forward = KernelDefinition(autodiff_kernels.in_block_value, mode=mode)
    np.testing.assert_allclose(values, evaluate(forward, x, y), rtol=1e-12)
    expected_dx, expected_dy = differences(forward, x, y)
    np.testing.assert_allclose(dx, expected_dx, rtol=RELATIVE, atol=ABSOLUTE)
    np.testing.assert_allclose(dy, expected_dy, rtol=RELATIVE, atol=ABSOLUTE)


@pytest.mark.parametrize("mode", MODES)
def test_c_and_python_mode_compute_the_same_gradients(mode):
    x, y = inputs(seed=5)
    results = [
        gradients(KernelDefinition(gradient_kernel(function), mode=mode), x, y)
        for function in CALLABLES.values()
    ]
    python = [
        gradients(KernelDefinition(gradient_kernel(function), mode="python"), x, y)
        for function in CALLABLES.values()
    ]
    for ours, reference in zip(results, python, strict=True):
        for a, b in zip(ours, reference, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def reflect(incident: np.ndarray, normal: np.ndarray) -> np.ndarray:
    return incident - 2 * np.dot(normal, incident) * normal


def vectors_reference(p: np.ndarray, d: np.ndarray) -> float:
    """``autodiff_kernels.vectors`` in float64."""
    n = (p + d * 0.5) / np.linalg.norm(p + d * 0.5)
    q = np.cross(p, d) + reflect(d, n) * np.linalg.norm(p)
    q[1] = q[1] * p[2]
    r = np.clip(q, -1.0, 2.0) + np.maximum(p, d) * np.minimum(p[[2, 0, 1]], d)
    return float(np.dot(r, p) + np.linalg.norm(q[[0, 2]]) + np.sin(p[0]) * p[1])


@pytest.mark.parametrize("mode", MODES)
def test_vector_gradients_match_central_differences(mode):
    rng = np.random.default_rng(3)
    vector = dtype_of(float3)
    points = rng.uniform(-1.5, 1.5, (COUNT, 3)).astype(np.float32)
    directions = rng.uniform(-1.5, 1.5, (COUNT, 3)).astype(np.float32)
    values = FakeBuffer(np.zeros(COUNT, np.float32))
    gradient = FakeBuffer(np.zeros(COUNT, vector))
    definition = KernelDefinition(autodiff_kernels.vectors, mode=mode)
    run(definition, COUNT, _vectors(points), _vectors(directions), values, gradient)
    found = np.stack([gradient.array[name] for name in vector.names[:3]], axis=1)
    for point, direction, value, row in zip(points, directions, values.array, found, strict=True):
        p, d = point.astype(np.float64), direction.astype(np.float64)
        assert value == pytest.approx(vectors_reference(p, d), rel=1e-5, abs=1e-5)
        expected = [
            (vectors_reference(p + step, d) - vectors_reference(p - step, d)) / (2 * STEP)
            for step in np.eye(3) * STEP
        ]
        # float32 gradients against float64 differences
        np.testing.assert_allclose(row, expected, rtol=1e-4, atol=1e-4)


def _vectors(values: np.ndarray) -> FakeBuffer:
    vector = dtype_of(float3)
    array = np.zeros(len(values), vector)
    for index, name in enumerate(vector.names[:3]):
        array[name] = values[:, index]
    return FakeBuffer(array)


@pytest.mark.parametrize("mode", MODES)
def test_detach_stops_the_gradient(mode):
    x = np.random.default_rng(7).uniform(-2.0, 2.0, COUNT)
    values, dxs = FakeBuffer(np.zeros(COUNT)), FakeBuffer(np.zeros(COUNT))
    run(KernelDefinition(autodiff_kernels.detached, mode=mode), COUNT, FakeBuffer(x), values, dxs)
    np.testing.assert_allclose(values.array, x**3, rtol=1e-12)
    np.testing.assert_allclose(dxs.array, x * x, rtol=1e-12)


HEADER = """\
import luisa_nb as lnb
from luisa_nb.kernels import dispatch_id, float2x2, float3x3
from luisa_nb.kernels.lang.autodiff import autodiff, backward, detach, grad, requires_grad


@lnb.kernel
def spin(a):
    while a < 3.0:
        a = a * 2.0
    return a


@lnb.kernel
def frozen(a):
    return detach(a) * a


def kernel_under_test(xs, out, counts):
    i = dispatch_id().x
    x = xs.read(i)
    n = counts.read(i)
    with autodiff():
"""
REJECTED = {  # block body -> (line, column) of the caret, part of the message
    "while_loop": (
        "requires_grad(x)\nwhile x < 2.0:\n    x = x * x\nbackward(x)",
        (24, 9),
        "a while loop cannot be differentiated",
    ),
    "unknown_trip_count": (
        "requires_grad(x)\ny = x\nfor k in range(n):\n    y = y * x\nbackward(y)",
        (25, 24),
        "needs a trip count known when the kernel compiles",
    ),
    "atomic": (
        "requires_grad(x)\ny = x * float(counts.atomic_fetch_add(i, 1))\nbackward(y)",
        (24, 23),
        "atomics cannot be differentiated",
    ),
    "break": (
        "requires_grad(x)\ny = x\nfor k in range(3):\n    y = y * x\n    break\nbackward(y)",
        (27, 13),
        "break inside an autodiff block",
    ),
    "no_backward": ("requires_grad(x)\ny = x * x\ng = grad(x)", (22, 5), "has no backward()"),
    "two_backwards": (
        "requires_grad(x)\ny = x * x\nbackward(y)\nbackward(y)",
        (22, 5),
        "calls backward() twice",
    ),
    "integer": ("requires_grad(n)\nbackward(x)", (23, 23), "'n' is int32; requires_grad() takes"),
    "gradient_first": (
        "requires_grad(x)\ng = grad(x)\nbackward(x * g)",
        (22, 5),
        "grad(x) is read before backward()",
    ),
    "marked_in_a_branch": (
        "if x > 0.0:\n    requires_grad(x)\nbackward(x)",
        (22, 5),
        "at the top level of the autodiff block",
    ),
    "nested": (
        "requires_grad(x)\nwith autodiff():\n    backward(x)",
        (24, 9),
        "autodiff blocks do not nest",
    ),
    "loop_in_a_callable": (
        "requires_grad(x)\ny = spin(x)\nbackward(y)",
        (22, 5),
        "a while loop cannot be differentiated",
    ),
    "resized_matrix": (
        "m = float3x3(x, 0.0, 0.0, 0.0, x, 0.0, 0.0, 0.0, x)\nrequires_grad(m)\n"
        "backward(float2x2(m)[0].x)",
        (22, 5),
        "resizing a matrix to float2x2 has no derivative here",
    ),
    "detach_in_a_callable": (
        "requires_grad(x)\ny = frozen(x)\nbackward(y)",
        (15, 12),
        "detach() in a callable",
    ),
    "arguments": ("requires_grad(x + 1.0)\nbackward(x)", (23, 23), "takes local variables"),
}


@pytest.mark.parametrize("name", list(REJECTED))
def test_what_cannot_be_differentiated_is_a_compile_error_at_its_line(tmp_path, name):
    body, (line, column), message = REJECTED[name]
    block = "".join(f"        {line}\n" for line in body.splitlines())
    source = HEADER + block + "    out.write(i, x)\n"
    function = load_function(tmp_path, source)
    xs = FakeBuffer(np.ones(2, np.float32))
    out, counts = FakeBuffer(np.zeros(2, np.float32)), FakeBuffer(np.zeros(2, np.int32))
    with pytest.raises(KernelCompileError) as caught:
        run(KernelDefinition(function, mode="python"), 2, xs, out, counts)
    text = str(caught.value)
    assert f"snippet.py:{line}:{column}:" in text
    assert message in text


def test_autodiff_calls_outside_a_block_are_rejected(tmp_path):
    source = HEADER.replace("    with autodiff():\n", "    requires_grad(x)\n")
    function = load_function(tmp_path, source + "    out.write(i, x)\n")
    xs = FakeBuffer(np.ones(2, np.float32))
    out, counts = FakeBuffer(np.zeros(2, np.float32)), FakeBuffer(np.zeros(2, np.int32))
    with pytest.raises(KernelCompileError, match=r"only inside a `with autodiff\(\):` block"):
        run(KernelDefinition(function, mode="python"), 2, xs, out, counts)


def _cuda_cases() -> list[tuple[object, list[FakeBuffer]]]:
    """(kernel function, all its arguments) with distinct kernel names: one translation
    unit."""
    x, y = inputs(seed=11)
    rng = np.random.default_rng(12)
    points, directions = (_vectors(rng.uniform(-1.5, 1.5, (COUNT, 3))) for _ in range(2))

    def zeros(dtype: object, per_thread: int = 1) -> FakeBuffer:
        return FakeBuffer(np.zeros(COUNT * per_thread, dtype))

    doubles = [zeros(np.float64) for _ in range(3)]
    return [
        (gradient_kernel(CALLABLES["early_return"]), [FakeBuffer(x), FakeBuffer(y), *doubles]),
        (autodiff_kernels.in_block, [FakeBuffer(x), FakeBuffer(y), *doubles]),
        (autodiff_kernels.detached, [FakeBuffer(x), *doubles[:2]]),
        (
            autodiff_kernels.vectors,
            [points, directions, zeros(np.float32), zeros(dtype_of(float3))],
        ),
        (autodiff_kernels.matrices, [FakeBuffer(x.astype(np.float32)), zeros(np.float32, 13)]),
    ]


@pytest.mark.skipif(not compiler_available(), reason="no C compiler")
def test_the_cuda_source_computes_the_c_gradients():
    """The CUDA emitter shares the IR: its source, built with the emulation header by the
    C++ compiler, gives the C path's gradients bit for bit."""
    from helpers.cuda_emulation import emulate, find_cxx_compiler

    if find_cxx_compiler() is None:
        pytest.skip("the CUDA emulation needs a C++ compiler")
    executables, argument_lists = [], []
    for function, arguments in _cuda_cases():
        types = tuple(argument_type(a) for a in arguments)
        definition = KernelDefinition(function, mode="c")
        executables.append(definition.executable(types, KernelChecks.BOUNDS))
        argument_lists.append(arguments)
    emulated = emulate([(e.kernel, e.kernel_source, e.checks) for e in executables])
    for c_executable, cuda, arguments in zip(executables, emulated, argument_lists, strict=True):
        assert "__global__" in cuda.cuda_source
        results = []
        for executable in (c_executable, cuda):
            copies = [FakeBuffer(a.array.copy()) for a in arguments]
            run(_Built(executable), COUNT, *copies)
            results.append([c.array for c in copies])
        for c_values, cuda_values in zip(*results, strict=True):
            np.testing.assert_array_equal(c_values, cuda_values, err_msg=c_executable.name)


class _Built:
    """An executable built already, in the place of a definition for ``helpers.run``."""

    def __init__(self, executable) -> None:
        self._executable = executable

    def executable(self, types, checks):
        return self._executable


@pytest.mark.parametrize("mode", MODES)
def test_a_callable_holds_its_own_block(mode):
    x = np.random.default_rng(8).uniform(-2.0, 2.0, COUNT).astype(np.float32)
    out = FakeBuffer(np.zeros(COUNT, np.float32))
    run(KernelDefinition(autodiff_kernels.slopes, mode=mode), COUNT, FakeBuffer(x), out)
    np.testing.assert_allclose(out.array, 3 * x * x, rtol=1e-6)


def test_python_mode_says_when_a_callable_differentiates_two_types():
    x = np.random.default_rng(9).uniform(-2.0, 2.0, COUNT).astype(np.float32)
    out = FakeBuffer(np.zeros(COUNT, np.float32))
    function = autodiff_kernels.slopes_of_two_types
    with pytest.raises(UnsupportedFeatureError, match="use C mode"):
        run(KernelDefinition(function, mode="python"), COUNT, FakeBuffer(x), out)
    if compiler_available():
        run(KernelDefinition(function, mode="c"), COUNT, FakeBuffer(x), out)
        np.testing.assert_allclose(out.array, 6 * x * x, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_struct_fields_read_in_a_block_are_constants(mode):
    x = np.random.default_rng(10).uniform(-2.0, 2.0, COUNT).astype(np.float32)
    out = FakeBuffer(np.zeros(COUNT, np.float32))
    run(KernelDefinition(autodiff_kernels.struct_fields, mode=mode), COUNT, FakeBuffer(x), out)
    # d/dx (x * s + o * x * x) with s = 2x and o = x held fixed: s + 2 o x
    np.testing.assert_allclose(out.array, 2 * x + 2 * x * x, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_grad_of_intermediates_reassigned_locals_and_arguments(mode):
    x = np.random.default_rng(13).uniform(-2.0, 2.0, COUNT).astype(np.float32)
    out = FakeBuffer(np.zeros(COUNT * 4, np.float32))
    w = np.float32(0.625)
    definition = KernelDefinition(autodiff_kernels.intermediates, mode=mode)
    run(definition, COUNT, FakeBuffer(x), out, w)
    found = out.array.reshape(COUNT, 4)
    np.testing.assert_allclose(found[:, 0], np.full(COUNT, w))  # d/dy (y w + x0 + 3 x0)
    np.testing.assert_allclose(found[:, 1], 2 * x * w + 4, rtol=1e-6)  # by x0, not 3 x0
    np.testing.assert_allclose(found[:, 2], x * x, rtol=1e-6)
    np.testing.assert_array_equal(found[:, 3], np.zeros(COUNT))


def _matrix_inputs(x: float) -> tuple[np.ndarray, np.ndarray]:
    """The matrix and vector ``autodiff_kernels.matrices`` differentiates by, in float64
    (the kernel's columns are the numpy matrix's columns)."""
    columns = np.array([[x, 1.0, 0.5], [0.2, x * x, 1.0], [0.3, 0.1, 2.0]])
    return columns.T, np.array([1.0, x, 2.0])


def _matrix_function(x: float, m: np.ndarray, v: np.ndarray) -> float:
    n = m @ m.T * 0.5 + np.linalg.inv(m) / 2.0
    w = n @ v + m[:, 1] * np.sin(x)
    return float(w @ v + np.linalg.det(m) * x)


@pytest.mark.parametrize("mode", MODES)
def test_matrix_gradients_match_central_differences(mode):
    x = np.random.default_rng(14).uniform(-2.0, 2.0, COUNT)
    out = FakeBuffer(np.zeros(COUNT * 13, np.float32))
    run(
        KernelDefinition(autodiff_kernels.matrices, mode=mode),
        COUNT,
        FakeBuffer(x.astype(np.float32)),
        out,
    )
    for value, found in zip(
        x.astype(np.float32).astype(np.float64), out.array.reshape(COUNT, 13), strict=True
    ):
        m, v = _matrix_inputs(value)
        function = _matrix_function
        by_x = (function(value + STEP, m, v) - function(value - STEP, m, v)) / (2 * STEP)
        by_v = [
            (function(value, m, v + e) - function(value, m, v - e)) / (2 * STEP)
            for e in np.eye(3) * STEP
        ]
        by_m = []
        for column in range(3):
            for row in range(3):
                e = np.zeros((3, 3))
                e[row, column] = STEP
                by_m.append((function(value, m + e, v) - function(value, m - e, v)) / (2 * STEP))
        # float32 gradients against float64 differences
        np.testing.assert_allclose(found, [by_x, *by_v, *by_m], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_image_reads_are_constants_and_writes_happen_once(mode):
    image = FakeImage(4, 3, 2, "float", np.float32)
    texels = np.random.default_rng(15).uniform(0.0, 1.0, (3, 4, 2)).astype(np.float32)
    image.array[:] = texels.ravel()
    out = FakeBuffer(np.zeros(12, np.float32))
    run(KernelDefinition(autodiff_kernels.image_weights, mode=mode), (4, 3), image, out)
    x = np.arange(4, dtype=np.float32) * np.float32(0.25) + np.float32(0.5)
    a, b = texels[..., 0], texels[..., 1]
    np.testing.assert_allclose(out.array.reshape(3, 4), 2 * a * x + b, rtol=1e-6)
    written = image.array.reshape(3, 4, 2)
    np.testing.assert_allclose(written[..., 0], a * x * x + b * x, rtol=1e-6)
    np.testing.assert_array_equal(written[..., 1], b)


def test_the_block_is_found_by_the_name_autodiff(tmp_path):
    module = "import luisa_nb.luisa.autodiff as differentiation\n"
    source = module + HEADER.replace("with autodiff():", "with differentiation.autodiff():")
    body = "        requires_grad(x)\n        backward(x)\n    out.write(i, x)\n"
    with pytest.raises(KernelCompileError, match="with autodiff imported by name"):
        KernelDefinition(load_function(tmp_path, source + body), mode="python")


@pytest.mark.parametrize("mode", MODES)
def test_a_block_in_a_loop_starts_from_zero_gradients(mode):
    x = np.array([-0.25, 0.2, 0.75, -1.5], np.float32)
    out = FakeBuffer(np.zeros(12, np.float32))
    run(KernelDefinition(autodiff_kernels.repeated_blocks, mode=mode), 4, FakeBuffer(x), out)
    steps = x[:, None] + np.float32(0.5) * np.arange(3, dtype=np.float32)
    # y + scaled is 6 x^2 where x^2 > 1 (scaled = 3 x^2 there), else x^2 (+ zero)
    expected = np.where(steps * steps > 1, 12 * steps, 2 * steps)
    np.testing.assert_allclose(out.array.reshape(4, 3), expected, rtol=1e-6)
