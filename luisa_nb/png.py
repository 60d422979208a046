"""PNG files of 8-bit images, with the standard library's zlib: enough for luisa's
``Image2D.to_image`` and ``from_ldr_image`` and the pictures of image-shaped arrays in a
diff view, with no imaging dependency."""

from __future__ import annotations

import struct
import zlib

import numpy as np

from luisa_nb.errors import InvalidArgumentError

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


_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # colour type -> samples per pixel


def decode_png(data: bytes) -> np.ndarray:
    """The pixels of a PNG file as an RGBA ``(height, width, 4)`` uint8 array: grey is
    repeated, a missing alpha is 255, a palette is looked up (with its ``tRNS``
    transparency) and 16-bit samples keep their high byte. Interlaced files are refused."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise InvalidArgumentError("not a PNG file (its first 8 bytes are not the PNG signature)")
    chunks, position = {}, 8
    compressed = bytearray()
    while position + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        body = data[position + 8 : position + 8 + length]
        if kind == b"IDAT":
            compressed += body
        else:
            chunks.setdefault(kind, body)
        position += 12 + length
        if kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    if interlace:
        raise InvalidArgumentError(
            "interlaced PNG files are not supported; save the image without interlacing"
        )
    if colour not in _CHANNELS or depth not in (1, 2, 4, 8, 16):
        raise InvalidArgumentError(f"unsupported PNG colour type {colour} with {depth}-bit samples")
    samples = _CHANNELS[colour]
    row_bytes = (width * samples * depth + 7) // 8
    raw = np.frombuffer(zlib.decompress(bytes(compressed)), np.uint8)
    rows = _unfilter(raw[: height * (row_bytes + 1)].reshape(height, row_bytes + 1),
                     max(1, samples * depth // 8))  # fmt: skip
    if depth == 16:
        values = rows.reshape(height, width * samples, 2)[..., 0]
    elif depth == 8:
        values = rows
    else:
        values = np.unpackbits(rows, axis=1).reshape(height, -1, depth)
        values = (values * (1 << np.arange(depth - 1, -1, -1, dtype=np.uint8))).sum(2)
        values = values[:, : width * samples].astype(np.uint8)
        if colour == 0:
            values = values * np.uint8(255 // ((1 << depth) - 1))
    values = values.reshape(height, width, samples)
    rgba = np.full((height, width, 4), 255, np.uint8)
    if colour == 3:
        palette = np.frombuffer(chunks[b"PLTE"], np.uint8).reshape(-1, 3)
        alpha = np.full(len(palette), 255, np.uint8)
        transparency = np.frombuffer(chunks.get(b"tRNS", b""), np.uint8)[: len(palette)]
        alpha[: len(transparency)] = transparency
        rgba[..., :3] = palette[values[..., 0]]
        rgba[..., 3] = alpha[values[..., 0]]
    elif colour in (0, 4):
        rgba[..., :3] = values[..., :1]
        if colour == 4:
            rgba[..., 3] = values[..., 1]
    else:
        rgba[..., :samples] = values
    return rgba


def _unfilter(rows: np.ndarray, stride: int) -> np.ndarray:
    """Undo each row's PNG filter (its first byte); ``stride``: bytes per pixel."""
    height, width = rows.shape[0], rows.shape[1] - 1
    out = np.zeros((height, width), np.uint8)
    previous = np.zeros(width, np.uint8)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:]
        if kind == 0:
            current = line.copy()
        elif kind == 2:
            current = line + previous
        elif kind == 1:
            current = _left_sums(line, stride)
        elif kind in (3, 4):
            current = _sequential(line, previous, stride, kind)
        else:
            raise InvalidArgumentError(f"PNG row {y} has an unknown filter type {kind}")
        out[y] = previous = current
    return out


def _left_sums(line: np.ndarray, stride: int) -> np.ndarray:
    """The Sub filter undone: a running sum (mod 256) along each byte of a pixel."""
    padded = np.zeros(-(-len(line) // stride) * stride, np.uint8)
    padded[: len(line)] = line
    return np.cumsum(padded.reshape(-1, stride), axis=0, dtype=np.uint8).reshape(-1)[: len(line)]


def _sequential(line: np.ndarray, above: np.ndarray, stride: int, kind: int) -> np.ndarray:
    """The Average (3) or Paeth (4) filter undone, byte by byte: each depends on the one
    ``stride`` bytes to its left."""
    current = bytearray(line.tobytes())
    up = above.tolist()
    for i in range(len(current)):
        left = current[i - stride] if i >= stride else 0
        if kind == 3:
            predicted = (left + up[i]) >> 1
        else:
            upper_left = up[i - stride] if i >= stride else 0
            estimate = left + up[i] - upper_left
            distances = (abs(estimate - left), abs(estimate - up[i]), abs(estimate - upper_left))
            predicted = (left, up[i], upper_left)[distances.index(min(distances))]
        current[i] = (current[i] + predicted) & 0xFF
    return np.frombuffer(bytes(current), np.uint8)
