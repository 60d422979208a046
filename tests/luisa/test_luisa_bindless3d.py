"""3D images in luisa-python's BindlessArray on luisa_nb, and the samplers (filter and
address mode) of 2D and 3D slots: kernels' samples against a numpy reference, C against
Python mode bit for bit, reads, sizes, the mip and gradient forms, the trace, and real
luisa-python 0.3.7 where it runs."""

from __future__ import annotations

import math
from itertools import product
from pathlib import Path

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.errors import (
    CommandFailedError,
    InvalidArgumentError,
    KernelCompileError,
    KernelIndexError,
    UnsupportedFeatureError,
)
from luisa_nb.luisa.mathtypes import float2, float3, float4, int3, uint2, uint3
from luisa_nb.recording.trace import digest_bytes
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa

PROGRAM = Path(__file__).parent / "programs" / "bindless3d.py"
F32 = np.float32
WIDTH, HEIGHT, DEPTH = 5, 4, 3
FILTERS = ("POINT", "LINEAR_POINT")
ADDRESSES = ("EDGE", "REPEAT", "MIRROR", "ZERO")
SAMPLERS = list(product(FILTERS, ADDRESSES))


def address(i: int, n: int, mode: str) -> int | None:
    """Texel index of tap ``i`` on an axis of ``n`` texels; None reads zero."""
    if mode == "REPEAT":
        return i % n
    if mode == "MIRROR":
        t = i % (2 * n)
        return t if t < n else 2 * n - 1 - t
    if mode == "EDGE":
        return min(max(i, 0), n - 1)
    return i if 0 <= i < n else None


def reference_sample(texels: np.ndarray, uv: tuple[float, ...], filter: str, mode: str):
    """A sample of ``texels`` (axes (z,) y, x, channels; 4 channels) at ``uv`` (x, y(,
    z)), in float64: point filtering takes texel ``floor(u n)``, linear filtering blends
    the taps around ``u n - 0.5`` by their distances."""
    sizes = texels.shape[-2::-1]
    axes = []
    for u, n in zip(uv, sizes, strict=True):
        if filter == "POINT":
            axes.append([(address(math.floor(u * n), n, mode), 1.0)])
        else:
            x = u * n - 0.5
            i = math.floor(x)
            axes.append([(address(i, n, mode), 1 - (x - i)), (address(i + 1, n, mode), x - i)])
    total = np.zeros(4)
    for taps in product(*axes):
        if all(i is not None for i, _ in taps):
            total += math.prod(w for _, w in taps) * texels[tuple(i for i, _ in reversed(taps))]
    return total


def coordinates(count: int) -> np.ndarray:
    """``count`` points in [-2.5, 3.5)^3 none of whose ``u n`` or ``u n - 0.5`` lies
    within 1e-3 of an integer (where float32 and float64 could pick other texels)."""
    rng = np.random.default_rng(3)
    chosen = []
    while len(chosen) < count:
        point = rng.uniform(-2.5, 3.5, 3).astype(F32)
        products = np.concatenate(
            [point * (WIDTH, HEIGHT, DEPTH), point * (WIDTH, HEIGHT, DEPTH) - 0.5]
        )
        if np.all(np.abs(products - np.round(products)) > 1e-3):
            chosen.append(point)
    return np.asarray([*chosen, np.asarray([0.3, 0.45, 0.6], F32)], F32)


def padded(texels: np.ndarray) -> np.ndarray:
    missing = 4 - texels.shape[-1]
    return np.concatenate([texels, np.zeros((*texels.shape[:-1], missing), F32)], axis=-1)


def sample_all(heap, points, out):
    i = dispatch_id().x  # noqa: F821 (luisa-python finds builtins by name)
    j = dispatch_id().y  # noqa: F821
    slot = 4 * (j // 3) + j % 3
    p = float3(points.read(3 * i), points.read(3 * i + 1), points.read(3 * i + 2))
    value = float4(0.0, 0.0, 0.0, 0.0)
    if j % 3 == 2:
        value = heap.texture2d_sample(slot, float2(p.x, p.y))
    else:
        value = heap.texture3d_sample(slot, p)
    base = 4 * (j * dispatch_size().x + i)  # noqa: F821
    out.write(base, value.x)
    out.write(base + 1, value.y)
    out.write(base + 2, value.z)
    out.write(base + 3, value.w)


def sampled_images():
    """A float 3D image, a 2-channel byte 3D image and a float 2D image, their texels as
    kernels see them (4 channels), and a heap holding the three with every sampler: slot
    ``4 * sampler + image``."""
    rng = np.random.default_rng(11)
    volume = rng.random((DEPTH, HEIGHT, WIDTH, 4), dtype=F32)
    bytes_ = rng.integers(0, 256, (DEPTH, HEIGHT, WIDTH, 2), dtype=np.uint8)
    plane = rng.random((HEIGHT, WIDTH, 4), dtype=F32)
    images = [luisa.Image3D.from_array(volume), luisa.image3d(bytes_), luisa.image2d(plane)]
    heap = luisa.BindlessArray(64)
    for index, (filter, mode) in enumerate(SAMPLERS):
        for position, image in enumerate(images):
            heap.emplace(
                4 * index + position,
                image,
                filter=getattr(luisa.lcapi.Filter, filter),
                address=getattr(luisa.lcapi.Address, mode),
            )
    heap.update()
    texels = [volume, padded(bytes_.astype(F32) / F32(255)), plane]
    return heap, texels


def run(function, mode: str, size: tuple[int, ...], *args) -> None:
    kernel = lnb.kernel(function, mode=mode)
    luisa.synchronize()
    kernel.dispatch(size, *args, sync=True)


def test_samples_match_numpy_and_both_modes_agree_bit_for_bit(fresh_session):
    luisa.init("cpu")
    heap, texels = sampled_images()
    points = coordinates(11)
    results = {}
    for mode in ("c", "python"):
        out = luisa.Buffer(len(points) * len(SAMPLERS) * 3 * 4, float)
        run(sample_all, mode, (len(points), len(SAMPLERS) * 3), heap, luisa.buffer(points), out)
        results[mode] = out.numpy().reshape(len(SAMPLERS), 3, len(points), 4)
    np.testing.assert_array_equal(results["c"].view(np.uint32), results["python"].view(np.uint32))
    for (index, (filter, mode)), image in product(enumerate(SAMPLERS), range(3)):
        expected = [
            reference_sample(texels[image], tuple(p[: texels[image].ndim - 1]), filter, mode)
            for p in points.astype(np.float64)
        ]
        np.testing.assert_allclose(
            results["c"][index, image],
            expected,
            rtol=0,
            atol=2e-5,
            err_msg=f"{filter}/{mode} on image {image}",
        )


def test_linear_filtering_is_trilinear_at_known_coordinates(fresh_session):
    """A 2x2x2 image of 0..7: linear filtering at the centre of the eight texels gives
    their mean, and a point at a texel's centre gives that texel."""
    luisa.init("cpu")
    ramp = np.arange(8, dtype=F32).reshape(2, 2, 2, 1)
    heap = luisa.bindless_array({0: luisa.Image3D.from_array(ramp)})
    out = luisa.Buffer(3 * 4, float)

    @luisa.func
    def probe(out):
        centre = heap.texture3d_sample(0, float3(0.5, 0.5, 0.5))
        corner = heap.texture3d_sample(0, float3(0.75, 0.25, 0.75))  # texel (1, 0, 1)
        between = heap.texture3d_sample(0, float3(0.5, 0.25, 0.25))  # texels 0 and 1
        out.write(0, centre.x)
        out.write(1, corner.x)
        out.write(2, between.x)

    probe(out, dispatch_size=1)
    np.testing.assert_array_equal(out.numpy()[:3], [3.5, 5.0, 0.5])


def probe_forms(heap, out):
    i = dispatch_id().x  # noqa: F821
    p = float3(0.1 * float(i) - 0.3, 0.37, 0.81)
    plain = heap.texture3d_sample(0, p)
    level = heap.texture3d_sample_mip(0, p, i)
    grad = heap.texture3d_sample_grad(0, p, float3(0.5, 0.0, 0.0), float3(0.0, 0.5, 0.0))
    grad_level = heap.texture3d_sample_grad_level(
        0, p, float3(0.5, 0.0, 0.0), float3(0.0, 0.5, 0.0), 2.0
    )
    flat = heap.texture2d_sample(1, p.xy)
    flat_level = heap.texture2d_sample_mip(1, p.xy, 3)
    flat_grad = heap.texture2d_sample_grad(1, p.xy, float2(0.5, 0.0), float2(0.0, 0.5))
    flat_grad_level = heap.texture2d_sample_grad_level(
        1, p.xy, float2(0.5, 0.0), float2(0.0, 0.5), 1.0
    )
    texel = heap.texture3d_read(0, int3(i % 5, i % 4, i % 3))
    texel_u = heap.texture3d_read(2, uint3(i % 5, 3, 2))
    size = heap.texture3d_size(0)
    size_level = heap.texture3d_size_mip(0, 2)
    size_2d = heap.texture2d_size_mip(1, i)
    base = 16 * i
    out.write(base, plain.x)
    out.write(base + 1, level.x)
    out.write(base + 2, grad.x)
    out.write(base + 3, grad_level.x)
    out.write(base + 4, flat.y)
    out.write(base + 5, flat_level.y)
    out.write(base + 6, flat_grad.y)
    out.write(base + 7, flat_grad_level.y)
    out.write(base + 8, texel.x)
    out.write(base + 9, texel.w)
    out.write(base + 10, texel_u.x)
    out.write(base + 11, texel_u.y + texel_u.z + texel_u.w)
    out.write(base + 12, float(size.x * 100 + size.y * 10 + size.z))
    out.write(base + 13, float(size_level.x * 100 + size_level.y * 10 + size_level.z))
    out.write(base + 14, float(size_2d.x * 10 + size_2d.y))
    out.write(base + 15, 0.0)


@pytest.mark.parametrize("mode", ["c", "python"])
def test_reads_sizes_and_the_mip_and_gradient_forms(fresh_session, mode):
    """Images have one mip level: every level and gradient form samples level 0, and
    ``*_size_mip`` gives level 0's size."""
    luisa.init("cpu")
    rng = np.random.default_rng(5)
    volume = rng.random((DEPTH, HEIGHT, WIDTH, 4), dtype=F32)
    gray = rng.random((DEPTH, HEIGHT, WIDTH, 1), dtype=F32)
    plane = rng.random((HEIGHT, WIDTH, 2), dtype=F32)
    heap = luisa.bindless_array(
        {0: luisa.image3d(volume), 1: luisa.image2d(plane), 2: luisa.image3d(gray)}
    )
    out = luisa.Buffer(16 * 6, float)
    run(probe_forms, mode, (6,), heap, out)
    rows = out.numpy().reshape(6, 16)
    for i, row in enumerate(rows):
        p = (0.1 * i - 0.3, 0.37, 0.81)
        sample = reference_sample(volume, p, "LINEAR_POINT", "REPEAT")[0]
        flat = reference_sample(padded(plane), p[:2], "LINEAR_POINT", "REPEAT")[1]
        np.testing.assert_allclose(row[:4], [sample] * 4, rtol=0, atol=2e-6)
        assert row[0] == row[1] == row[2] == row[3]
        np.testing.assert_allclose(row[4:8], [flat] * 4, rtol=0, atol=2e-6)
        assert row[4] == row[5] == row[6] == row[7]
        texel = volume[i % 3, i % 4, i % 5]
        expected = [texel[0], texel[3], gray[2, 3, i % 5, 0], 0.0, 543, 543, 54, 0]
        np.testing.assert_array_equal(row[8:], np.asarray(expected, F32))


@pytest.mark.parametrize("mode", ["c", "python"])
def test_a_slot_of_the_other_dimension_stops_the_dispatch(fresh_session, mode):
    luisa.init("cpu")
    heap = luisa.bindless_array(
        {1: luisa.Image2D(2, 2, 4, float), 3: luisa.Image3D(2, 2, 2, 4, float)}
    )
    out = luisa.Buffer(4, float)

    def flat_read(heap, out):
        out.write(0, heap.texture2d_read(3, uint2(0, 0)).x)

    with pytest.raises(CommandFailedError) as caught:
        run(flat_read, mode, (1,), heap, out)
    error = caught.value.failures[0][2]
    assert isinstance(error, KernelIndexError) and error.index == 3
    assert "heap.texture2d_read on slot 3" in str(error) and "can use: 1." in str(error)
    assert f"{Path(__file__).name}:{flat_read.__code__.co_firstlineno + 1}:" in str(error)


def test_texture_arguments_are_checked_at_compile_time(fresh_session):
    luisa.init("cpu")
    heap = luisa.bindless_array({0: luisa.Image3D(2, 2, 2, 1, float)})
    out = luisa.Buffer(1, float)

    @luisa.func
    def flat_uv(out):
        out.write(0, heap.texture3d_sample(0, float2(0.5, 0.5)).x)

    @luisa.func
    def float_level(out):
        out.write(0, heap.texture3d_sample_mip(0, float3(0.5, 0.5, 0.5), 1.5).x)

    with pytest.raises(KernelCompileError, match=r"texture3d_sample\(slot, uv\) takes a float3"):
        flat_uv(out, dispatch_size=1)
    float_level(out, dispatch_size=1)  # a float level compiles, as in luisa-python
    luisa.synchronize()


def test_update_changes_the_sampler_and_remove_texture3d_empties_the_slot(fresh_session):
    luisa.init("cpu")
    ramp = np.arange(4, dtype=F32).reshape(1, 1, 4, 1)
    image = luisa.image3d(ramp)
    heap = luisa.BindlessArray(4)
    heap.emplace(2, image, address=luisa.lcapi.Address.EDGE)
    heap.update()
    out = luisa.Buffer(1, float)

    @luisa.func
    def outside(out):
        out.write(0, heap.texture3d_sample(2, float3(1.3, 0.5, 0.5)).x)

    outside(out, dispatch_size=1)
    assert out.numpy()[0] == 3.0  # the edge texel
    heap.emplace(2, image, filter=luisa.lcapi.Filter.POINT, address=luisa.lcapi.Address.ZERO)
    outside(out, dispatch_size=1)
    assert out.numpy()[0] == 3.0  # not updated yet
    heap.update()
    outside(out, dispatch_size=1)
    assert out.numpy()[0] == 0.0
    heap.remove_texture3d(2)
    heap.update()
    outside(out, dispatch_size=1)
    with pytest.raises(CommandFailedError, match=r"texture3d_sample on slot 2.*can use: none"):
        luisa.synchronize()


def both_images(heap, out):
    i = dispatch_id().x  # noqa: F821
    flat = heap.texture2d_read(2, uint2(i % 2, 0)).x
    out.write(i, flat + heap.texture3d_read(2, uint3(0, 0, i % 4)).x * 10.0)


def flat_image(heap, out):
    i = dispatch_id().x  # noqa: F821
    out.write(i, heap.texture2d_read(2, uint2(i % 2, 0)).x)


def volume_image(heap, out):
    i = dispatch_id().x  # noqa: F821
    out.write(i, heap.texture3d_read(2, uint3(0, 0, i % 4)).x)


@pytest.mark.parametrize("mode", ["c", "python"])
def test_a_slot_holds_a_2d_and_a_3d_image_and_each_is_removed_alone(fresh_session, mode):
    luisa.init("cpu")
    volume = luisa.image3d(np.arange(4, dtype=F32).reshape(4, 1, 1, 1) + F32(1))
    flat = luisa.Image2D.from_array(np.array([[[0.25], [0.5]]], F32))
    heap = luisa.BindlessArray(4)
    heap.emplace(2, volume)
    heap.emplace(2, flat)
    heap.update()
    out = luisa.Buffer(4, float)
    run(both_images, mode, (4,), heap, out)
    assert out.numpy().tolist() == [10.25, 20.5, 30.25, 40.5]
    heap.remove_texture3d(2)
    heap.update()
    run(flat_image, mode, (4,), heap, out)
    assert out.numpy().tolist() == [0.25, 0.5, 0.25, 0.5]
    with pytest.raises(CommandFailedError, match=r"slot 2, which holds no 3D image.*can use: none"):
        run(volume_image, mode, (4,), heap, out)
    heap.emplace(2, volume)
    heap.remove_texture2d(2)
    heap.update()
    run(volume_image, mode, (4,), heap, out)
    assert out.numpy().tolist() == [1, 2, 3, 4]


def test_emplace_checks_images_and_samplers(fresh_session):
    luisa.init("cpu")
    heap = luisa.BindlessArray(4)
    with pytest.raises(InvalidArgumentError, match="float images"):
        heap.emplace(0, luisa.Image3D(2, 2, 2, 1, int))
    with pytest.raises(InvalidArgumentError, match=r"lcapi\.Address\.EDGE"):
        heap.emplace(0, luisa.Image3D(2, 2, 2, 1, float), address="clamp")
    with pytest.raises(InvalidArgumentError, match="are for images, not for Buffer"):
        heap.emplace(0, luisa.Buffer(2, float), filter=luisa.lcapi.Filter.POINT)
    with pytest.raises(UnsupportedFeatureError, match=r"lcapi\.Sampler"):
        luisa.lcapi.Sampler  # noqa: B018


def test_a_dispatch_reads_3d_images_and_their_copies_are_traced(device_name):
    values = np.random.default_rng(2).random((DEPTH, HEIGHT, WIDTH, 4), dtype=F32)
    back = np.zeros_like(values)
    with lnb.trace(capture="full") as trace:
        image = luisa.Image3D(WIDTH, HEIGHT, DEPTH, 4, float)
        image.copy_from(values)
        heap = luisa.bindless_array({0: image})
        out = luisa.Buffer(4, float)

        @luisa.func
        def first(out):
            out.write(dispatch_id().x, heap.texture3d_read(0, uint3(0, 0, 0)).x)  # noqa: F821

        first(out, dispatch_size=4)
        image.copy_to(back)
    upload, dispatch, download = [
        r for r in trace.commands if r.kind in ("upload", "dispatch", "download")
    ]
    assert {(r.buffer, r.access.value) for r in dispatch.device_ranges} == {
        (image.id, "read"),
        (out.id, "write"),
    }
    raw = np.frombuffer(values.tobytes(), np.uint8)
    assert upload.host_read is not None and download.host_write is not None
    assert upload.host_read < dispatch.started and download.host_write >= dispatch.finished
    assert upload.data_capture.digest == digest_bytes(raw)
    assert download.data_capture.digest == digest_bytes(raw)
    np.testing.assert_array_equal(back, values)


def test_texture_types_as_in_luisa_python(fresh_session):
    luisa.init("cpu")
    image = luisa.Image3D(2, 2, 2, 4, float)
    assert image.texture3DType == luisa.Texture3DType(float, 4)
    assert luisa.Image2D(2, 2, 1, int).texture2DType == luisa.Texture2DType(int, 1)
    assert luisa.Texture3DType(float, 4) != luisa.Texture2DType(float, 4)
    assert len({luisa.Texture3DType(float, 4), luisa.Texture3DType(float, 4)}) == 1
    assert repr(luisa.Texture3DType(luisa.uint, 2)) == "Texture3DType(uint, 2)"
    with pytest.raises(InvalidArgumentError, match="1, 2 or 4 channels"):
        luisa.Texture3DType(float, 3)

    @luisa.func
    def annotated(volume: luisa.Texture3DType(float, 4)):
        volume.write(uint3(1, 1, 1), float4(1.0, 2.0, 3.0, 4.0))

    annotated(image, dispatch_size=1)
    assert image.numpy()[1, 1, 1].tolist() == [1.0, 2.0, 3.0, 4.0]
    expected = r"'volume' is annotated Texture3DType\(float, 4\), got Texture3DType\(float, 2\)"
    with pytest.raises(InvalidArgumentError, match=expected):
        annotated(luisa.Image3D(2, 2, 2, 2, float), dispatch_size=1)
    with pytest.raises(InvalidArgumentError, match=r"got Texture2DType\(float, 4\)"):
        annotated(luisa.Image2D(2, 2, 4, float), dispatch_size=1)
    with pytest.raises(InvalidArgumentError, match=r"got BufferType\(float\)"):
        annotated(luisa.Buffer(4, float), dispatch_size=1)


def printed_rows(output: str) -> np.ndarray:
    rows = [line.split()[1:] for line in output.splitlines() if line.startswith("row ")]
    return np.asarray(rows, np.float64)


def program_reference() -> np.ndarray:
    """What tests/luisa/programs/bindless3d.py prints, from numpy."""
    values = (np.arange(4 * 3 * 2 * 4, dtype=F32) / F32(10)).reshape(2, 3, 4, 4)
    plane = np.ascontiguousarray(values[1])
    rows = []
    for i in range(8):
        p = (0.15 * i - 0.17, 0.1 * i + 0.05, 0.13 * i + 0.3)
        point = reference_sample(values, p, "POINT", "EDGE")
        linear = reference_sample(values, p, "LINEAR_POINT", "REPEAT")
        grad = reference_sample(plane, (0.4, 0.31 + 0.05 * i), "LINEAR_POINT", "REPEAT")
        texel = values[i % 2, i % 3, i % 4]
        rows.append([texel[0] + texel[3], 432, point[0], point[2], linear[0], grad[1]])
    return np.asarray(rows)


def test_the_program_matches_numpy(fresh_session, capsys):
    run_on_luisa_nb(PROGRAM, "cpu")
    rows = printed_rows(capsys.readouterr().out)
    np.testing.assert_allclose(rows, program_reference(), rtol=0, atol=2e-5)


def test_the_program_beside_real_luisa(fresh_session, capsys):
    """luisa-python 0.3.7 (CPU backend) agrees on texel reads, sizes, point sampling with
    edge addressing and 2D gradient sampling, but samples 3D images with point filtering
    and edge addressing whatever the slot's sampler: its linear/repeat column equals the
    point/edge one (luisa_nb filters trilinearly)."""
    require_real_luisa()
    real = printed_rows(run_on_real_luisa(PROGRAM, "cpu"))
    run_on_luisa_nb(PROGRAM, "cpu")
    ours = printed_rows(capsys.readouterr().out)
    agreeing = [0, 1, 2, 3, 5]
    np.testing.assert_allclose(real[:, agreeing], ours[:, agreeing], rtol=0, atol=2e-5)
    np.testing.assert_array_equal(real[:, 4], real[:, 2])
    assert np.abs(ours[:, 4] - ours[:, 2]).max() > 0.1


def test_non_finite_and_far_coordinates_agree_in_both_modes(fresh_session):
    """NaN, infinite and huge coordinates neither overflow nor differ between modes."""
    luisa.init("cpu")
    heap, _ = sampled_images()
    odd = [np.nan, np.inf, -np.inf, 1e20, -3e9, 0.5]
    points = np.asarray(list(product(odd, [0.4], [np.nan, 0.7])), F32)
    results = {}
    for mode in ("c", "python"):
        out = luisa.Buffer(len(points) * len(SAMPLERS) * 3 * 4, float)
        with np.errstate(invalid="ignore"):
            run(sample_all, mode, (len(points), len(SAMPLERS) * 3), heap, luisa.buffer(points), out)
        results[mode] = out.numpy()
    np.testing.assert_array_equal(results["c"], results["python"])
    assert np.isfinite(results["c"]).any() and np.isnan(results["c"]).any()


def test_unknown_methods_and_byte_buffers_are_compile_errors(fresh_session):
    luisa.init("cpu")
    heap = luisa.bindless_array({0: luisa.Buffer(2, float)})
    out = luisa.Buffer(1, float)

    @luisa.func
    def bytes_read(out):
        out.write(0, heap.byte_buffer_read(float, 0, 0))

    @luisa.func
    def volume_read(out):
        out.write(0, heap.texture3d_load(0, uint3(0, 0, 0)).x)

    with pytest.raises(KernelCompileError, match="byte buffers are not supported") as caught:
        bytes_read(out, dispatch_size=1)
    message = str(caught.value)
    assert f"{Path(__file__).name}:" in message
    assert "out.write(0, heap.byte_buffer_read(float, 0, 0))" in message
    with pytest.raises(KernelCompileError, match=r"sample_grad_level, size, size_mip\); not"):
        volume_read(out, dispatch_size=1)


def read_outside(heap, image, out):
    out.write(0, heap.texture3d_read(0, uint3(0, 5, 0)).x)
    out.write(1, image.read(int3(1, -1, 4)))


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("mode", ["c", "python"])
def test_a_texel_outside_names_its_coordinate_and_line(fresh_session, mode, which):
    """Through a bindless array (which 0) or directly (which 1), an out-of-range 3D texel
    is reported with its own coordinate (y beyond the height, a negative y) and the
    kernel's line."""
    luisa.init("cpu")
    image = luisa.Image3D(2, 2, 2, 1, float)
    heap = luisa.bindless_array({0: luisa.Image3D(2, 6 if which else 2, 2, 1, float)})
    out = luisa.Buffer(2, float)
    with pytest.raises(CommandFailedError) as caught:
        run(read_outside, mode, (1,), heap, image, out)
    message = str(caught.value.failures[0][2])
    line = read_outside.__code__.co_firstlineno + 1 + which
    expected = ["texel (0, 5, 0) of image 'heap[0]'", "texel (1, -1, 4) of image 'image'"][which]
    assert expected in message and f"{Path(__file__).name}:{line}:" in message
