"""The server rejects what does not follow the protocol, logs it, and keeps serving."""

import json
import logging
import time

import numpy as np
import pytest

zmq = pytest.importorskip("zmq")

import luisa_nb as lnb  # noqa: E402
from luisa_nb.remote.protocol import PROTOCOL_VERSION, encode, kernel_key  # noqa: E402

from .helpers import RawClient  # noqa: E402


@pytest.fixture
def raw(thread_server):
    client = RawClient(thread_server.endpoint, thread_server.token)
    yield client
    client.close()


def assert_still_serves(raw):
    header, _ = raw.ask(raw.request("clock"))
    assert header["ok"] is True and header["id"] == 7 and isinstance(header["time"], int)


@pytest.mark.parametrize("token", ["guess", None], ids=["wrong token", "no login"])
def test_a_connection_without_the_token_never_has_a_message_read(thread_server, caplog, token):
    thread_server.server._authenticator.refusals.clear()  # so this one is logged, not limited
    stranger = RawClient(thread_server.endpoint, token)
    try:
        with caplog.at_level(logging.WARNING, logger="luisa_nb.remote.server"):
            assert stranger.ask(stranger.request("allocate", nbytes=64), timeout=300) is None
    finally:
        stranger.close()
    if token is not None:  # a wrong password reaches the server's check, and is logged
        assert "refused a connection from 127.0.0.1: wrong token" in caplog.text
    assert stranger.session not in thread_server.server._sessions
    friend = RawClient(thread_server.endpoint, thread_server.token)
    assert_still_serves(friend)
    friend.close()


MALFORMED = {
    "not json": (lambda raw: [b"\xff not json"], "envelope is not JSON"),
    "a list": (lambda raw: [b"[1, 2]"], "not an object"),
    "old version": (lambda raw: [encode({"v": 1, "id": 1})], "protocol version 1"),
    "negative id": (
        lambda raw: [encode({"v": PROTOCOL_VERSION, "id": -1})],
        "id must be an integer",
    ),
    "unknown op": (lambda raw: raw.request("format_disk"), "op 'format_disk' is unknown"),
    "bad field": (
        lambda raw: raw.request("allocate", nbytes="lots"),
        "allocate nbytes must be an integer",
    ),
    "bad ops": (
        lambda raw: raw.request("batch", group=1, ops={"a": 1}, frees=[]),
        "ops must be a list",
    ),
    "cancel with arguments": (
        lambda raw: raw.request("cancel", kernel=1),
        "cancel is an envelope alone; it takes no other frame",
    ),
}


CHECKED_BY_THE_WORKER = {"bad field", "bad ops"}  # it logs into the server's stderr


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_messages_are_rejected_and_logged(raw, caplog, case):
    make, reason = MALFORMED[case]
    with caplog.at_level(logging.WARNING, logger="luisa_nb.remote.server"):
        header, _ = raw.ask(make(raw))
    assert header["ok"] is False and reason in header["error"]
    if case not in CHECKED_BY_THE_WORKER:
        assert reason in caplog.text
    assert_still_serves(raw)


def test_cancel_and_resume_set_and_clear_the_flag_the_sessions_kernels_poll(raw, thread_server):
    sessions = thread_server.server._sessions
    header, _ = raw.ask(raw.request("cancel"))
    assert header == {"v": PROTOCOL_VERSION, "id": 7, "ok": True}
    assert sessions[raw.session].worker is None  # no kernel runs: no worker is started
    raw.ask(raw.request("hello"))
    flag = sessions[raw.session].worker.cancel
    assert not flag.is_set
    raw.ask(raw.request("cancel"))
    assert flag.is_set
    header, _ = raw.ask(raw.request("resume"))
    assert header["ok"] is True and not flag.is_set


def test_the_worker_logs_what_it_refuses(caplog):
    from luisa_nb.backends.cpu import CpuBackend
    from luisa_nb.remote.worker import SessionWorker

    worker = SessionWorker(CpuBackend())
    envelope = encode({"v": PROTOCOL_VERSION, "id": 3, "session": "00" * 8, "op": "allocate"})
    arguments = zmq.Frame(encode({"nbytes": "lots"}))
    with caplog.at_level(logging.WARNING, logger="luisa_nb.remote.worker"):
        reply = worker.answer(b"peer", memoryview(envelope), [arguments])
    assert json.loads(reply[0]) == {
        "v": PROTOCOL_VERSION,
        "id": 3,
        "ok": False,
        "error": "malformed message: allocate nbytes must be an integer in "
        "[0, 281474976710656], got 'lots'",
    }
    assert "allocate nbytes must be an integer" in caplog.text


def dispatch_defining(**changes):
    """A dispatch carrying a kernel definition with ``changes``, named by its hash."""
    definition = {"name": "lnb_k", "source": "", "buffers": [], "scalars": [], **changes}
    return ["dispatch", kernel_key(definition), [1, 1, 1], [], [], definition]


@pytest.mark.parametrize(
    ("operation", "reason"),
    [
        (["upload", 1, 0, 4, 5], "upload bytes [5, 9) are outside the payload of 8 bytes"),
        (["upload", 1, 0, 4, -1], "upload payload offset must be an integer"),
        (["download", 999, 0, 4], "buffer handle 999 is unknown"),
        (["copy", 1, 0, 1, 60, 8], "bytes [60, 68) are outside buffer handle 1 of 64 bytes"),
        (["fill", 1, 0, 64, "<f4", "zz"], "fill element"),
        (["fill", 1, 0, 64, "object", "00"], "fill dtype: dtype 'object' is not one of"),
        (["fill", 1, 0, 64, {"itemsize": 4}, "00"], "fill dtype: a struct dtype is"),
        (dispatch_defining(buffers=[">f4"]), "kernel buffers: dtype '>f4' is not one of"),
        (dispatch_defining(scalars=["int31"]), "a kernel scalar is one of bool, int32"),
        (["dispatch", "0" * 32, [1, 1, 1], [], [], None], "unknown here"),
        (["dispatch", "0" * 32, [1, 1], [], [], None], "dims must be a list of 3"),
        (["rm", "-rf"], "is not [name, ...fields]"),
    ],
)
def test_malformed_operations_fail_their_batch_and_nothing_else(raw, operation, reason):
    header, _ = raw.ask(raw.request("allocate", nbytes=64))
    assert header["ok"] and header["handle"] == 1
    fill = ["fill", 1, 0, 64, "<f4", np.float32(2.5).tobytes().hex()]
    batch = raw.request("batch", group=1, ops=[fill, operation, fill], frees=[])
    header, frames = raw.ask([*batch, b"\0" * 8])
    assert header["ok"] is True and header["done"] == 1 and header["failed"] == 1
    assert reason in header["error"]
    assert len(np.frombuffer(frames[0], np.int64)) == 2  # times of the one done operation
    download = ["download", 1, 0, 8]
    header, frames = raw.ask(raw.request("batch", group=2, ops=[download], frees=[1]))
    assert header["done"] == 1 and np.all(np.frombuffer(frames[1], np.float32) == 2.5)
    header, _ = raw.ask(raw.request("batch", group=3, ops=[download], frees=[]))
    assert header["failed"] == 0 and "handle 1 is unknown" in header["error"]  # freed


def test_after_a_failure_the_rest_of_its_group_is_skipped(raw):
    raw.ask(raw.request("allocate", nbytes=16))
    bad = ["download", 1, 0, 32]
    header, _ = raw.ask(raw.request("batch", group=5, ops=[bad], frees=[]))
    assert header["failed"] == 0
    fine = ["download", 1, 0, 16]
    header, _ = raw.ask(raw.request("batch", group=5, ops=[fine], frees=[]))
    assert header["done"] == 0 and "failed" not in header
    header, _ = raw.ask(raw.request("batch", group=6, ops=[fine], frees=[]))
    assert header["done"] == 1


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (
            [b"\0" * (5 << 20)],
            f"payload of {5 << 20} bytes exceeds the server's limit of {4 << 20}",
        ),
        ([b"", b"", b""], "a request has at most 3 frames"),
    ],
    ids=["payload over the limit", "too many frames"],
)
def test_a_message_over_the_limits_is_refused(raw, caplog, extra, reason):
    # each frame is under ZeroMQ's limit (16 MiB here), so the server reads and refuses it
    frames = [*raw.request("batch", group=1, ops=[], frees=[]), *extra]
    with caplog.at_level(logging.WARNING, logger="luisa_nb.remote.server"):
        header, _ = raw.ask(frames)
    assert header["ok"] is False and header["id"] == 7
    assert reason in header["error"]
    assert reason in caplog.text
    assert_still_serves(raw)


def test_a_frame_over_the_limit_drops_the_connection_and_nothing_else(raw, thread_server):
    # ZeroMQ itself refuses a frame over MAXMSGSIZE: no reply, the connection drops
    assert raw.ask([*raw.request("clock"), b"\0" * (17 << 20)], timeout=500) is None
    assert_still_serves(raw)  # the socket reconnects
    device = lnb.create_device(thread_server.address, token=thread_server.token)
    buffer = device.create_buffer(4, np.int32)
    buffer.fill(3)
    assert np.all(buffer.numpy() == 3)
    device.backend.close()


def test_a_session_ends_when_its_connection_drops(thread_server):
    client = RawClient(thread_server.endpoint, thread_server.token)
    header, _ = client.ask(client.request("allocate", nbytes=1 << 20))
    assert header["ok"]
    sessions = thread_server.server._sessions
    assert client.session in sessions
    client.close()
    deadline = time.monotonic() + 5
    while client.session in sessions and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.session not in sessions


@pytest.mark.parametrize("limit", [0, (16 << 20) + 1])
def test_a_payload_limit_must_fit_in_one_frame(limit):
    from luisa_nb.errors import ConfigurationError
    from luisa_nb.remote.server import Server

    with pytest.raises(ConfigurationError, match=rf"max_message_bytes={limit} is outside"):
        Server("cpu", port=0, token="t", max_message_bytes=limit)
