"""PNG and Radiance HDR files as luisa-python's image loaders read and write them."""

from __future__ import annotations

import importlib.util
import io
import struct
import subprocess
import zlib

import numpy as np
import pytest
from PIL import Image

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.luisa.image_files import (
    load_hdr_image,
    load_ldr_image,
    save_hdr_image,
    save_ldr_image,
)
from luisa_nb.png import decode_png
from tests.luisa.running import run_python

HEIGHT, WIDTH = 37, 53


def _pixels() -> np.ndarray:
    """Gradients (which PNG encoders filter with Sub, Up, Average and Paeth) and noise."""
    rng = np.random.default_rng(7)
    ramp = (np.add.outer(np.arange(HEIGHT) * 5, np.arange(WIDTH) * 3) % 256).astype(np.uint8)
    noise = rng.integers(0, 256, (HEIGHT, WIDTH), np.uint8)
    return np.stack([ramp, ramp[::-1], noise, ramp.T[:WIDTH, :HEIGHT].T], axis=-1)


def _png(image: Image.Image, **options: object) -> bytes:
    data = io.BytesIO()
    image.save(data, format="PNG", **options)
    return data.getvalue()


@pytest.mark.parametrize("mode", ["RGBA", "RGB", "L", "LA", "P", "1", "I;16"])
def test_png_files_of_every_colour_type_decode_to_rgba(mode):
    pixels = _pixels()
    if mode == "LA":
        grey, alpha = Image.fromarray(pixels[..., 0]), Image.fromarray(pixels[..., 3])
        image = Image.merge("LA", [grey, alpha])
    elif mode == "P":
        image = Image.fromarray(pixels[..., :3]).quantize(16)
    elif mode == "I;16":
        image = Image.fromarray(pixels[..., 0].astype(np.uint16) * 257)
    else:
        image = Image.fromarray(pixels).convert(mode)
    options = {"transparency": 3} if mode == "P" else {}
    decoded = decode_png(_png(image, **options))
    if mode == "P":
        image.info["transparency"] = 3
    expected = np.asarray(image.convert("RGBA")) if mode != "I;16" else None
    if mode == "I;16":
        grey = pixels[..., 0]
        expected = np.stack([grey, grey, grey, np.full_like(grey, 255)], axis=-1)
    assert decoded.shape == (HEIGHT, WIDTH, 4) and decoded.dtype == np.uint8
    np.testing.assert_array_equal(decoded, expected)


def test_a_png_round_trips_through_the_loader(tmp_path):
    pixels = _pixels()
    save_ldr_image(tmp_path / "image.png", pixels)
    np.testing.assert_array_equal(load_ldr_image(tmp_path / "image.png"), pixels)


def test_bad_png_files_say_what_is_wrong(tmp_path):
    with pytest.raises(InvalidArgumentError, match="not a PNG file"):
        decode_png(b"GIF89a" + bytes(20))
    plain = _png(Image.fromarray(_pixels()))
    header = plain[12:28] + b"\x01"  # IHDR with interlace method 1 (Adam7)
    interlaced = plain[:12] + header + struct.pack(">I", zlib.crc32(header)) + plain[33:]
    with pytest.raises(InvalidArgumentError, match="interlaced"):
        decode_png(interlaced)
    with pytest.raises(InvalidArgumentError, match="cannot read image file"):
        load_ldr_image(tmp_path / "missing.png")


def _hdr_pixels() -> np.ndarray:
    rng = np.random.default_rng(3)
    pixels = np.ones((5, 13, 4), np.float32)
    pixels[..., :3] = rng.random((5, 13, 3)) * np.logspace(-3, 4, 13)[:, None]
    pixels[0, 0, :3] = 0.0
    return pixels


def test_an_hdr_file_keeps_each_colour_to_its_shared_exponent(tmp_path):
    pixels = _hdr_pixels()
    save_hdr_image(tmp_path / "image.hdr", pixels)
    loaded = load_hdr_image(tmp_path / "image.hdr")
    assert loaded.shape == pixels.shape and loaded.dtype == np.float32
    np.testing.assert_array_equal(loaded[..., 3], 1.0)
    assert (loaded[0, 0, :3] == 0.0).all()
    brightest = pixels[..., :3].max(axis=2, keepdims=True)
    assert (np.abs(loaded[..., :3] - pixels[..., :3]) <= brightest / 128).all()
    assert (loaded[..., :3] <= pixels[..., :3]).all()  # RGBE truncates


def test_run_length_encoded_hdr_scanlines_are_read(tmp_path):
    width = 20
    runs = (
        bytes([128 + width, 100])
        + bytes([128 + 10, 50, 10])
        + bytes(range(10))
        + bytes([128 + width, 7])
        + bytes([128 + width, 129])
    )
    header = f"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X {width}\n".encode()
    (tmp_path / "rle.hdr").write_bytes(header + bytes([2, 2, 0, width]) + runs)
    loaded = load_hdr_image(tmp_path / "rle.hdr")
    scale = 2.0 ** (129 - 136)
    np.testing.assert_array_equal(loaded[0, :, 0], np.full(width, 100 * scale, np.float32))
    np.testing.assert_array_equal(loaded[0, :10, 1], np.full(10, 50 * scale, np.float32))
    np.testing.assert_array_equal(loaded[0, 10:, 1], np.arange(10, dtype=np.float32) * scale)
    np.testing.assert_array_equal(loaded[0, :, 2], np.full(width, 7 * scale, np.float32))
    (tmp_path / "short.hdr").write_bytes(header + bytes([2, 2, 0, width]) + runs[:9])
    with pytest.raises(InvalidArgumentError, match="ends before its last scanline"):
        load_hdr_image(tmp_path / "short.hdr")
    (tmp_path / "bottom_up.hdr").write_bytes(b"#?RADIANCE\n\n+Y 1 +X 1\n" + bytes(4))
    with pytest.raises(InvalidArgumentError, match="top to bottom"):
        load_hdr_image(tmp_path / "bottom_up.hdr")


def test_hdr_files_agree_with_luisa_python(tmp_path):
    if importlib.util.find_spec("luisa") is None:
        pytest.skip("luisa-python is not installed (pip install luisa-python)")
    try:
        run_python("-c", "from luisa import lcapi")
    except subprocess.CalledProcessError as error:
        last = (error.stderr.strip().splitlines() or ["(no output)"])[-1]
        pytest.skip(f"luisa-python's lcapi does not load here: {last}")
    pixels = _hdr_pixels()
    np.save(tmp_path / "pixels.npy", pixels)
    save_hdr_image(tmp_path / "ours.hdr", pixels)
    script = (
        "import sys, numpy as np; from luisa import lcapi; folder = sys.argv[1]; "
        "pixels = np.load(folder + '/pixels.npy'); "
        "lcapi.save_hdr_image(folder + '/theirs.hdr', pixels, 13, 5); "
        "np.save(folder + '/theirs.npy', lcapi.load_hdr_image(folder + '/theirs.hdr')); "
        "np.save(folder + '/ours.npy', lcapi.load_hdr_image(folder + '/ours.hdr'))"
    )
    run_python("-c", script, str(tmp_path))
    theirs = np.load(tmp_path / "theirs.npy").reshape(5, 13, 4)
    np.testing.assert_array_equal(load_hdr_image(tmp_path / "theirs.hdr"), theirs)
    np.testing.assert_array_equal(np.load(tmp_path / "ours.npy").reshape(5, 13, 4), theirs)
