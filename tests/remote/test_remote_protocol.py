"""The server rejects what does not follow the protocol, logs it, and keeps serving."""

import json
import logging
import secrets
import time

import numpy as np
import pytest

zmq = pytest.importorskip("zmq")

import luisa_nb as lnb  # noqa: E402
from luisa_nb.remote.protocol import PROTOCOL_VERSION, encode  # noqa: E402


class RawClient:
    """A bare DEALER socket with a session of its own."""

    def __init__(self, endpoint, token):
        self.token = token
        self.session = secrets.token_hex(8)
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(endpoint)

    def request(self, op, token=None, **fields):
        token = token or self.token
        header = {"v": PROTOCOL_VERSION, "id": 7, "token": token, "session": self.session}
        return encode({**header, "op": op, **fields})

    def ask(self, frames, timeout=2000):
        """The reply (header, data frames) to ``frames``, or None if none comes."""
        self.socket.send_multipart(frames)
        while self.socket.poll(timeout):
            reply = self.socket.recv_multipart()
            header = json.loads(reply[0])
            if not header.get("probe"):
                return header, reply[1:]
        return None

    def close(self):
        self.socket.close()
        self.context.term()


@pytest.fixture
def raw(thread_server):
    client = RawClient(thread_server.endpoint, thread_server.token)
    yield client
    client.close()


def assert_still_serves(raw):
    header, _ = raw.ask([raw.request("clock")])
    assert header["ok"] is True and header["id"] == 7 and isinstance(header["time"], int)


def test_a_wrong_token_is_rejected_and_logged(raw, caplog):
    with caplog.at_level(logging.WARNING, logger="luisa_nb.remote.server"):
        header, _ = raw.ask([raw.request("allocate", token="guess", nbytes=64)])
    assert header == {
        "v": PROTOCOL_VERSION,
        "id": 7,
        "ok": False,
        "error": "authentication failed: wrong token",
    }
    assert "wrong token" in caplog.text and "127.0.0.1" in caplog.text
    assert_still_serves(raw)


MALFORMED = {
    "not json": (lambda raw: [b"\xff not json"], "header is not JSON"),
    "a list": (lambda raw: [b"[1, 2]"], "not an object"),
    "old version": (lambda raw: [encode({"v": 99, "id": 1})], "protocol version 99"),
    "negative id": (lambda raw: [encode({"v": 1, "id": -1})], "id must be an integer"),
    "unknown op": (lambda raw: [raw.request("format_disk")], "op 'format_disk' is unknown"),
    "bad field": (
        lambda raw: [raw.request("allocate", nbytes="lots")],
        "allocate nbytes must be an integer",
    ),
    "bad ops": (
        lambda raw: [raw.request("batch", group=1, ops={"a": 1}, frees=[])],
        "ops must be a list",
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_messages_are_rejected_and_logged(raw, caplog, case):
    make, reason = MALFORMED[case]
    with caplog.at_level(logging.WARNING, logger="luisa_nb.remote.server"):
        header, _ = raw.ask(make(raw))
    assert header["ok"] is False and reason in header["error"]
    assert reason in caplog.text
    assert_still_serves(raw)


@pytest.mark.parametrize(
    ("operation", "reason"),
    [
        (["upload", 1, 0, 5], "upload frame must be an integer"),
        (["download", 999, 0, 4], "buffer handle 999 is unknown"),
        (["copy", 1, 0, 1, 60, 8], "bytes [60, 68) are outside buffer handle 1 of 64 bytes"),
        (["fill", 1, 0, 64, "<f4", "zz"], "fill element"),
        (["fill", 1, 0, 64, "object", "00"], "fill dtype"),
        (["dispatch", "0" * 32, [1, 1, 1], [], [], None], "unknown here"),
        (["dispatch", "0" * 32, [1, 1], [], [], None], "dims must be a list of 3"),
        (["rm", "-rf"], "is not [name, ...fields]"),
    ],
)
def test_malformed_operations_fail_their_batch_and_nothing_else(raw, operation, reason):
    header, _ = raw.ask([raw.request("allocate", nbytes=64)])
    assert header["ok"] and header["handle"] == 1
    fill = ["fill", 1, 0, 64, "<f4", np.float32(2.5).tobytes().hex()]
    batch = raw.request("batch", group=1, ops=[fill, operation, fill], frees=[])
    header, frames = raw.ask([batch])
    assert header["ok"] is True and header["done"] == 1 and header["failed"] == 1
    assert reason in header["error"]
    assert len(np.frombuffer(frames[0], np.int64)) == 2  # times of the one done operation
    download = ["download", 1, 0, 8]
    header, frames = raw.ask([raw.request("batch", group=2, ops=[download], frees=[1])])
    assert header["done"] == 1 and np.all(np.frombuffer(frames[1], np.float32) == 2.5)
    header, _ = raw.ask([raw.request("batch", group=3, ops=[download], frees=[])])
    assert header["failed"] == 0 and "handle 1 is unknown" in header["error"]  # freed


def test_after_a_failure_the_rest_of_its_group_is_skipped(raw):
    raw.ask([raw.request("allocate", nbytes=16)])
    bad = ["download", 1, 0, 32]
    header, _ = raw.ask([raw.request("batch", group=5, ops=[bad], frees=[])])
    assert header["failed"] == 0
    fine = ["download", 1, 0, 16]
    header, _ = raw.ask([raw.request("batch", group=5, ops=[fine], frees=[])])
    assert header["done"] == 0 and "failed" not in header
    header, _ = raw.ask([raw.request("batch", group=6, ops=[fine], frees=[])])
    assert header["done"] == 1


def test_a_message_over_the_limit_is_rejected(raw, caplog):
    # several frames, each under the 4 MiB limit of the session server, together over it
    frames = [raw.request("batch", group=1, ops=[], frees=[]), *[b"\0" * (3 << 20)] * 2]
    with caplog.at_level(logging.WARNING, logger="luisa_nb.remote.server"):
        header, _ = raw.ask(frames)
    assert header["ok"] is False
    assert f"carries {6 << 20} data bytes; the limit is {4 << 20}" in header["error"]
    assert "limit" in caplog.text
    assert_still_serves(raw)


def test_a_frame_over_the_limit_drops_the_connection_and_nothing_else(raw, thread_server):
    # ZeroMQ itself refuses a frame over MAXMSGSIZE: no reply, the connection drops
    assert raw.ask([raw.request("clock"), b"\0" * (17 << 20)], timeout=500) is None
    assert_still_serves(raw)  # the socket reconnects
    device = lnb.create_device(thread_server.address, token=thread_server.token)
    buffer = device.create_buffer(4, np.int32)
    buffer.fill(3)
    assert np.all(buffer.numpy() == 3)
    device.backend.close()


def test_a_session_ends_when_its_connection_drops(thread_server):
    client = RawClient(thread_server.endpoint, thread_server.token)
    header, _ = client.ask([client.request("allocate", nbytes=1 << 20)])
    assert header["ok"]
    sessions = thread_server.server._sessions
    assert client.session in sessions
    client.close()
    deadline = time.monotonic() + 5
    while client.session in sessions and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.session not in sessions
