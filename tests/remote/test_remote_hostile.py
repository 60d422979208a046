"""Peers without the token, and oversized frames, cost the server (almost) no memory."""

import socket
import struct

import numpy as np
import pytest

zmq = pytest.importorskip("zmq")

import luisa_nb as lnb  # noqa: E402

from .helpers import RawClient, peak_rss_kib  # noqa: E402

FLOOD_MIB = 200
FRAME = memoryview(np.zeros(1 << 20, np.uint8))  # sent without a copy, so the flood is cheap
BOUND_MIB = 40  # a frame of at most 16 MiB per connection, and headroom


def greeting(mechanism: bytes) -> bytes:
    """The 64-byte ZMTP 3.0 greeting of a client using ``mechanism``."""
    return b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + mechanism.ljust(20, b"\0") + bytes(32)


def stream_raw(endpoint: str, prefix: bytes) -> None:
    """Write ``prefix``, then FLOOD_MIB MiB, over a plain TCP connection, until the server
    hangs up."""
    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        try:
            connection.sendall(prefix)
            for _ in range(FLOOD_MIB):
                connection.sendall(FRAME)
        except OSError:  # the server closed the connection: what should happen
            pass


def flood_zmq(endpoint: str, token: str | None) -> None:
    """FLOOD_MIB MiB in 1 MiB frames from a ZeroMQ client logged in with ``token``."""
    client = RawClient(endpoint, token)
    try:
        client.socket.send_multipart([*client.request("clock"), *[FRAME] * FLOOD_MIB], copy=False)
        assert client.socket.poll(300) == 0  # nothing is answered
    finally:
        client.close()


def flood_zmq_one_frame(endpoint: str, token: str) -> None:
    client = RawClient(endpoint, token)
    try:
        client.socket.send_multipart([*client.request("clock"), bytes(FLOOD_MIB << 20)])
        assert client.socket.poll(1000) == 0  # the connection is dropped, nothing answered
    finally:
        client.close()


FLOODS = {
    "wrong token": lambda endpoint, token: flood_zmq(endpoint, token + "?"),
    "no login": lambda endpoint, token: flood_zmq(endpoint, None),
    "random bytes": lambda endpoint, token: stream_raw(endpoint, b""),
    # a login command declared 200 MiB long: over the frame limit, dropped unread
    "huge login": lambda endpoint, token: stream_raw(
        endpoint, greeting(b"PLAIN") + b"\x06" + struct.pack(">Q", FLOOD_MIB << 20)
    ),
    # logged in, one frame of 200 MiB: over the frame limit, dropped unread
    "huge frame": lambda endpoint, token: flood_zmq_one_frame(endpoint, token),
}


def test_floods_without_the_token_or_over_the_frame_limit_keep_memory_bounded(process_server):
    process, endpoint, token = process_server
    before = peak_rss_kib(process.pid)
    for flood in FLOODS.values():
        flood(endpoint, token)
    grown_mib = (peak_rss_kib(process.pid) - before) / 1024
    assert grown_mib < BOUND_MIB, f"the server's peak memory grew by {grown_mib:.0f} MiB"
    assert process.poll() is None
    device = lnb.create_device("remote://" + endpoint.removeprefix("tcp://"), token=token)
    buffer = device.create_buffer(1 << 18, np.float32)  # 1 MiB: travels in one chunk
    data = np.arange(1 << 18, dtype=np.float32)
    buffer.copy_from(data)
    assert np.array_equal(buffer.numpy(), data)
    device.backend.close()
