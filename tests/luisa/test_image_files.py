"""Image files as luisa-python's loaders read them (stb_image in LuisaCompute): 8-bit
formats through Pillow, Radiance HDR through imagecodecs, each linearised or tone-mapped
as stb_image does; compared with real luisa-python's ``lcapi`` where it loads."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import numpy as np
import pytest

import luisa_nb.luisa as luisa
from luisa_nb.errors import InvalidArgumentError
from luisa_nb.luisa.image_files import (
    load_hdr_image,
    load_ldr_image,
    save_hdr_image,
    save_ldr_image,
)
from tests.luisa.running import run_python

Image = pytest.importorskip("PIL.Image", reason="image files need Pillow (luisa_nb[images])")
pytest.importorskip("imagecodecs", reason="HDR files need imagecodecs (luisa_nb[images])")

HEIGHT, WIDTH = 37, 53


def _pixels() -> np.ndarray:
    """Gradients and noise in four channels."""
    rng = np.random.default_rng(7)
    ramp = (np.add.outer(np.arange(HEIGHT) * 5, np.arange(WIDTH) * 3) % 256).astype(np.uint8)
    noise = rng.integers(0, 256, (HEIGHT, WIDTH), np.uint8)
    return np.stack([ramp, ramp[::-1], noise, ramp.T[:WIDTH, :HEIGHT].T], axis=-1)


def _hdr_pixels() -> np.ndarray:
    rng = np.random.default_rng(3)
    pixels = np.ones((5, 13, 4), np.float32)
    pixels[..., :3] = rng.random((5, 13, 3)) * np.logspace(-3, 4, 13)[:, None]
    pixels[0, 0, :3] = 0.0
    return pixels


def _rle_hdr(width: int = 20) -> bytes:
    """One run-length encoded scanline: runs and literals per channel."""
    runs = (
        bytes([128 + width, 100])
        + bytes([128 + 10, 50, 10])
        + bytes(range(10))
        + bytes([128 + width, 7])
        + bytes([128 + width, 129])
    )
    header = f"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X {width}\n".encode()
    return header + bytes([2, 2, 0, width]) + runs


def _write_files(folder: Path) -> list[str]:
    """Files of every kind luisa-python's loaders read, JPEG aside (see the docs)."""
    pixels = _pixels()
    grey, alpha = Image.fromarray(pixels[..., 0]), Image.fromarray(pixels[..., 3])
    images = {
        "rgba.png": Image.fromarray(pixels, "RGBA"),
        "rgb.png": Image.fromarray(pixels[..., :3], "RGB"),
        "grey.png": grey,
        "grey_alpha.png": Image.merge("LA", [grey, alpha]),
        "palette.png": Image.fromarray(pixels[..., :3]).quantize(16),
        "rgb.bmp": Image.fromarray(pixels[..., :3], "RGB"),
        "rgba.tga": Image.fromarray(pixels, "RGBA"),
    }
    for name, image in images.items():
        image.save(folder / name)
    save_hdr_image(folder / "ours.hdr", _hdr_pixels())
    (folder / "rle.hdr").write_bytes(_rle_hdr())
    return [*images, "ours.hdr", "rle.hdr"]


def test_8_bit_files_load_as_rgba_bytes_and_linear_floats(tmp_path) -> None:
    _write_files(tmp_path)
    pixels = _pixels()
    np.testing.assert_array_equal(load_ldr_image(tmp_path / "rgba.png"), pixels)
    np.testing.assert_array_equal(load_ldr_image(tmp_path / "rgba.tga"), pixels)
    grey = load_ldr_image(tmp_path / "grey.png")
    np.testing.assert_array_equal(grey[..., 1], pixels[..., 0])
    np.testing.assert_array_equal(grey[..., 3], 255)
    linear = load_hdr_image(tmp_path / "rgba.png")
    assert linear.dtype == np.float32 and linear.shape == (HEIGHT, WIDTH, 4)
    np.testing.assert_allclose(linear[..., :3], (pixels[..., :3] / 255.0) ** 2.2, rtol=1e-6)
    np.testing.assert_allclose(linear[..., 3], pixels[..., 3] / 255.0, rtol=1e-6)


def test_hdr_files_keep_each_colour_to_its_shared_exponent(tmp_path) -> None:
    pixels = _hdr_pixels()
    save_hdr_image(tmp_path / "image.hdr", pixels)
    loaded = load_hdr_image(tmp_path / "image.hdr")
    assert loaded.shape == pixels.shape and loaded.dtype == np.float32
    np.testing.assert_array_equal(loaded[..., 3], 1.0)
    assert (loaded[0, 0, :3] == 0.0).all()
    brightest = pixels[..., :3].max(axis=2, keepdims=True)
    assert (np.abs(loaded[..., :3] - pixels[..., :3]) <= brightest / 128).all()


def test_run_length_encoded_hdr_scanlines_are_read(tmp_path) -> None:
    (tmp_path / "rle.hdr").write_bytes(_rle_hdr())
    loaded = load_hdr_image(tmp_path / "rle.hdr")
    scale = 2.0 ** (129 - 136)
    np.testing.assert_array_equal(loaded[0, :, 0], np.full(20, 100 * scale, np.float32))
    np.testing.assert_array_equal(loaded[0, 10:, 1], np.arange(10, dtype=np.float32) * scale)
    tone_mapped = load_ldr_image(tmp_path / "rle.hdr")
    red, blue = (int(np.float32((v * scale) ** (1 / 2.2)) * 255 + 0.5) for v in (100, 7))
    assert (tone_mapped[0, 0, 0], tone_mapped[0, 0, 2], tone_mapped[0, 0, 3]) == (red, blue, 255)


def test_unreadable_files_say_what_luisa_python_reads(tmp_path) -> None:
    (tmp_path / "image.exr").write_bytes(b"\x76\x2f\x31\x01" + bytes(40))
    with pytest.raises(InvalidArgumentError, match="reads PNG, JPEG, BMP, TGA, GIF"):
        load_hdr_image(tmp_path / "image.exr")
    with pytest.raises(InvalidArgumentError, match="cannot read image file"):
        load_ldr_image(tmp_path / "missing.png")
    (tmp_path / "short.hdr").write_bytes(_rle_hdr()[:-9])
    with pytest.raises(InvalidArgumentError, match="cannot read Radiance HDR file"):
        load_hdr_image(tmp_path / "short.hdr")


def test_from_hdr_image_reads_a_png_as_luisa_python_does(fresh_session, tmp_path) -> None:
    luisa.init("cpu")
    save_ldr_image(tmp_path / "logo.png", _pixels())
    image = luisa.Image2D.from_hdr_image(str(tmp_path / "logo.png"))
    assert (image.height, image.width, image.channel) == (HEIGHT, WIDTH, 4)
    np.testing.assert_array_equal(image.numpy(), load_hdr_image(tmp_path / "logo.png"))


def _real_lcapi_available() -> None:
    if importlib.util.find_spec("luisa") is None:
        pytest.skip("luisa-python is not installed (pip install luisa-python)")
    try:
        run_python("-c", "from luisa import lcapi")
    except subprocess.CalledProcessError as error:
        last = (error.stderr.strip().splitlines() or ["(no output)"])[-1]
        pytest.skip(f"luisa-python's lcapi does not load here: {last}")


def test_every_file_loads_as_real_luisa_python_loads_it(tmp_path) -> None:
    _real_lcapi_available()
    names = _write_files(tmp_path)
    script = (
        "import sys, numpy as np; from luisa import lcapi; folder = sys.argv[1]\n"
        "for name in sys.argv[2:]:\n"
        "    np.save(f'{folder}/{name}.ldr.npy', lcapi.load_ldr_image(f'{folder}/{name}'))\n"
        "    np.save(f'{folder}/{name}.hdr.npy', lcapi.load_hdr_image(f'{folder}/{name}'))\n"
    )
    run_python("-c", script, str(tmp_path), *names)
    for name in names:
        ours = load_ldr_image(tmp_path / name), load_hdr_image(tmp_path / name)
        for kind, loaded in zip(("ldr", "hdr"), ours, strict=True):
            theirs = np.load(tmp_path / f"{name}.{kind}.npy")  # (width, height, 4) row-major
            np.testing.assert_array_equal(loaded, theirs.reshape(loaded.shape), err_msg=name)
