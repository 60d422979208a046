"""Messages between the sweep and its workers: a 4-byte length, then a pickle."""

from __future__ import annotations

import pickle
import struct
from typing import BinaryIO

_LENGTH = struct.Struct(">I")


def write_frame(stream: BinaryIO, message: object) -> None:
    data = pickle.dumps(message)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> object | None:
    """The next message, or None at the end of the stream."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(header)
    return pickle.loads(stream.read(length))


def split_frames(data: bytes) -> tuple[list[object], bytes]:
    """The whole messages at the start of ``data``, and the bytes left after them."""
    messages = []
    while len(data) >= _LENGTH.size:
        (length,) = _LENGTH.unpack_from(data)
        end = _LENGTH.size + length
        if len(data) < end:
            break
        messages.append(pickle.loads(data[_LENGTH.size : end]))
        data = data[end:]
    return messages, data
