"""Streaming stores: which buffers a block of an unchecked kernel writes through a tile
streamed out with non-temporal stores, and that the results are those of ordinary
stores."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.kernels import BufferType, KernelDefinition, ScalarType, compiler_available
from luisa_nb.kernels.c.emitter import CEmitter
from luisa_nb.kernels.c.streaming import streamed_buffers
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.frontend.captures import CaptureResolver
from luisa_nb.kernels.type_system import MatrixType, VectorType
from luisa_nb.kernels.typing.typer import KernelTyper

from . import streaming_kernels
from .helpers import FakeBuffer, run

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
F32 = BufferType(ScalarType.FLOAT32)
I32 = BufferType(ScalarType.INT32)


def streamed(name: str, types: tuple, checks: bool | str = False) -> tuple[int, ...]:
    function = getattr(streaming_kernels, name)
    definition = KernelDefinition(function, mode="c")
    kernel = KernelTyper(definition.kernel_source, types, CaptureResolver(function), "c").run()
    return streamed_buffers(kernel, KernelChecks.parse(checks))


@pytest.mark.parametrize(
    ("name", "types", "expected"),
    [
        ("vecadd", (F32, F32, F32), (2,)),
        ("two_outputs", (F32, F32, F32), (1, 2)),
        ("scale_in_place", (F32, ScalarType.FLOAT32), ()),  # read too
        ("shifted", (F32, F32), ()),  # not at the thread's x
        ("in_a_branch", (F32, F32), ()),  # not every thread writes
        ("moved_index", (F32, F32), ()),  # the index local changes
        ("gather", (F32, I32, F32), (2,)),
        ("with_a_loop", (F32, F32), ()),  # threads run one by one
    ],
)
def test_buffers_written_only_at_the_threads_x_are_streamed(name, types, expected) -> None:
    assert streamed(name, types) == expected


@pytest.mark.parametrize("checks", [True, "nan"])
def test_checked_kernels_store_as_usual(checks) -> None:
    assert streamed("vecadd", (F32, F32, F32), checks) == ()


def test_elements_over_16_bytes_are_not_streamed() -> None:
    float4 = BufferType(VectorType(ScalarType.FLOAT32, 4))
    assert streamed("vecadd", (float4, float4, float4)) == (2,)
    matrix = BufferType(MatrixType(4))
    assert streamed("vecadd", (matrix, matrix, matrix)) == ()


@pytest.fixture
def always_streaming(monkeypatch):
    """Every dispatch streams, however small."""
    monkeypatch.setattr(CEmitter, "streaming_bytes", 1)


def floats(values) -> FakeBuffer:
    return FakeBuffer(np.asarray(values, np.float32))


def misaligned(count: int) -> FakeBuffer:
    """A buffer of ``count`` zeros whose data starts 4 bytes past a 16-byte boundary."""
    buffer = floats(np.zeros(count))
    backing = np.zeros(count + 8, np.float32)
    skip = (-backing.ctypes.data % 16) // 4 + 1
    buffer.array = backing[skip : skip + count]
    return buffer


@needs_compiler
@pytest.mark.usefixtures("always_streaming")
def test_streamed_results_equal_numpy_for_any_length_and_alignment() -> None:
    rng = np.random.default_rng(5)
    for count in (1, 127, 128, 2049, 5000):
        a, b = rng.random(count, np.float32), rng.random(count, np.float32)
        out = misaligned(count)
        definition = KernelDefinition(streaming_kernels.vecadd, mode="c")
        run(definition, count, floats(a), floats(b), out, checks=False)
        np.testing.assert_array_equal(out.array, a + b)


@needs_compiler
@pytest.mark.usefixtures("always_streaming")
def test_two_streamed_outputs_and_rows_of_a_2d_dispatch() -> None:
    a = np.arange(300, dtype=np.float32)
    sums, squares = floats(np.zeros(300)), floats(np.zeros(300))
    definition = KernelDefinition(streaming_kernels.two_outputs, mode="c")
    run(definition, (300, 3), floats(a), sums, squares, checks=False)
    np.testing.assert_array_equal(sums.array, a * 2)
    np.testing.assert_array_equal(squares.array, a * a)


@needs_compiler
def test_a_large_dispatch_into_a_view_streams_through_the_runtime() -> None:
    count = (CEmitter.streaming_bytes // 4) + 37
    device = lnb.create_device("cpu")
    rng = np.random.default_rng(11)
    a, b = rng.random(count, np.float32), rng.random(count, np.float32)
    x, y = device.create_buffer(count, np.float32), device.create_buffer(count, np.float32)
    target = device.create_buffer(count + 1, np.float32)
    x.copy_from(a)
    y.copy_from(b)

    @lnb.kernel(checks=False)
    def vecadd(source_x, source_y, out):
        i = lnb.dispatch_id().x
        out.write(i, source_x.read(i) + source_y.read(i))

    vecadd(x, y, target.view(1, count + 1), dispatch_size=count)
    result = target.numpy()
    assert result[0] == 0.0
    np.testing.assert_array_equal(result[1:], a + b)
