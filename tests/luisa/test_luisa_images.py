"""Images: luisa-python's Image2D on luisa_nb, copied through the command list, traced as
buffers of channels, and found stale like buffers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.analysis import AnalyzedTrace, HazardKind
from luisa_nb.analysis.uploads import check_uploads
from luisa_nb.errors import InvalidArgumentError, UnsupportedFeatureError
from luisa_nb.png import encode_png
from tests.luisa.references import png_pixels


def pixels(height: int, width: int, channels: int = 4, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, channels), np.uint8)


def test_storage_sets_the_channel_dtype(device_name):
    cases = {
        (float, None): np.float32,
        (float, "BYTE"): np.uint8,
        (float, "short"): np.uint16,
        (int, "byte"): np.int8,
        (int, None): np.int32,
        (luisa.uint, "int"): np.uint32,
    }
    for (dtype, storage), expected in cases.items():
        image = luisa.Image2D(5, 3, 2, dtype, storage=storage)
        assert image.dtype == np.dtype(expected)
        assert image.shape == (3, 5, 2)
        assert image.bytesize == 5 * 3 * 2 * np.dtype(expected).itemsize
    with pytest.raises(InvalidArgumentError, match="can be stored as byte, short, float"):
        luisa.Image2D(4, 4, 4, float, storage="int")
    with pytest.raises(InvalidArgumentError, match="1, 2 or 4 channels"):
        luisa.Image2D(4, 4, 3, float)
    with pytest.raises(UnsupportedFeatureError, match="mip levels"):
        luisa.Image2D(4, 4, 4, float, mip=2)


def test_arrays_round_trip_as_height_width_channels(device_name):
    source = pixels(6, 10)
    image = luisa.Image2D.from_array(source)
    assert (image.width, image.height, image.channel) == (10, 6, 4)
    np.testing.assert_array_equal(image.numpy(), source)
    copy = luisa.Texture2D.zeros(10, 6, 4, float, "byte")
    np.testing.assert_array_equal(copy.numpy(), np.zeros((6, 10, 4), np.uint8))
    copy.copy_from(image)
    np.testing.assert_array_equal(copy.numpy(), source)


def test_to_image_writes_a_png_of_the_pixels(device_name, tmp_path):
    source = pixels(7, 9)
    luisa.Image2D.from_array(source).to_image(tmp_path / "out.png")
    written = png_pixels((tmp_path / "out.png").read_bytes())
    assert written.shape == (7, 9, 4)  # RGBA, 9 wide
    np.testing.assert_array_equal(written, source)
    with pytest.raises(UnsupportedFeatureError, match=r"save image\.numpy"):
        luisa.Image2D(2, 2, 4, int).to_image(tmp_path / "int.png")


def test_image_files_load_into_images_and_save_back(device_name, tmp_path):
    source = pixels(7, 9)
    (tmp_path / "in.png").write_bytes(encode_png(source))
    loaded = luisa.Image2D.from_ldr_image(tmp_path / "in.png")
    assert (loaded.width, loaded.height, loaded.storage) == (9, 7, "byte")
    np.testing.assert_array_equal(loaded.numpy(), source)
    radiance = np.ones((3, 5, 4), np.float32)
    radiance[..., :3] = np.arange(45, dtype=np.float32).reshape(3, 5, 3) * 0.25
    luisa.Image2D.from_array(radiance).to_image(tmp_path / "out.hdr")
    back = luisa.Image2D.from_hdr_image(tmp_path / "out.hdr")
    assert (back.width, back.height, back.storage) == (5, 3, "float")
    np.testing.assert_array_equal(back.numpy(), radiance)  # quarters are exact in RGBE


def up_down_up(height: int, width: int, seed: int) -> tuple[AnalyzedTrace, np.ndarray, Any]:
    """One list ``[upload a <- h1, download a -> h2, upload b <- h2]`` of byte images,
    traced; the trace, ``h1`` and image ``b``."""
    h1, h2 = pixels(height, width, seed=seed), np.zeros((height, width, 4), np.uint8)
    a = luisa.Image2D(width, height, 4, float, storage="byte")
    b = luisa.Image2D(width, height, 4, float, storage="byte")
    with AnalyzedTrace(capture="full") as trace:
        a.copy_from(h1)
        a.copy_to(h2, sync=False)
        b.copy_from(h2)
        luisa.synchronize()
    return trace, h1, b


def test_a_stale_image_upload_is_found_and_its_pixels_compared(device_name):
    trace, h1, b = up_down_up(16, 16, seed=1)
    submit = lnb.default_device().staging is lnb.runtime.StagingPolicy.SUBMIT
    np.testing.assert_array_equal(b.numpy(), np.zeros_like(h1) if submit else h1)
    stale = [h for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
    assert bool(stale) == submit
    info = trace.buffers[b.id]
    assert info.image == (16, 16, 4)
    checks = {check.command_id: check for check in check_uploads(trace)}
    check = checks[stale[0].command_ids[-1]] if submit else None
    if check is not None:
        np.testing.assert_array_equal(check.staged, np.zeros(h1.size, np.uint8))
        np.testing.assert_array_equal(check.expected, h1.reshape(-1))
        assert check.stale and len(check.differing_indices) == np.count_nonzero(h1)


def test_a_saved_trace_keeps_the_image_shape(fresh_session, tmp_path):
    luisa.init("cpu:submit")
    image = luisa.Image2D(8, 4, 2, luisa.uint, storage="short")
    with lnb.trace() as trace:
        image.copy_from(np.arange(64, dtype=np.uint16))
        luisa.synchronize()
    loaded = lnb.load_trace(trace.save(tmp_path / "image.lnbtrace"))
    info = loaded.buffers[image.id]
    assert (info.image, info.dtype, info.size) == ((4, 8, 2), "<u2", 64)


def test_the_inspector_shows_a_stale_image_upload_as_pictures(fresh_session):
    import base64

    from luisa_nb.widgets import StagingInspector

    luisa.init("cpu:submit")
    trace, h1, _ = up_down_up(8, 12, seed=2)
    [stale] = [h for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
    summary = StagingInspector(trace, stale.command_ids[-1]).summary
    assert summary["shape"] == [8, 12, 4]

    def decoded(url: str) -> np.ndarray:
        return png_pixels(base64.b64decode(url.removeprefix("data:image/png;base64,")))

    pictures = {name: decoded(url) for name, url in summary["pictures"].items()}
    sides = ("expected", "staged", "difference")
    assert list(pictures) == [
        f"{side} · channel {channel} ({'RGBA'[channel]})" for channel in range(4) for side in sides
    ], "each channel as three pictures: expected, staged, difference"
    for channel in range(4):
        values = h1[..., channel].astype(np.float64)
        grey = np.round(values / values.max() * 255).astype(np.uint8)
        label = f"channel {channel} ({'RGBA'[channel]})"
        np.testing.assert_array_equal(pictures[f"expected · {label}"][..., 0], grey)
        np.testing.assert_array_equal(pictures[f"staged · {label}"], np.zeros((8, 12, 3)))
        np.testing.assert_array_equal(pictures[f"difference · {label}"][..., 0], grey)
    assert summary["index_name"] == "pixel (x, y, channel)"
    y, x, channel = np.argwhere(h1 != 0)[0]
    assert summary["first_indices"][0] == [x, y, channel], "a pixel is named (x, y, channel)"


def test_a_head_capture_keeps_an_image_s_whole_leading_rows(fresh_session):
    from luisa_nb.widgets import StagingInspector

    luisa.init("cpu:submit")
    frame = luisa.Image2D(96, 64, 4, float)
    previous = luisa.Image2D(96, 64, 4, float)
    history = np.zeros((64, 96, 4), np.float32)
    frame.copy_from(np.ones((64, 96, 4), np.float32))
    with AnalyzedTrace() as trace:  # capture='head': the first 64 KiB of 96 KiB
        frame.copy_to(history, sync=False)
        previous.copy_from(history)
        luisa.synchronize()
    [stale] = [h for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
    summary = StagingInspector(trace, stale.command_ids[-1]).summary
    rows = 65536 // (96 * 4 * 4)
    assert summary["shape"] == [rows, 96, 4], "whole rows, not a flat prefix"
    assert f"the first {rows} of 64 rows" in " ".join(summary["notes"])
    assert summary["first_indices"][:2] == [[0, 0, 0], [0, 0, 1]], "red first, then green"
    assert len(summary["pictures"]) == 12
