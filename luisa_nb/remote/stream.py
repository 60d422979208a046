"""Messages over a Unix stream socket: how a client on the server's host talks to its
session's worker.

ZeroMQ hands every message to an I/O thread at each end, four thread wake-ups per round
trip: on a loaded 2-vCPU machine a bare ZeroMQ echo over ``ipc://`` took 100 to 360 µs,
the same echo over a Unix socket 10 to 25 µs. So the one link that never leaves the host,
client to worker, is a Unix stream socket in the server's private directory (mode 0700:
only the server's user reaches it), read and written by the threads that wait for it.

A message is the frames of a ZeroMQ message, length-prefixed: a header of
:data:`HEADER` (the number of frames, 1 to :data:`MAX_FRAMES`, then each frame's length;
unused lengths are 0), then the frames' bytes one after the other. The receiver checks
the count and every length before it reads a byte of the frames, so a peer cannot make
it hold more than :data:`MAX_FRAMES` frames of ``max_frame_bytes`` each.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from luisa_nb.remote.protocol import ProtocolError

MAX_FRAMES = 3
HEADER = struct.Struct(f"<I{MAX_FRAMES}Q")


def message_pieces(frames: Sequence[Any]) -> list[memoryview]:
    """The bytes of a message of ``frames`` (bytes-like objects, each contiguous): its
    header, then the frames themselves, not copied."""
    views = [memoryview(frame).cast("B") for frame in frames]
    if not 1 <= len(views) <= MAX_FRAMES:
        raise ValueError(f"a message has 1 to {MAX_FRAMES} frames, not {len(views)}")
    lengths = [view.nbytes for view in views] + [0] * (MAX_FRAMES - len(views))
    return [memoryview(HEADER.pack(len(views), *lengths)), *views]


def send_frames(connection: socket.socket, frames: Sequence[Any]) -> None:
    """Send ``frames`` as one message: one ``sendmsg`` call, and ``sendall`` for what it
    left."""
    pieces = message_pieces(frames)
    sent = connection.sendmsg(pieces)
    for piece in pieces:
        if sent >= piece.nbytes:
            sent -= piece.nbytes
            continue
        connection.sendall(piece[sent:])
        sent = 0


def receive_frames(connection: socket.socket, max_frame_bytes: int) -> list[memoryview]:
    """The frames of the next message, each at most ``max_frame_bytes``; raises
    :class:`ProtocolError` for a header that breaks those limits, ``ConnectionError``
    when the peer closed the connection, ``TimeoutError`` when the socket's timeout ran
    out inside a message."""
    header = bytearray(HEADER.size)
    _receive_into(connection, memoryview(header))
    count, *lengths = HEADER.unpack(header)
    if not 1 <= count <= MAX_FRAMES or any(lengths[count:]):
        raise ProtocolError(f"a message has 1 to {MAX_FRAMES} frames, not {count}")
    if max(lengths) > max_frame_bytes:
        raise ProtocolError(f"a frame of {max(lengths)} bytes exceeds {max_frame_bytes}")
    frames = []
    for length in lengths[:count]:
        frame = memoryview(np.empty(length, np.uint8)) if length else memoryview(b"")
        if length:
            _receive_into(connection, frame)
        frames.append(frame)
    return frames


def _receive_into(connection: socket.socket, target: memoryview) -> None:
    position, size = 0, target.nbytes
    while position < size:
        received = connection.recv_into(target[position:])
        if not received:
            raise ConnectionError("the peer closed the connection")
        position += received
