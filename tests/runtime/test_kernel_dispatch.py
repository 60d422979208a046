"""Kernels dispatched through the runtime, checked against numpy."""

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb import errors


@pytest.fixture(params=["c", "python"])
def mode(request):
    return request.param


def test_saxpy_with_scalar_argument(device, mode):
    n = 1000 if mode == "c" else 64
    x = device.create_buffer(n, np.float32)
    y = device.create_buffer(n, np.float32)
    xs = np.linspace(-1, 1, n, dtype=np.float32)
    ys = np.linspace(3, 4, n, dtype=np.float32)
    x.copy_from(xs)
    y.copy_from(ys)

    @lnb.kernel(mode=mode)
    def saxpy(a, source, target):
        i = lnb.dispatch_id().x
        target.write(i, a * source.read(i) + target.read(i))

    saxpy.dispatch(n, 2.5, x, y)
    np.testing.assert_allclose(y.numpy(), np.float32(2.5) * xs + ys, rtol=1e-6)


def test_luisa_python_call_style_and_views(device):
    data = device.create_buffer(16, np.int32)
    data.fill(0)

    @lnb.kernel
    def index(target, offset):
        i = lnb.dispatch_id().x
        target.write(i, i + offset)

    index(data.view(4, 12), 100, dispatch_size=8)
    np.testing.assert_array_equal(data.numpy(), [0] * 4 + list(range(100, 108)) + [0] * 4)


def test_mandelbrot_matches_numpy(device):
    width = height = 256
    iterations = 64
    image = device.create_buffer(width * height, np.int32)

    @lnb.kernel
    def mandelbrot(out):
        p = lnb.dispatch_id()
        cx = float(p.x) / width * 3.0 - 2.0
        cy = float(p.y) / height * 3.0 - 1.5
        zx = 0.0
        zy = 0.0
        n = 0
        while n < iterations and zx * zx + zy * zy <= 4.0:
            t = zx * zx - zy * zy + cx
            zy = 2.0 * zx * zy + cy
            zx = t
            n += 1
        out.write(p.y * width + p.x, n)

    mandelbrot.dispatch((width, height), image)
    expected = _numpy_mandelbrot(width, height, iterations)
    got = image.numpy().reshape(height, width)
    # float32 rounding may flip a few points on the set's boundary
    assert np.mean(got == expected) > 0.995
    assert got.max() == iterations and got.min() >= 1


def _numpy_mandelbrot(width, height, iterations):
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    cx = xs / np.float32(width) * np.float32(3.0) - np.float32(2.0)
    cy = ys / np.float32(height) * np.float32(3.0) - np.float32(1.5)
    zx = np.zeros_like(cx)
    zy = np.zeros_like(cy)
    counts = np.zeros(cx.shape, np.int32)
    for _ in range(iterations):
        alive = zx * zx + zy * zy <= np.float32(4.0)
        t = zx * zx - zy * zy + cx
        zy = np.where(alive, np.float32(2.0) * zx * zy + cy, zy)
        zx = np.where(alive, t, zx)
        counts += alive
    return counts


def test_dispatch_records_device_ranges_by_access(device):
    x = device.create_buffer(8, np.float32)
    y = device.create_buffer(8, np.float32)

    @lnb.kernel
    def copy(target):
        i = lnb.dispatch_id().x
        target.write(i, x.read(i))

    with lnb.trace() as trace:
        copy.dispatch(8, y.view(0, 8))
        device.synchronize()
    record = trace.commands[0]
    assert record.label == "copy"
    ranges = {(r.buffer, r.access.value) for r in record.device_ranges}
    assert ranges == {(y.id, "write"), (x.id, "read")}


def test_wrong_kernel_arguments_are_rejected_before_enqueue(device):
    buffer = device.create_buffer(4, np.float32)

    @lnb.kernel
    def fill(target, value):
        target.write(lnb.dispatch_id().x, value)

    with lnb.trace() as trace:
        with pytest.raises(errors.KernelArgumentError):
            fill.dispatch_async(4, buffer)
        with pytest.raises(errors.KernelArgumentError):
            fill.dispatch_async(4, buffer, "one")
        with pytest.raises(errors.KernelArgumentError):
            fill.dispatch_async(-1, buffer, 1.0)
        with pytest.raises(errors.KernelArgumentError):
            fill.dispatch_async((1, 2, 3, 4), buffer, 1.0)
    assert trace.records == []


def test_kernel_over_two_devices_is_rejected():
    first, second = lnb.create_device("cpu"), lnb.create_device("cpu")
    a = first.create_buffer(4, np.float32)
    b = second.create_buffer(4, np.float32)

    @lnb.kernel
    def pair(source, target):
        i = lnb.dispatch_id().x
        target.write(i, source.read(i))

    with pytest.raises(errors.DeviceMismatchError):
        pair.dispatch_async(4, a, b)


def test_python_mode_error_surfaces_at_synchronize(device):
    buffer = device.create_buffer(4, np.float32)

    @lnb.kernel(mode="python")
    def overrun(target):
        i = lnb.dispatch_id().x
        target.write(i + 10, 1.0)

    stream = device.default_stream
    with lnb.trace() as trace:
        command = overrun.dispatch_async(4, buffer)
        stream.submit([command, buffer.fill_async(2.0)])
        with pytest.raises(errors.CommandFailedError, match=f"#{command.id}") as raised:
            stream.synchronize()
    assert "IndexError" in str(raised.value)
    assert [r.status.value for r in trace.commands] == ["failed", "skipped"]
    buffer.fill(3.0)
    np.testing.assert_array_equal(buffer.numpy(), 3.0)


def test_luisa_python_source_with_unbound_builtins_runs(device, mode):
    """luisa-python kernels call `dispatch_id()` without importing it; so may ours."""
    target = device.create_buffer(8, np.float32)

    @lnb.kernel(mode=mode)
    def roots(out):
        i = dispatch_id().x  # noqa: F821
        out.write(i, sqrt(float(i)))  # noqa: F821

    roots.dispatch(8, target)
    np.testing.assert_allclose(target.numpy(), np.sqrt(np.arange(8, dtype=np.float32)))
