"""The direct link's framing over non-blocking Unix sockets, and the JSON codec both ends
use: whole messages however the bytes arrive, bounded waits, and every malformed header
or text refused."""

import socket
import struct
import threading
import time

import numpy as np
import pytest

from luisa_nb.remote.protocol import ProtocolError, decode, encode
from luisa_nb.remote.stream import HEADER, receive_frames, send_frames


@pytest.fixture
def link():
    """Two connected Unix stream sockets, both non-blocking as the client and worker
    keep theirs."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setblocking(False)
    theirs.setblocking(False)
    yield ours, theirs
    ours.close()
    theirs.close()


def test_a_message_comes_back_as_its_frames(link):
    ours, theirs = link
    payload = np.arange(1000, dtype=np.float32)
    send_frames(ours, [b'{"v":5}', b"", payload], 1.0)
    frames = receive_frames(theirs, 1 << 20, 1.0)
    assert [bytes(frame) for frame in frames] == [b'{"v":5}', b"", payload.tobytes()]


def test_a_message_that_arrives_in_pieces_is_read_whole(link):
    ours, theirs = link
    message = HEADER.pack(2, 5, 3, 0) + b"hello" + b"abc"

    def trickle():
        for start in range(0, len(message), 7):
            time.sleep(0.01)
            ours.sendall(message[start : start + 7])

    writer = threading.Thread(target=trickle)
    writer.start()
    frames = receive_frames(theirs, 1 << 20, 2.0)
    writer.join()
    assert [bytes(frame) for frame in frames] == [b"hello", b"abc"]


def test_a_peer_silent_inside_a_message_times_out(link):
    ours, theirs = link
    ours.sendall(HEADER.pack(1, 10, 0, 0) + b"abc")
    with pytest.raises(TimeoutError):
        receive_frames(theirs, 1 << 20, 0.2)


def test_a_closed_peer_is_a_connection_error(link):
    ours, theirs = link
    ours.sendall(HEADER.pack(1, 10, 0, 0) + b"abc")
    ours.close()
    with pytest.raises(ConnectionError):
        receive_frames(theirs, 1 << 20, 1.0)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (struct.pack("<I3Q", 4, 1, 1, 1), "1 to 3 frames, not 4"),
        (struct.pack("<I3Q", 0, 0, 0, 0), "1 to 3 frames, not 0"),
        (struct.pack("<I3Q", 1, 8, 8, 0), "1 to 3 frames, not 1"),
        (struct.pack("<I3Q", 2, 8, 2000, 0), "a frame of 2000 bytes exceeds 1000"),
    ],
    ids=["four frames", "no frame", "a stray length", "a frame over the limit"],
)
def test_a_header_that_breaks_the_limits_is_refused_before_its_frames(link, header, reason):
    ours, theirs = link
    ours.sendall(header + b"frames")
    with pytest.raises(ProtocolError, match=reason):
        receive_frames(theirs, 1000, 1.0)
    assert theirs.recv(100) == b"frames"  # not a byte after the header was read


def test_a_peer_that_takes_nothing_makes_a_send_time_out(link):
    ours, _ = link
    large = np.zeros(16 << 20, np.uint8)  # far more than the socket buffers hold
    with pytest.raises(TimeoutError):
        send_frames(ours, [b"{}", large], 0.2)


def test_a_large_message_crosses_while_the_peer_reads_it(link):
    ours, theirs = link
    large = np.random.default_rng(1).integers(0, 255, 8 << 20, dtype=np.uint8)
    received = []
    reader = threading.Thread(target=lambda: received.extend(receive_frames(theirs, 16 << 20, 5)))
    reader.start()
    send_frames(ours, [b"{}", large], 5.0)
    reader.join()
    assert bytes(received[0]) == b"{}"
    assert np.array_equal(np.frombuffer(received[1], np.uint8), large)


def test_json_is_written_compact_and_read_back():
    header = {"v": 5, "id": 3, "ok": True, "ops": [["fill", 1, 0, 4, "<f4", "0000803f"]]}
    text = encode(header)
    assert text == b'{"v":5,"id":3,"ok":true,"ops":[["fill",1,0,4,"<f4","0000803f"]]}'
    assert decode(memoryview(text)) == header
    assert encode({"name": "caf\u00e9"}) == b'{"name":"caf\\u00e9"}'


def test_json_with_whitespace_is_still_read():
    assert decode(b' { "v" : 5 }\n') == {"v": 5}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (b'{"v":5} x', "header is not JSON"),
        (b'{"v":', "header is not JSON"),
        (b"", "header is not JSON"),
        (b"\xff{}", "header is not JSON"),
        (b"[1, 2]", "header is a JSON list, not an object"),
        (b"7", "header is a JSON int, not an object"),
        (b"x" * 2000, "header of 2000 bytes exceeds 1024"),
    ],
)
def test_anything_but_one_json_object_is_a_protocol_error(text, reason):
    with pytest.raises(ProtocolError, match=reason):
        decode(text, limit=1024)


def test_a_value_json_cannot_write_is_refused():
    with pytest.raises(TypeError, match="bytes is not JSON serializable"):
        encode({"data": b"raw"})
