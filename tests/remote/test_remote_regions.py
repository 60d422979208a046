"""A direct client's large downloads of buffers not in shared memory (a server whose
device memory is not host memory) land in memory it shares with its session's worker
(a sealed memfd passed over the worker's Unix socket): the worker writes there, the
client copies once into the user's array. The worker maps only what passes its checks,
closes every descriptor it does not keep, and serves on after a bad one."""

import contextlib
import json
import os

import numpy as np
import pytest

zmq = pytest.importorskip("zmq")

import luisa_nb as lnb  # noqa: E402
from luisa_nb.remote import regions  # noqa: E402
from luisa_nb.remote.protocol import PROTOCOL_VERSION, encode  # noqa: E402
from luisa_nb.remote.stream import descriptor_message, message_pieces  # noqa: E402

from .helpers import (  # noqa: E402
    TOKEN,
    disk_file,
    pipe_end,
    request,
    unsealed_memfd,
)

pytestmark = [
    pytest.mark.skipif(not regions.AVAILABLE, reason="needs memfd_create (Linux)"),
    pytest.mark.usefixtures("buffers_in_device_memory"),
]
LARGE = regions.SHARED_READBACK_BYTES  # bytes: a readback this large is shared


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "relayed"])
def test_a_large_download_lands_in_memory_shared_with_the_worker(
    thread_server, staging, direct, sent_operations
):
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging, direct=direct)
    data = np.random.default_rng(5).random(3 * LARGE // 4 + 5, dtype=np.float32)  # 3 MiB
    buffer = device.create_buffer(data.size, np.float32)
    buffer.copy_from(data)
    for _ in range(2):  # the second lands in the stream's spare readback memory
        back = np.zeros_like(data)
        buffer.copy_to(back, sync=True)
        assert np.array_equal(back, data)
    small = np.zeros(10, np.float32)
    buffer.view(7, 17).copy_to(small, sync=True)  # in the spare: shared too when direct
    assert np.array_equal(small, data[7:17])
    connection = device.backend._connection
    if direct:
        assert sent_operations.count("readback") == 3 and "download" not in sent_operations
        assert 1 <= len(connection.regions.live) <= 2
    else:
        assert "readback" not in sent_operations and connection.regions is None
    device.backend.close()


def test_small_downloads_without_shared_memory_travel_through_the_window(
    thread_server, sent_operations
):
    device = lnb.create_device(thread_server.address, token=TOKEN)
    buffer = device.create_buffer(64, np.float32)
    buffer.copy_from(np.arange(64, dtype=np.float32))
    assert np.array_equal(buffer.numpy(), np.arange(64, dtype=np.float32))
    assert "download" in sent_operations and "readback" not in sent_operations
    device.backend.close()


def test_a_collected_region_is_unmapped_by_the_worker(thread_server):
    device = lnb.create_device(thread_server.address, token=TOKEN)
    connection = device.backend._connection
    shared = connection.shared_readback(LARGE)
    identifier = next(iter(connection.regions.live))
    buffer = device.create_buffer(LARGE // 4, np.float32)
    buffer.fill(2.5)
    device.default_stream.synchronize()
    device.backend.download(buffer.allocation, 0, shared)
    device.backend.flush()
    assert np.all(shared.view(np.float32) == 2.5)  # the worker wrote the client's memory
    del shared
    assert identifier not in connection.regions.live
    assert list(connection.regions.unshared) == [identifier]
    buffer.fill(1.0)  # the next batch tells the worker
    device.default_stream.synchronize()
    assert not connection.regions.unshared
    device.backend.close()


def test_a_client_never_shares_more_regions_than_the_worker_maps(thread_server):
    device = lnb.create_device(thread_server.address, token=TOKEN)
    connection = device.backend._connection
    held = [connection.shared_readback(LARGE) for _ in range(regions.MAX_REGIONS)]
    assert all(memory is not None for memory in held)
    assert connection.shared_readback(LARGE) is None  # the backend then uses plain memory
    assert device.backend.readback_memory(LARGE).nbytes == LARGE
    del held[0]
    assert connection.shared_readback(LARGE) is not None  # the worker unmapped one first
    device.backend.close()


def test_a_region_the_worker_refuses_leaves_plain_readback_memory(thread_server, monkeypatch):
    monkeypatch.setattr(regions.fcntl, "fcntl", lambda *arguments: 0)  # no seals
    device = lnb.create_device(thread_server.address, token=TOKEN)
    data = np.arange(LARGE // 2, dtype=np.float32)
    buffer = device.create_buffer(data.size, np.float32)
    buffer.copy_from(data)
    assert np.array_equal(buffer.numpy(), data)  # through the window
    assert device.backend._connection.regions.live == {}
    device.backend.close()


# -- a hostile client on the worker's socket ---------------------------------------------


def sealed_region(identifier=1, nbytes=4096):
    return regions.ClientRegion(identifier, nbytes)


def test_a_shared_region_is_written_by_a_readback_and_forgotten_on_unshare(worker_link):
    device, raw = worker_link
    session = device.backend._connection.session
    region = sealed_region(nbytes=8192)
    reply = request(raw, session, "share", [region.descriptor], region=41, nbytes=8192)
    region.shared()
    assert reply["ok"] is True, reply
    buffer = device.create_buffer(1024, np.float32)
    buffer.fill(7.0)
    device.default_stream.synchronize()
    handle = buffer.allocation.handle
    readback = ["readback", handle, 0, 4096, 41, 4096]
    reply = request(raw, session, "batch", group=1, ops=[readback], frees=[])
    assert reply["done"] == 1, reply
    assert np.all(region.array[4096:].view(np.float32) == 7.0)
    assert not region.array[:4096].any()
    for group, (operation, reason) in enumerate(
        [
            (["readback", handle, 0, 4096, 41, 4097], "outside the shared region of 8192"),
            (["readback", handle, 0, 4096, 42, 0], "region 42 is not shared"),
        ],
        2,
    ):
        reply = request(raw, session, "batch", group=group, ops=[operation], frees=[])
        assert reply["done"] == 0 and reason in reply["error"], reply
    request(raw, session, "batch", group=4, ops=[], frees=[], unshare=[41])
    reply = request(raw, session, "batch", group=5, ops=[readback], frees=[])
    assert "region 41 is not shared" in reply["error"]


@pytest.mark.parametrize(
    ("make", "arguments", "reason"),
    [
        (None, {"region": 300, "nbytes": 4096}, "share carries one file descriptor, not 0"),
        (pipe_end, {"region": 300, "nbytes": 4096}, "must be memory (memfd), not another file"),
        (disk_file, {"region": 300, "nbytes": 4096}, "sealed against shrinking"),
        (unsealed_memfd, {"region": 300, "nbytes": 4096}, "sealed against shrinking"),
        (sealed_region, {"region": 300, "nbytes": 8192}, "holds 4096 bytes, the request says 8192"),
        (sealed_region, {"region": -1, "nbytes": 4096}, "share region must be an integer"),
        (sealed_region, {"region": 300, "nbytes": "4096"}, "share nbytes must be an integer"),
        (sealed_region, {"region": 300, "nbytes": 4096, "unshare": 5}, "unshare must be a list"),
    ],
    ids=[
        "no descriptor",
        "a pipe",
        "a file on disk",
        "unsealed",
        "wrong size",
        "bad id",
        "bad size",
        "bad unshare",
    ],
)
def test_a_bad_share_is_refused_and_its_descriptor_closed(worker_link, make, arguments, reason):
    device, raw = worker_link
    session = device.backend._connection.session
    made = None if make is None else make()
    descriptor = made.descriptor if isinstance(made, regions.ClientRegion) else made
    try:
        reply = request(raw, session, "share", [] if made is None else [descriptor], **arguments)
    finally:
        if descriptor is not None:
            os.close(descriptor)
    assert reply["ok"] is False and reason in reply["error"], reply


def test_a_descriptor_on_another_request_is_refused_and_closed(worker_link):
    device, raw = worker_link
    session = device.backend._connection.session
    region = sealed_region()
    reply = request(raw, session, "allocate", [region.descriptor], nbytes=16)  # not share
    region.shared()
    assert reply["ok"] is False and "allocate carries no file descriptor" in reply["error"]


def test_a_region_shared_twice_or_past_the_limit_is_refused(worker_link):
    device, raw = worker_link
    connection = device.backend._connection
    mapped = len(connection.regions.live) + len(connection.regions.unshared)  # the device's

    def share(identifier):
        region = sealed_region(identifier)
        reply = request(
            raw, connection.session, "share", [region.descriptor], region=identifier, nbytes=4096
        )
        region.shared()
        return reply

    identifiers = list(range(100, 100 + regions.MAX_REGIONS - mapped))
    assert all(share(identifier)["ok"] for identifier in identifiers)
    assert f"at most {regions.MAX_REGIONS} regions" in share(99)["error"]
    assert "region 100 is shared already" in share(100)["error"]
    request(raw, connection.session, "batch", group=1, ops=[], frees=[], unshare=identifiers)


@pytest.mark.parametrize("count", [2, 5])
def test_more_descriptors_are_refused_and_closed_and_the_worker_serves_on(worker_link, count):
    device, raw = worker_link
    session = device.backend._connection.session
    made = [sealed_region(identifier) for identifier in range(200, 200 + count)]
    envelope = encode({"v": PROTOCOL_VERSION, "id": 3, "session": session, "op": "share"})
    pieces = message_pieces([envelope, encode({"region": 200, "nbytes": 4096})])
    raw.connection.sendmsg(pieces, descriptor_message([region.descriptor for region in made]))
    for region in made:
        region.shared()
    if count == 2:  # room for them in the worker's buffer: the request is refused
        reply = json.loads(raw.recv_multipart()[0])
        assert "share carries one file descriptor, not 2" in reply["error"]
    else:  # more than fit: the connection is dropped (the message is cut)
        with contextlib.suppress(ConnectionResetError):
            assert raw.connection.recv(1) == b""


def test_a_shared_region_cannot_shrink_under_the_worker():
    region = sealed_region()
    with pytest.raises(PermissionError):
        os.ftruncate(region.descriptor, 0)
    region.shared()
