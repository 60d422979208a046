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

Both ends keep their sockets non-blocking and wait (``poll``) only when a read or write
finds nothing to do: a socket with a timeout polls before every call, so a small
message then cost eight system calls to receive and send where four do.
"""

from __future__ import annotations

import select
import socket
import struct
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from luisa_nb.remote.protocol import ProtocolError

MAX_FRAMES = 3
HEADER = struct.Struct(f"<I{MAX_FRAMES}Q")
MAX_DESCRIPTORS = 1
DESCRIPTOR = array("i")
DESCRIPTOR_SPACE = socket.CMSG_SPACE(MAX_DESCRIPTORS * DESCRIPTOR.itemsize)


def message_pieces(frames: Sequence[Any]) -> list[memoryview]:
    """The bytes of a message of ``frames`` (bytes-like objects, each contiguous): its
    header, then the frames themselves, not copied."""
    views = [memoryview(frame).cast("B") for frame in frames]
    if not 1 <= len(views) <= MAX_FRAMES:
        raise ValueError(f"a message has 1 to {MAX_FRAMES} frames, not {len(views)}")
    lengths = [view.nbytes for view in views] + [0] * (MAX_FRAMES - len(views))
    return [memoryview(HEADER.pack(len(views), *lengths)), *views]


def descriptor_message(descriptors: Sequence[int]) -> list[tuple[int, int, bytes]]:
    """The ancillary data of ``sendmsg`` that sends ``descriptors`` (none: nothing)."""
    if not descriptors:
        return []
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array("i", descriptors).tobytes())]


def send_frames(connection: socket.socket, frames: Sequence[Any], seconds: float) -> None:
    """Send ``frames`` as one message: one ``sendmsg`` call when the socket has room,
    waiting at most ``seconds`` at a time for room for the rest. :class:`TimeoutError`
    when the peer took nothing for that long."""
    pieces = message_pieces(frames)
    while pieces:
        try:
            sent = connection.sendmsg(pieces)
        except BlockingIOError:
            sent = 0
        while pieces and sent >= pieces[0].nbytes:
            sent -= pieces.pop(0).nbytes
        if pieces:
            pieces[0] = pieces[0][sent:]
            wait_for(connection, select.POLLOUT, seconds)


def receive_frames(
    connection: socket.socket,
    max_frame_bytes: int,
    seconds: float,
    descriptors: list[int] | None = None,
) -> list[memoryview]:
    """The frames of the next message, each at most ``max_frame_bytes``, as views of one
    new array (two reads: the header, then every frame at once); waits at most
    ``seconds`` at a time for more bytes. Raises :class:`ProtocolError` for a header that
    breaks those limits, ``ConnectionError`` when the peer closed the connection,
    ``TimeoutError`` when it sent nothing for ``seconds`` inside a message. With
    ``descriptors``, the file descriptors that came with the message's first bytes
    (``SCM_RIGHTS``) are appended there: the caller closes those it does not keep."""
    header = bytearray(HEADER.size)
    if descriptors is None:
        _receive_into(connection, memoryview(header), seconds)
    else:
        _receive_header_and_descriptors(connection, memoryview(header), seconds, descriptors)
    count, *lengths = HEADER.unpack(header)
    if not 1 <= count <= MAX_FRAMES or any(lengths[count:]):
        raise ProtocolError(f"a message has 1 to {MAX_FRAMES} frames, not {count}")
    if max(lengths) > max_frame_bytes:
        raise ProtocolError(f"a frame of {max(lengths)} bytes exceeds {max_frame_bytes}")
    body = memoryview(np.empty(sum(lengths), np.uint8))
    _receive_into(connection, body, seconds)
    frames = []
    position = 0
    for length in lengths[:count]:
        frames.append(body[position : position + length])
        position += length
    return frames


def wait_for(connection: socket.socket, event: int, seconds: float) -> None:
    """Wait until ``connection`` is ready for ``event`` (``select.POLLIN`` or
    ``POLLOUT``); :class:`TimeoutError` after ``seconds``."""
    ready = select.poll()
    ready.register(connection, event)
    if not ready.poll(seconds * 1000):
        raise TimeoutError(f"the peer was silent for {seconds:g} s")


def _receive_header_and_descriptors(
    connection: socket.socket, header: memoryview, seconds: float, descriptors: list[int]
) -> None:
    """Read ``header``, taking the descriptors sent with its first bytes (room for
    :data:`MAX_DESCRIPTORS`, rounded up; a message that carried more is refused)."""
    while True:
        try:
            received, ancillary, flags, _ = connection.recvmsg_into([header], DESCRIPTOR_SPACE)
            break
        except BlockingIOError:
            wait_for(connection, select.POLLIN, seconds)
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(data) - len(data) % DESCRIPTOR.itemsize
            descriptors.extend(array("i", data[:usable]))
    if flags & socket.MSG_CTRUNC:
        raise ProtocolError("a message carries too many file descriptors (share takes one)")
    if not received:
        raise ConnectionError("the peer closed the connection")
    if received < header.nbytes:
        _receive_into(connection, header[received:], seconds)


def _receive_into(connection: socket.socket, target: memoryview, seconds: float) -> None:
    position, size = 0, target.nbytes
    while position < size:
        try:
            received = connection.recv_into(target[position:])
        except BlockingIOError:
            wait_for(connection, select.POLLIN, seconds)
            continue
        if not received:
            raise ConnectionError("the peer closed the connection")
        position += received
