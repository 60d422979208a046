"""Kernels dispatched through the runtime, checked against numpy."""

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb import errors
from luisa_nb.kernels.checks import KernelChecks


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
    assert record.label == "copy [8]"
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


@pytest.mark.parametrize(
    ("size", "message"),
    [
        (2**31, "dispatch size x=2147483648 is too large; each axis must be below 2\\*\\*31"),
        ((4, 2**31), "dispatch size y=2147483648 is too large"),
        ((2**31 - 1, 2**31 - 1, 2**31 - 1), "more than 2\\*\\*63 - 1 threads"),
    ],
)
def test_dispatch_sizes_the_kernel_cannot_count_are_rejected_before_enqueue(device, size, message):
    buffer = device.create_buffer(4, np.float32)

    @lnb.kernel
    def fill(target):
        target.write(lnb.dispatch_id().x, 1.0)

    with lnb.trace() as trace, pytest.raises(errors.KernelArgumentError, match=message) as raised:
        fill.dispatch_async(size, buffer)
    assert "kernel 'fill'" in str(raised.value)
    assert trace.records == []


def test_largest_axis_is_accepted(device):
    @lnb.kernel
    def nothing(target):
        pass

    command = nothing.dispatch_async((2**31 - 1, 1), device.create_buffer(1, np.float32))
    assert command.dims == (2**31 - 1, 1, 1)


@pytest.mark.parametrize("mode", ["c", "python"])
def test_out_of_range_index_fails_the_dispatch_with_the_view_size(device, mode):
    buffer = device.create_buffer(16, np.float32)
    buffer.fill(0.0)

    @lnb.kernel(mode=mode)
    def overrun(target):
        i = lnb.dispatch_id().x
        target.write(i + 2, 1.0)

    overrun.dispatch(8, buffer.view(4, 12))
    with pytest.raises(errors.CommandFailedError) as raised:
        device.default_stream.synchronize()
    cause = raised.value.__cause__
    assert isinstance(cause, errors.KernelIndexError)
    assert (cause.kernel, cause.buffer, cause.index, cause.size) == ("overrun", "target", 8, 8)
    assert cause.thread == (6, 0, 0)
    assert buffer.numpy()[12:].tolist() == [0.0] * 4  # past the view: untouched


def test_checks_setting_is_validated_when_the_kernel_is_declared():
    with pytest.raises(errors.ConfigurationError, match="checks='always'"):

        @lnb.kernel(checks="always")
        def unused(target):
            pass


@pytest.mark.parametrize(
    ("kernel_checks", "device_checks", "checked"),
    [(None, True, True), (None, False, False), (False, True, False), ("nan", False, True)],
)
def test_kernel_checks_default_to_the_device(
    device, monkeypatch, kernel_checks, device_checks, checked
):
    monkeypatch.setattr(device, "kernel_checks", KernelChecks.parse(device_checks))
    buffer = device.create_buffer(4, np.float32)
    buffer.fill(1.0)

    @lnb.kernel(mode="c", checks=kernel_checks)
    def copy(target):
        i = lnb.dispatch_id().x
        target.write(i, target.read(i) + 1.0)

    assert ("lnb_read_float32_int32" in copy.source(buffer)) == checked
    copy.dispatch(4, buffer)
    device.synchronize()
    assert buffer.numpy().tolist() == [2.0] * 4
