"""PNG files of 8-bit images, written with the standard library's zlib: the pictures of
image-shaped arrays in a diff view, with no imaging dependency (image files of luisa's
``Image2D`` are read and written with Pillow, see ``luisa/image_files.py``)."""

from __future__ import annotations

import struct
import zlib

import numpy as np

_COLOUR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # grey, grey + alpha, RGB, RGBA


def encode_png(pixels: np.ndarray) -> bytes:
    """A PNG file of a ``(height, width, channels)`` uint8 image of 1 to 4 channels."""
    height, width, channels = pixels.shape
    rows = np.zeros((height, width * channels + 1), np.uint8)  # filter byte 0: none
    rows[:, 1:] = pixels.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPES[channels], 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
