"""Image files for luisa-python's ``Image2D.from_ldr_image``, ``from_hdr_image`` and
``to_image``: PNG (:mod:`luisa_nb.png`) and Radiance HDR, read and written with numpy and
the standard library.

Pixels are ``(height, width, 4)`` arrays, rows from the top: RGBA uint8 for PNG, RGBA
float32 for HDR (alpha 1). HDR files are read flat or run-length encoded (the form
Radiance and most tools write) and written flat, which every reader accepts.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.png import decode_png, encode_png

_HDR_SIZE = re.compile(rb"-Y (\d+) \+X (\d+)")


def load_ldr_image(path: str | Path) -> np.ndarray:
    """The RGBA uint8 pixels of the PNG file at ``path``."""
    return decode_png(_read(path))


def save_ldr_image(path: str | Path, pixels: np.ndarray) -> None:
    Path(path).write_bytes(encode_png(np.ascontiguousarray(pixels, np.uint8)))


def load_hdr_image(path: str | Path) -> np.ndarray:
    """The RGBA float32 pixels of the Radiance HDR file at ``path``."""
    data = _read(path)
    if not data.startswith((b"#?RADIANCE", b"#?RGBE")):
        raise InvalidArgumentError(f"{path}: not a Radiance HDR file (no #?RADIANCE header)")
    header_end = data.find(b"\n\n")
    size_end = data.find(b"\n", header_end + 2)
    size = _HDR_SIZE.fullmatch(data[header_end + 2 : size_end].strip())
    if header_end < 0 or size is None:
        raise InvalidArgumentError(
            f"{path}: only HDR files stored top to bottom ('-Y height +X width') are read"
        )
    if b"FORMAT=32-bit_rle_xyze" in data[:header_end]:
        raise InvalidArgumentError(f"{path}: XYZE HDR files are not read; convert to RGBE")
    height, width = int(size[1]), int(size[2])
    try:
        rgbe = _rgbe_rows(memoryview(data)[size_end + 1 :], width, height, path)
    except (IndexError, ValueError):
        raise InvalidArgumentError(f"{path}: the file ends before its last scanline") from None
    pixels = np.ones((height, width, 4), np.float32)
    exponent = rgbe[..., 3].astype(np.int32)
    scale = np.where(exponent > 0, np.ldexp(np.float32(1), exponent - 136), 0).astype(np.float32)
    pixels[..., :3] = rgbe[..., :3] * scale[..., None]
    return pixels


def save_hdr_image(path: str | Path, pixels: np.ndarray) -> None:
    """Write ``(height, width, channels)`` float pixels as a flat Radiance file: RGB, one
    channel as grey, a missing blue as 0; alpha is dropped."""
    height, width, channels = pixels.shape
    values = np.asarray(pixels, np.float64)
    if channels == 1:
        values = np.repeat(values, 3, axis=2)
    elif channels == 2:
        values = np.concatenate([values, np.zeros((height, width, 1))], axis=2)
    rgb = np.maximum(values[..., :3], 0.0)
    brightest = rgb.max(axis=2)
    mantissa, exponent = np.frexp(brightest)
    visible = brightest > 1e-32
    scale = np.where(visible, mantissa * 256.0 / np.where(visible, brightest, 1.0), 0.0)
    rgbe = np.zeros((height, width, 4), np.uint8)
    rgbe[..., :3] = np.minimum(rgb * scale[..., None], 255.0).astype(np.uint8)
    rgbe[..., 3] = np.where(visible, exponent + 128, 0)
    header = f"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y {height} +X {width}\n".encode()
    Path(path).write_bytes(header + rgbe.tobytes())


def _read(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise InvalidArgumentError(f"cannot read image file {path}: {error.strerror}") from None


def _rgbe_rows(data: memoryview, width: int, height: int, path: object) -> np.ndarray:
    """``height`` scanlines of RGBE bytes, each flat or run-length encoded per channel."""
    rows = np.empty((height, width, 4), np.uint8)
    position = 0
    for y in range(height):
        start = bytes(data[position : position + 4])
        encoded = 8 <= width < 32768 and start[:2] == b"\x02\x02" and not start[2] & 0x80
        if not encoded:
            line = np.frombuffer(data, np.uint8, width * 4, position)
            rows[y] = line.reshape(width, 4)
            position += width * 4
            continue
        position += 4
        for channel in range(4):
            filled = 0
            while filled < width:
                count, run = data[position], data[position] > 128
                count -= 128 if run else 0
                if count == 0 or filled + count > width:
                    raise InvalidArgumentError(f"{path}: scanline {y} is corrupt")
                if run:
                    rows[y, filled : filled + count, channel] = data[position + 1]
                    position += 2
                else:
                    values = np.frombuffer(data, np.uint8, count, position + 1)
                    rows[y, filled : filled + count, channel] = values
                    position += 1 + count
                filled += count
    return rows
