"""A client on the server's host goes direct: its batches reach the session's worker
without the supervisor, its bytes cross the session's shared window, and it uses only a
window that is its own user's, in a server's private directory, with the right nonce."""

import json
import os
import struct

import numpy as np
import pytest

zmq = pytest.importorskip("zmq")

import luisa_nb as lnb  # noqa: E402
from luisa_nb.remote.protocol import MAX_FRAME_BYTES, PROTOCOL_VERSION, encode  # noqa: E402
from luisa_nb.remote.window import create_window, local_window  # noqa: E402
from luisa_nb.remote.worker import STREAM_SECONDS  # noqa: E402

from .helpers import TOKEN, StreamSocket  # noqa: E402


@pytest.fixture
def supervised_ops(thread_server, monkeypatch):
    """The ops of the requests that reach the supervisor, in order."""
    server, seen = thread_server.server, []
    request = server._request

    def recording(identity, header, envelope, data):
        seen.append(header["op"])
        return request(identity, header, envelope, data)

    monkeypatch.setattr(server, "_request", recording)
    return seen


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "relayed"])
def test_batches_go_to_the_worker_and_bytes_through_the_window(
    thread_server, supervised_ops, direct, buffers_in_device_memory
):
    device = lnb.create_device(thread_server.address, token=TOKEN, direct=direct)
    connection = device.backend._connection
    data = np.random.default_rng(2).random(5 << 20, dtype=np.float32)  # 20 MiB: 5 chunks
    buffer = device.create_buffer(data.size, np.float32)
    buffer.copy_from(data)
    assert np.array_equal(buffer.numpy(), data)
    relayed = [op for op in supervised_ops if op in ("allocate", "batch")]
    if direct:
        assert relayed == []
        parts = connection.parts
        assert len(parts._free) == parts.window.nbytes // parts.part_bytes  # all given back
        assert not os.path.exists(connection.hello["local"]["window"])  # mapped by both
    else:
        assert relayed.count("allocate") == 1 and relayed.count("batch") >= 10
    device.backend.close()


def private_window(folder, name="worker-1.window"):
    """A window as a server makes one: ``folder`` (mode 0700) and the file (0600)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / name
    nonce = create_window(str(path), 4096)
    socket = f"{folder}/worker-1.stream"
    return {"worker": socket, "window": str(path), "window_bytes": 4096, "nonce": nonce}


def test_a_window_in_a_servers_private_directory_is_used(tmp_path):
    local = private_window(tmp_path / "luisa_nb-server-abc123")
    window, path = local_window(local)
    assert path == local["worker"] and window.nbytes == 4096


def spoil(local, folder, change):
    """``local`` with one thing wrong."""
    path = local["window"]
    if change == "wrong nonce":
        local["nonce"] = "00" * 16
    elif change == "size":
        local["window_bytes"] = 8192
    elif change == "file readable by others":
        os.chmod(path, 0o644)
    elif change == "directory open to others":
        os.chmod(folder, 0o755)
    elif change == "a link":
        os.symlink(path, folder / "worker-2.window")
        local["window"] = str(folder / "worker-2.window")
    elif change == "socket elsewhere":
        local["worker"] = "/tmp/worker-1.stream"
    elif change == "not a worker file":
        os.rename(path, folder / "notes.txt")
        local["window"] = str(folder / "notes.txt")
    elif change == "not a server directory":
        moved = folder.parent / "home"
        os.rename(folder, moved)
        local["window"] = str(moved / "worker-1.window")
        local["worker"] = f"{moved}/worker-1.stream"
    elif change == "not a dict":
        return [local]
    elif change == "a field of the wrong type":
        local["window_bytes"] = "4096"
    return local


@pytest.mark.parametrize(
    "change",
    [
        "wrong nonce",
        "size",
        "file readable by others",
        "directory open to others",
        "a link",
        "socket elsewhere",
        "not a worker file",
        "not a server directory",
        "not a dict",
        "a field of the wrong type",
    ],
)
def test_any_other_window_is_not_used(tmp_path, change):
    folder = tmp_path / "luisa_nb-server-abc123"
    local = private_window(folder)
    assert local_window(spoil(local, folder, change)) is None


def direct_request(raw, session, op="allocate", extra=(), **arguments):
    envelope = encode({"v": PROTOCOL_VERSION, "id": 9, "session": session, "op": op})
    raw.send_multipart([envelope, encode(arguments), *extra])
    return json.loads(raw.recv_multipart()[0])


@pytest.fixture
def worker_stream(thread_server):
    """A device of the thread server, and a raw connection to its worker's stream."""
    device = lnb.create_device(thread_server.address, token=TOKEN)
    raw = StreamSocket(device.backend._connection.worker_path)
    yield device, raw
    raw.close()
    device.backend.close()


def serves(device, value: float) -> bool:
    """Whether the device still fills a buffer with ``value`` and reads it back."""
    buffer = device.create_buffer(4, np.float32)
    buffer.fill(value)
    return bool(np.all(buffer.numpy() == value))


def test_requests_sent_to_the_worker_are_checked_as_the_supervisor_checks_them(worker_stream):
    device, raw = worker_stream
    session = device.backend._connection.session
    for reply, reason in [
        (direct_request(raw, "ab" * 8, nbytes=8), "this worker serves another session"),
        (direct_request(raw, session, "hello"), "op 'hello' is not one a session worker"),
        (direct_request(raw, session, "rm"), "op 'rm' is unknown"),
        (direct_request(raw, session, "batch", group=1), "ops must be a list"),
        (
            direct_request(raw, session, "batch", group=1, ops=[], frees=[], window=[1]),
            "window must be [start, payload bytes]",
        ),
    ]:
        assert reply["ok"] is False and reason in reply["error"], reply
    assert direct_request(raw, session, nbytes=8)["handle"] >= 1  # it still serves
    assert serves(device, 2.0)


@pytest.mark.parametrize(
    "header",
    [
        struct.pack("<I3Q", 4, 1, 1, 1),  # four frames
        struct.pack("<I3Q", 0, 0, 0, 0),  # none
        struct.pack("<I3Q", 1, 8, 8, 0),  # a length past the count
        struct.pack("<I3Q", 2, 100, MAX_FRAME_BYTES + 1, 0),  # a frame over the limit
    ],
    ids=["four frames", "no frame", "a stray length", "a frame over the limit"],
)
def test_a_stream_that_breaks_the_message_format_is_dropped_and_the_worker_serves_on(
    worker_stream, header
):
    device, raw = worker_stream
    raw.connection.sendall(header)
    assert raw.connection.recv(1) == b""  # closed, before any frame was read
    assert serves(device, 3.0)


def test_a_client_that_stalls_inside_a_message_is_dropped_and_the_worker_serves_on(
    worker_stream,
):
    device, raw = worker_stream
    raw.connection.settimeout(STREAM_SECONDS + 5)
    raw.connection.sendall(struct.pack("<I3Q", 2, 60, 10, 0) + b'{"v":')  # and no more
    assert raw.connection.recv(1) == b""  # closed once the worker gave up waiting
    assert serves(device, 4.0)


def test_with_every_window_part_taken_bytes_travel_in_frames_over_the_stream(thread_server):
    device = lnb.create_device(thread_server.address, token=TOKEN)
    parts = device.backend._connection.parts
    taken = []
    while (start := parts.take()) is not None:  # as other threads of the device would
        taken.append(start)
    try:
        data = np.random.default_rng(3).random(3 << 20, dtype=np.float32)  # 12 MiB: 3 chunks
        buffer = device.create_buffer(data.size, np.float32)
        stream = device.default_stream
        back = np.zeros_like(data)
        stream.submit([buffer.copy_from_async(data), buffer.copy_to_async(back)])
        stream.synchronize()
        assert np.array_equal(back, data)
        assert parts.take() is None  # no batch used a part
    finally:
        for start in taken:
            parts.give_back(start)
        device.backend.close()
