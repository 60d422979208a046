"""luisa-python's BindlessArray on luisa_nb: kernels read buffers and float images by
slot, and a dispatch reads every resource of the array in the trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.analysis import HazardKind
from luisa_nb.errors import (
    CommandFailedError,
    InvalidArgumentError,
    KernelIndexError,
    UnsupportedFeatureError,
)
from luisa_nb.luisa.mathtypes import float2, float4, int2
from tests.luisa.references import mirrored_uv_display
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa

PROGRAM = Path(__file__).parent / "programs" / "bindless.py"
F32 = np.float32


def sample_reference(texels: np.ndarray, u: F32, v: F32) -> np.ndarray:
    """Bilinear filtering with repeat addressing, in float32 as the kernel computes it."""
    height, width = texels.shape[:2]
    u, v = u - np.floor(u), v - np.floor(v)
    x, y = u * F32(width) - F32(0.5), v * F32(height) - F32(0.5)
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = x - x0, y - y0
    i0, j0 = int(x0) % width, int(y0) % height
    i1, j1 = (i0 + 1) % width, (j0 + 1) % height
    top = texels[j0, i0] * (F32(1) - fx) + texels[j0, i1] * fx
    bottom = texels[j1, i0] * (F32(1) - fx) + texels[j1, i1] * fx
    return top * (F32(1) - fy) + bottom * fy


def program_reference() -> np.ndarray:
    """What tests/luisa/programs/bindless.py prints, from numpy."""
    ramp = np.arange(8, dtype=F32) * F32(1.5)
    offsets = np.arange(5, dtype=F32) + F32(100)
    texels = np.zeros((4, 8, 4), F32)
    texels[..., 0] = np.arange(8)[None, :]
    texels[..., 1] = np.arange(4)[:, None] * 10
    texels[..., 2], texels[..., 3] = 0.25, 1
    rows = []
    for i in range(16):
        texel = texels[i // 8, i % 8]
        u = F32(i) * F32(0.05) + F32(0.1)
        v = F32(i) * F32(0.03) + F32(0.2)
        sample = sample_reference(texels, u, v)
        rows.append(
            [
                ramp[i % 8] + offsets[i % 5],
                texel[0] + texel[1],
                texels[1, i % 8, 0],
                sample[0] + sample[1] * F32(0.01),
            ]
        )
    return np.asarray(rows, F32)


def printed_rows(output: str) -> np.ndarray:
    rows = [line.split()[1:] for line in output.splitlines() if line.startswith("row ")]
    return np.asarray(rows, np.float64)


def test_the_program_matches_numpy(fresh_session, capsys):
    run_on_luisa_nb(PROGRAM, "cpu")
    rows = printed_rows(capsys.readouterr().out)
    np.testing.assert_allclose(rows, program_reference(), rtol=0, atol=2e-6)


def test_the_program_matches_real_luisa(fresh_session, capsys):
    require_real_luisa()
    real = printed_rows(run_on_real_luisa(PROGRAM, "cpu"))
    run_on_luisa_nb(PROGRAM, "cpu")
    np.testing.assert_allclose(printed_rows(capsys.readouterr().out), real, rtol=0, atol=2e-6)


@pytest.mark.parametrize("mode", ["c", "python"])
def test_every_method_in_both_modes(fresh_session, mode):
    luisa.init("cpu")
    ints = luisa.Buffer.from_array(np.arange(6, dtype=np.int32) * 7)
    floats = luisa.Buffer.from_array(np.linspace(0, 1, 9, dtype=F32))
    pixels = (np.arange(5 * 3 * 2, dtype=np.uint8) * 8).reshape(3, 5, 2)
    image = luisa.Image2D.from_array(pixels)  # byte storage: unsigned normalized
    heap = luisa.bindless_array({0: ints, 4: floats, 7: image})
    out = luisa.Buffer(8 * 8, float)

    def read(table, out):
        i = dispatch_id().x  # noqa: F821
        size = table.texture2d_size(7)
        texel = table.texture2d_read(7, int2(i % 5, i % 3))
        sample = table.texture2d_sample(7, float2(0.1 * float(i), 0.35))
        out.write(8 * i, float(table.buffer_read(int, 0, i % 6)))
        out.write(8 * i + 1, table.buffer_read(float, 4, i))
        out.write(8 * i + 2, float(table.buffer_size(0) + table.buffer_size(4)))
        out.write(8 * i + 3, float(size.x * 10 + size.y))
        out.write(8 * i + 4, texel.x + texel.y * 2.0 + texel.z + texel.w)
        out.write(8 * i + 5, sample.x)
        out.write(8 * i + 6, sample.y)
        out.write(8 * i + 7, sample.z + sample.w)

    kernel = luisa.Func(read) if mode == "c" else lnb.kernel(read, mode="python")
    if mode == "c":
        kernel(heap, out, dispatch_size=8)
    else:
        luisa.synchronize()
        kernel.dispatch(8, heap, out, sync=True)
    result = out.numpy().reshape(8, 8)
    normalized = pixels.astype(F32) / F32(255)
    padded = np.concatenate([normalized, np.zeros((3, 5, 2), F32)], axis=-1)
    for i in range(8):
        texel = padded[i % 3, i % 5]
        sample = sample_reference(padded, F32(0.1) * F32(i), F32(0.35))
        expected = [
            (i % 6) * 7,
            np.linspace(0, 1, 9, dtype=F32)[i],
            15,
            53,
            texel[0] + texel[1] * F32(2),
            sample[0],
            sample[1],
            0,
        ]
        np.testing.assert_allclose(result[i], np.asarray(expected, F32), rtol=0, atol=1e-6)


def test_update_makes_emplaced_resources_visible(fresh_session):
    luisa.init("cpu")
    first = luisa.Buffer.from_array(np.full(4, 1, np.int32))
    second = luisa.Buffer.from_array(np.full(4, 2, np.int32))
    out = luisa.Buffer(4, int)
    heap = luisa.BindlessArray.empty(8)

    @luisa.func
    def copy(out):
        i = dispatch_id().x  # noqa: F821
        out.write(i, heap.buffer_read(int, 5, i))

    heap.emplace(5, first)
    heap.update()
    copy(out, dispatch_size=4)
    assert out.numpy().tolist() == [1, 1, 1, 1]
    heap.emplace(5, second)
    copy(out, dispatch_size=4)  # not updated yet: still the first buffer
    assert out.numpy().tolist() == [1, 1, 1, 1]
    heap.update()
    copy(out, dispatch_size=4)
    assert out.numpy().tolist() == [2, 2, 2, 2]
    heap.remove_buffer(5)
    heap.update()
    copy(out, dispatch_size=4)
    with pytest.raises(CommandFailedError, match=r"heap.buffer_read on slot 5.*can use: none"):
        luisa.synchronize()


def test_a_slot_of_the_wrong_kind_stops_the_dispatch(fresh_session):
    luisa.init("cpu")
    values = luisa.Buffer.from_array(np.arange(4, dtype=F32))
    heap = luisa.bindless_array({2: values})
    out = luisa.Buffer(4, float)

    @luisa.func
    def wrong(table, out):
        i = dispatch_id().x  # noqa: F821
        out.write(i, float(table.buffer_read(int, 2, i)))

    wrong(heap, out, dispatch_size=4)
    with pytest.raises(CommandFailedError, match=r"table.buffer_read on slot 2") as caught:
        luisa.synchronize()
    error = caught.value.failures[0][2]
    assert isinstance(error, KernelIndexError) and error.index == 2 and error.buffer == "table"


def test_a_dispatch_may_read_every_resource_in_the_trace(fresh_session):
    luisa.init("cpu")
    used = luisa.Buffer.from_array(np.arange(4, dtype=F32))
    unused = luisa.Buffer.from_array(np.arange(4, dtype=F32))
    image = luisa.Image2D(2, 2, 4, float)
    heap = luisa.bindless_array({0: used, 1: unused, 2: image})
    out = luisa.Buffer(4, float)

    @luisa.func
    def first(table, out):
        i = dispatch_id().x  # noqa: F821
        out.write(i, table.buffer_read(float, 0, i))

    with lnb.trace() as trace:
        first(heap, out, dispatch_size=4)
        luisa.synchronize()
    dispatch = next(r for r in trace.commands if r.kind == "dispatch")
    ranges = {(r.buffer, r.access.value) for r in dispatch.device_ranges}
    assert ranges == {  # the slots a kernel reads are known only as it runs
        (used.id, "may_read"),
        (unused.id, "may_read"),
        (image.id, "may_read"),
        (out.id, "write"),
    }
    np.testing.assert_array_equal(out.numpy(), np.arange(4, dtype=F32))


def test_a_write_on_another_stream_races_with_the_bindless_read(fresh_session):
    luisa.init("cpu")
    data = luisa.Buffer.from_array(np.arange(4, dtype=F32))
    heap = luisa.bindless_array({0: data})
    out = luisa.Buffer(4, float)
    other = luisa.Stream()

    @luisa.func
    def read(table, out):
        i = dispatch_id().x  # noqa: F821
        out.write(i, table.buffer_read(float, 0, i))

    @luisa.func
    def fill(target):
        target.write(dispatch_id().x, 7.0)  # noqa: F821

    luisa.synchronize()
    with lnb.trace() as trace:
        fill(data, dispatch_size=4, stream=other)
        other.execute()
        read(heap, out, dispatch_size=4)
        luisa.execute()
        other.synchronize()
        luisa.synchronize()
    (race,) = [h for h in trace.hazards if h.kind is HazardKind.DEVICE_RACE]
    assert race.device.buffer == data.id
    assert race.command_ids == tuple(r.id for r in trace.commands if r.kind == "dispatch")


def test_emplace_checks_its_resources(fresh_session):
    luisa.init("cpu")
    heap = luisa.BindlessArray(4)
    with pytest.raises(InvalidArgumentError, match="float images"):
        heap.emplace(0, luisa.Image2D(2, 2, 1, int))
    with pytest.raises(InvalidArgumentError, match="0 <= slot < 4"):
        heap.emplace(4, luisa.Buffer(2, float))
    with pytest.raises(UnsupportedFeatureError, match="byte offset"):
        heap.emplace(0, luisa.Buffer(2, float), byte_offset=4)
    with pytest.raises(InvalidArgumentError, match="buffers and images"):
        heap.emplace(0, np.zeros(3))
    assert "float4" in repr(float4)  # the vector types stay importable beside it


# LuisaCompute's test-bindless.py: slot 55 holds a 2D image and a buffer side by side.


@luisa.func
def write_uv(tex):
    set_block_size(16, 16, 1)  # noqa: F821
    index = dispatch_id().xy  # noqa: F821
    uv = (float2(index) + 0.5) / float2(dispatch_size().xy)  # noqa: F821
    tex.write(index, float4(uv, 0.5, 1))


@luisa.func
def aces_tonemapping(x: luisa.float3):
    a = 2.51
    b = 0.03
    c = 2.43
    d = 0.59
    e = 0.14
    return clamp((x * (a * x + b)) / (x * (c * x + d) + e), 0.0, 1.0)  # noqa: F821


def read_mirrored(bindless, display):
    index = dispatch_id().xy  # noqa: F821
    uv = (float2(index) + 0.5) / float2(dispatch_size().xy)  # noqa: F821
    uv = (1.0 - uv) * 2.0
    color = bindless.texture2d_sample_mip(55, uv, 0).xyz
    color = aces_tonemapping(color)
    display.write(index, float4(color, 1))


@pytest.mark.parametrize("mode", ["c", "python"])
def test_a_slot_holds_an_image_and_a_buffer_as_in_test_bindless(fresh_session, mode):
    luisa.init("cpu")
    heap = luisa.BindlessArray()
    width, height = 40, 24
    texture = luisa.Image2D(16, 16, 4, float, storage="BYTE")
    display = luisa.Image2D(width, height, 4, float, storage="BYTE")
    heap.emplace(55, texture, filter=luisa.lcapi.Filter.POINT, address=luisa.lcapi.Address.MIRROR)
    heap.emplace(55, luisa.Buffer(1, luisa.float4))
    heap.update()
    write_uv(texture, dispatch_size=(16, 16, 1))
    kernel = luisa.func(read_mirrored) if mode == "c" else lnb.kernel(read_mirrored, mode="python")
    if mode == "c":
        kernel(heap, display, dispatch_size=(width, height, 1))
    else:
        luisa.synchronize()
        kernel.dispatch((width, height), heap, display, sync=True)
    result = display.numpy()
    expected = mirrored_uv_display(width, height)
    assert result.shape == expected.shape == (height, width, 4)
    np.testing.assert_array_equal(result, expected)
    assert result[0, 0].tolist() == [5, 5, 157, 255]  # uv (1.975, 1.958) mirrors to texel (0, 0)
    assert len(np.unique(result[..., 0])) > 8  # the texture, not one constant colour


def read_both(heap, out):
    i = dispatch_id().x  # noqa: F821
    texel = heap.texture2d_read(3, int2(i % 2, 0))
    out.write(i, heap.buffer_read(float, 3, i) + texel.x)


def read_buffer(heap, out):
    i = dispatch_id().x  # noqa: F821
    out.write(i, heap.buffer_read(float, 3, i))


def read_texture(heap, out):
    i = dispatch_id().x  # noqa: F821
    out.write(i, heap.texture2d_read(3, int2(i % 2, 0)).x)


def run_kernel(function, mode: str, *args) -> None:
    kernel = lnb.kernel(function, mode=mode)
    luisa.synchronize()
    kernel.dispatch(4, *args, sync=True)


@pytest.mark.parametrize("mode", ["c", "python"])
def test_remove_takes_out_one_kind_of_a_slot(fresh_session, mode):
    luisa.init("cpu")
    values = luisa.Buffer.from_array(np.arange(4, dtype=F32) * 10)
    image = luisa.Image2D.from_array(np.array([[[1.5], [2.5]]], F32))
    heap = luisa.BindlessArray(8)
    heap.emplace(3, image)
    heap.emplace(3, values)
    heap.update()
    out = luisa.Buffer(4, float)
    run_kernel(read_both, mode, heap, out)
    assert out.numpy().tolist() == [1.5, 12.5, 21.5, 32.5]

    heap.remove_texture2d(3)
    heap.update()
    run_kernel(read_buffer, mode, heap, out)  # the buffer stays
    assert out.numpy().tolist() == [0, 10, 20, 30]
    with pytest.raises(CommandFailedError) as caught:
        run_kernel(read_texture, mode, heap, out)
    error = caught.value.failures[0][2]
    assert isinstance(error, KernelIndexError) and error.index == 3 and error.buffer == "heap"
    assert "heap.texture2d_read on slot 3, which holds no 2D image" in str(error)
    assert "Slots it can use: none. Emplace a 2D image in that slot" in str(error)

    heap.emplace(3, image)
    heap.remove_buffer(3)
    heap.update()
    run_kernel(read_texture, mode, heap, out)  # the image stays
    assert out.numpy().tolist() == [1.5, 2.5, 1.5, 2.5]
    with pytest.raises(CommandFailedError, match=r"holds no buffer of float32.*can use: none"):
        run_kernel(read_buffer, mode, heap, out)


def test_a_dispatch_may_read_each_resource_of_a_shared_slot(fresh_session):
    luisa.init("cpu")
    values = luisa.Buffer.from_array(np.arange(4, dtype=F32))
    image = luisa.Image2D(2, 2, 4, float)
    volume = luisa.Image3D(2, 2, 2, 4, float)
    heap = luisa.BindlessArray(4)
    for resource in (volume, values, image):
        heap.emplace(1, resource)
    heap.update()
    assert list(heap.resources()) == [(1, "buffer"), (1, "texture2d"), (1, "texture3d")]
    out = luisa.Buffer(4, float)

    @luisa.func
    def gather(table, out):
        i = dispatch_id().x  # noqa: F821
        size = table.texture3d_size(1)
        out.write(i, table.buffer_read(float, 1, i) + float(size.z) * 100.0)

    with lnb.trace() as trace:
        gather(heap, out, dispatch_size=4)
        luisa.synchronize()
    dispatch = next(r for r in trace.commands if r.kind == "dispatch")
    ranges = {(r.buffer, r.access.value) for r in dispatch.device_ranges}
    assert ranges == {
        (values.id, "may_read"),
        (image.id, "may_read"),
        (volume.id, "may_read"),
        (out.id, "write"),
    }
    assert out.numpy().tolist() == [200, 201, 202, 203]


def test_runtime_remove_empties_a_slot_or_one_kind(fresh_session):
    luisa.init("cpu")
    heap = luisa.BindlessArray(4)
    values, image = luisa.Buffer(2, float), luisa.Image2D(2, 2, 4, float)
    heap.emplace(0, values)
    heap.emplace(0, image)
    heap.emplace(2, values)
    heap.update()
    assert heap.resources() == {
        (0, "buffer"): values,
        (0, "texture2d"): image,
        (2, "buffer"): values,
    }
    heap.remove(0, "texture2d")
    heap.update()
    assert list(heap.resources()) == [(0, "buffer"), (2, "buffer")]
    heap.emplace(0, image)
    heap.remove(0)  # every kind
    heap.update()
    assert list(heap.resources()) == [(2, "buffer")]
    with pytest.raises(InvalidArgumentError, match="'buffer', 'texture2d', 'texture3d'"):
        heap.remove(2, "image")
