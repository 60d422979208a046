"""Image files for luisa-python's ``Image2D.from_ldr_image``, ``from_hdr_image`` and
``to_image``, read as LuisaCompute reads them (stb_image): the 8-bit formats through
Pillow (PNG, JPEG, BMP, TGA, GIF, PSD, PNM ...) and Radiance HDR through imagecodecs
(``pip install luisa_nb[images]`` installs both).

Pixels are ``(height, width, 4)`` arrays, rows from the top. ``load_ldr_image`` gives RGBA
uint8 (an HDR file tone-mapped as stb_image does, ``255 * v ** (1 / 2.2)``);
``load_hdr_image`` gives RGBA float32 (an 8-bit file linearised as stb_image does,
``(v / 255) ** 2.2`` for colours and ``v / 255`` for alpha; HDR files have alpha 1).
LuisaCompute 0.3.7 reads no OpenEXR file, and neither does this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from luisa_nb.errors import ConfigurationError, InvalidArgumentError

RADIANCE_SIGNATURES = (b"#?RADIANCE", b"#?RGBE")
STB_GAMMA = 2.2  # stb_image's conversion between 8-bit and linear float pixels
INSTALL_HINT = "pip install luisa_nb[images] (Pillow and imagecodecs)"


def load_ldr_image(path: str | Path) -> np.ndarray:
    """The RGBA uint8 pixels of the image file at ``path``."""
    if _is_radiance(path):
        linear = np.clip(load_hdr_image(path)[..., :3], 0.0, None).astype(np.float64)
        exponent = np.float64(np.float32(1.0) / np.float32(STB_GAMMA))  # stb's float 1/2.2
        colours = np.power(linear, exponent).astype(np.float32) * np.float32(255)
        pixels = np.full((*linear.shape[:2], 4), 255, np.uint8)
        pixels[..., :3] = np.clip(colours + np.float32(0.5), 0, 255).astype(np.uint8)
        return pixels
    return _pillow_rgba(path)


def load_hdr_image(path: str | Path) -> np.ndarray:
    """The RGBA float32 pixels of the image file at ``path``."""
    if not _is_radiance(path):
        pixels = _pillow_rgba(path).astype(np.float32) / np.float32(255)
        colours = np.power(pixels[..., :3].astype(np.float64), np.float64(np.float32(STB_GAMMA)))
        pixels[..., :3] = colours  # stb: (float) pow(v / 255.0f, 2.2f), in double
        return pixels
    codecs = _module("imagecodecs")
    try:
        colours = np.asarray(codecs.imread(str(path)), np.float32)
    except Exception as error:  # imagecodecs raises its own error classes
        raise InvalidArgumentError(f"cannot read Radiance HDR file {path}: {error}") from None
    if colours.ndim == 2:
        colours = colours[..., None].repeat(3, axis=2)
    pixels = np.ones((*colours.shape[:2], 4), np.float32)
    pixels[..., :3] = colours[..., :3]
    return pixels


def save_ldr_image(path: str | Path, pixels: np.ndarray) -> None:
    """Write ``(height, width, channels)`` uint8 pixels as a PNG file."""
    image = _module("PIL.Image")
    channels = pixels.shape[2]
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[channels]
    values = np.ascontiguousarray(pixels, np.uint8)
    image.fromarray(values[..., 0] if channels == 1 else values, mode).save(Path(path), "PNG")


def save_hdr_image(path: str | Path, pixels: np.ndarray) -> None:
    """Write ``(height, width, channels)`` float pixels as a Radiance HDR file: RGB, one
    channel as grey, a missing blue as 0; alpha is dropped."""
    height, width, channels = pixels.shape
    values = np.asarray(pixels, np.float32)
    if channels == 1:
        values = np.repeat(values, 3, axis=2)
    elif channels == 2:
        values = np.concatenate([values, np.zeros((height, width, 1), np.float32)], axis=2)
    codecs = _module("imagecodecs")
    rgb = np.ascontiguousarray(np.maximum(values[..., :3], 0.0))
    Path(path).write_bytes(codecs.rgbe_encode(rgb, header=True))


def _is_radiance(path: str | Path) -> bool:
    try:
        with Path(path).open("rb") as file:
            return file.read(10).startswith(RADIANCE_SIGNATURES)
    except OSError as error:
        raise InvalidArgumentError(f"cannot read image file {path}: {error.strerror}") from None


def _pillow_rgba(path: str | Path) -> np.ndarray:
    image = _module("PIL.Image")
    try:
        with image.open(Path(path)) as opened:
            if opened.mode in ("I;16", "I;16B", "I"):  # 16-bit grey: stb keeps the top byte
                grey = (np.asarray(opened, np.uint32) >> 8).astype(np.uint8)
                alpha = np.full_like(grey, 255)
                return np.stack([grey, grey, grey, alpha], axis=-1)
            return np.asarray(opened.convert("RGBA"), np.uint8).copy()
    except (image.UnidentifiedImageError, OSError, ValueError) as error:
        raise InvalidArgumentError(
            f"cannot read image file {path}: {error}; luisa-python reads PNG, JPEG, BMP, TGA, "
            f"GIF, PSD, PNM and Radiance HDR files"
        ) from None


def _module(name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise ConfigurationError(f"image files need {name.split('.')[0]}: {INSTALL_HINT}") from None
