"""A direct client places its large buffers in memory shared with its session's worker
(a sealed memfd sent with ``allocate``) when the server's device memory is host memory,
and copies a large download or upload between its own mapping and the user's bytes once
the work before it has finished: one copy. The bytes, their order among the other host
reads and writes and the hazards a trace finds are those of the cpu backend; the worker
maps only memory that passes its checks and closes every descriptor it does not keep."""

import fcntl
import gc
import json
import os

import numpy as np
import pytest

zmq = pytest.importorskip("zmq")

import luisa_nb as lnb  # noqa: E402
from luisa_nb.analysis import HazardKind  # noqa: E402
from luisa_nb.backends.cpu import CpuBackend  # noqa: E402
from luisa_nb.backends.remote import RemoteBackend  # noqa: E402
from luisa_nb.errors import CommandFailedError  # noqa: E402
from luisa_nb.recording.records import Status  # noqa: E402
from luisa_nb.remote import regions  # noqa: E402
from luisa_nb.remote.protocol import PROTOCOL_VERSION, encode  # noqa: E402
from luisa_nb.remote.worker import SessionWorker  # noqa: E402
from luisa_nb.runtime.host import HOST_MEMORY  # noqa: E402
from luisa_nb.seed import expected_rows, run_seed  # noqa: E402

from .helpers import (  # noqa: E402
    TOKEN,
    RawClient,
    disk_file,
    pipe_end,
    request,
    unsealed_memfd,
)

pytestmark = pytest.mark.skipif(not regions.AVAILABLE, reason="needs memfd_create (Linux)")
SHARED = regions.SHARED_BUFFER_BYTES
FLOATS = SHARED // 4  # the elements of the smallest shared buffer
TRANSFERS = ("download", "readback")


def buffer_mappings(pid: int) -> int:
    """How many mappings of shared buffer memory process ``pid`` holds."""
    with open(f"/proc/{pid}/maps") as maps:
        return sum("luisa_nb-buffer" in line for line in maps)


@pytest.mark.parametrize(
    ("elements", "start", "stop"),
    [
        (FLOATS - 1, 0, FLOATS - 1),  # a buffer just too small to share
        (FLOATS, 0, FLOATS),  # the smallest shared buffer, whole
        (FLOATS + 1, 2, FLOATS + 1),  # a shared buffer, one element short of a mapped download
        (FLOATS + 7, 3, FLOATS + 3),  # the smallest mapped download, at an offset
        ((4 << 20) // 4 + 1, 0, (4 << 20) // 4 + 1),  # a window part (the chunk) and a float
        (((9 << 20) + 12) // 4, 5, ((9 << 20) + 12) // 4 - 2),  # chunks, window, offsets
    ],
)
def test_downloaded_bytes_are_the_devices(
    thread_server, staging, direct, sent_operations, elements, start, stop
):
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging, direct=direct)
    data = np.random.default_rng(elements).random(elements, dtype=np.float32)
    buffer = device.create_buffer(elements, np.float32)
    buffer.copy_from(data)
    sent_operations.clear()
    back = np.zeros(stop - start, np.float32)
    buffer.view(start, stop).copy_to(back, sync=True)
    assert np.array_equal(back, data[start:stop])
    shared = buffer.allocation.mapped is not None
    assert shared is (direct and elements * 4 >= SHARED)
    mapped = shared and back.nbytes >= SHARED
    assert (not any(name in TRANSFERS for name in sent_operations)) is mapped
    device.backend.close()


@pytest.mark.parametrize(
    ("elements", "start", "stop"),
    [
        (FLOATS - 1, 0, FLOATS - 1),  # a buffer just too small to share
        (FLOATS + 1, 2, FLOATS + 1),  # a shared buffer, one element short of a mapped upload
        (FLOATS + 7, 3, FLOATS + 3),  # the smallest mapped upload, at an offset
        (((9 << 20) + 12) // 4, 5, ((9 << 20) + 12) // 4 - 2),  # chunks, window, offsets
    ],
)
def test_uploaded_bytes_reach_the_worker(
    thread_server, staging, direct, sent_operations, elements, start, stop
):
    """The worker sees them: it copies both ends into a buffer too small to share, which
    travels back as an operation."""
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging, direct=direct)
    data = np.random.default_rng(elements).random(stop - start, dtype=np.float32)
    buffer = device.create_buffer(elements, np.float32)
    buffer.fill(7.0)
    ends = device.create_buffer(4 * 16, np.float32)
    sent_operations.clear()
    stream = device.default_stream
    stream.submit(
        [
            buffer.view(start, stop).copy_from_async(data),
            buffer.view(start, start + 16).copy_to_buffer_async(ends.view(0, 16)),
            buffer.view(stop - 16, stop).copy_to_buffer_async(ends.view(16, 32)),
        ]
    )
    stream.synchronize()
    mapped = buffer.allocation.mapped is not None and data.nbytes >= SHARED
    assert ("upload" not in sent_operations) is mapped
    seen = ends.numpy()
    assert np.array_equal(seen[:16], data[:16]) and np.array_equal(seen[16:32], data[-16:])
    assert not seen[32:].any()
    whole = buffer.numpy()
    assert np.all(whole[:start] == 7.0) and np.all(whole[stop:] == 7.0)
    assert np.array_equal(whole[start:stop], data)
    device.backend.close()


def test_an_upload_waits_for_the_commands_before_it(thread_server, staging, direct):
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging, direct=direct)
    source, target = (device.create_buffer(2 * FLOATS, np.float32) for _ in range(2))
    source.fill(1.0)
    before, after = np.zeros(2 * FLOATS, np.float32), np.zeros(2 * FLOATS, np.float32)
    stream = device.default_stream
    stream.submit(
        [
            source.copy_to_buffer_async(target),  # queued: runs before the upload
            source.copy_from_async(np.full(2 * FLOATS, 2.0, np.float32)),
            target.copy_to_async(before),
            source.copy_to_async(after),
        ]
    )
    stream.synchronize()
    assert np.all(before == 1.0) and np.all(after == 2.0)
    device.backend.close()


def test_no_flush_before_a_mapped_transfer_holds_the_host_lock(thread_server, staging, monkeypatch):
    """A flush waits for the worker; the lock every host read and write takes is free
    meanwhile."""
    held = []
    flush = RemoteBackend.flush

    def noting(backend):
        held.append(HOST_MEMORY.locked())
        return flush(backend)

    monkeypatch.setattr(RemoteBackend, "flush", noting)
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging)
    buffer = device.create_buffer(FLOATS, np.float32)
    back = np.zeros(FLOATS, np.float32)
    stream = device.default_stream
    stream.submit(
        [
            buffer.fill_async(1.0),
            buffer.copy_from_async(np.full(FLOATS, 2.0, np.float32)),
            buffer.copy_to_async(back),
        ]
    )
    stream.synchronize()
    assert np.all(back == 2.0) and len(held) >= 2 and not any(held)
    device.backend.close()


def test_a_failure_before_a_mapped_upload_leaves_the_buffer_as_it_was(thread_server, staging):
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging)
    buffer = device.create_buffer(2 * FLOATS, np.float32)
    buffer.fill(4.0)
    bad = buffer.fill_async(5.0)
    bad.memory = bad.memory._replace(offset=1 << 30)  # outside the buffer on the server
    stream = device.default_stream
    with lnb.trace() as trace:
        stream.submit([bad, buffer.copy_from_async(np.ones(2 * FLOATS, np.float32))])
        with pytest.raises(CommandFailedError):
            stream.synchronize()
    assert [record.status for record in trace.commands] == [Status.FAILED, Status.SKIPPED]
    assert np.all(buffer.numpy() == 4.0)
    device.backend.close()


def test_a_device_of_shared_buffers_only_leaves_no_window_file(thread_server):
    device = lnb.create_device(thread_server.address, token=TOKEN)
    buffer = device.create_buffer(FLOATS, np.float32)
    buffer.copy_from(np.ones(FLOATS, np.float32))
    assert np.all(buffer.numpy() == 1.0)
    assert not os.path.exists(device.backend._connection.hello["local"]["window"])
    device.backend.close()


def test_several_downloads_in_one_submission_keep_stream_order(thread_server, staging, direct):
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging, direct=direct)
    large = device.create_buffer(3 * FLOATS, np.float32)
    first, second = np.zeros(3 * FLOATS, np.float32), np.zeros(3 * FLOATS, np.float32)
    small = np.zeros(16, np.float32)
    stream = device.default_stream
    stream.submit(
        [
            large.fill_async(1.0),
            large.copy_to_async(second),  # mapped when direct
            large.fill_async(2.0),
            large.view(0, 16).copy_to_async(first[:16]),  # a readback: lands before the next
            large.view(0, 16).copy_to_async(small),
            large.copy_to_async(second),  # the later write into `second` wins
            large.view(0, FLOATS).fill_async(3.0),
            large.copy_to_async(first),  # after the readback into its first 16 floats
        ]
    )
    stream.synchronize()
    assert np.all(first[:FLOATS] == 3.0) and np.all(first[FLOATS:] == 2.0)
    assert np.all(second == 2.0) and np.all(small == 2.0)
    device.backend.close()


def test_more_shared_buffers_than_readback_regions_in_one_submission(
    thread_server, staging, sent_operations
):
    """Buffers in shared memory are not readback regions: no limit of those applies."""
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging)
    count = regions.MAX_REGIONS + 2
    buffers = [device.create_buffer(FLOATS, np.float32) for _ in range(count)]
    data = [np.full(FLOATS, index, np.float32) for index in range(count)]
    back = [np.zeros(FLOATS, np.float32) for _ in range(count)]
    stream = device.default_stream
    stream.submit([b.copy_from_async(d) for b, d in zip(buffers, data, strict=True)])
    stream.submit([b.copy_to_async(h) for b, h in zip(buffers, back, strict=True)])
    stream.synchronize()
    assert all(np.array_equal(h, d) for h, d in zip(back, data, strict=True))
    assert all(b.allocation.mapped is not None for b in buffers)
    assert not any(name in (*TRANSFERS, "upload") for name in sent_operations)
    device.backend.close()


def test_a_download_then_an_upload_of_one_array_finds_the_hazards_of_cpu(
    thread_server, staging, direct, sent_operations
):
    """The program of issue #143 on buffers large enough to share: the same rows and the
    same hazards, at the same commands, as on the cpu backend."""
    size = 3 * FLOATS
    runs = {}
    for name in ("remote", "cpu"):
        if name == "cpu":
            device = lnb.create_device("cpu", staging=staging)
        else:
            device = lnb.create_device(
                thread_server.address, token=TOKEN, staging=staging, direct=direct
            )
        runs[name] = run_seed(device, size=size)
        if name == "remote":
            assert ("download" in sent_operations) is not direct
            device.backend.close()
    remote, cpu = runs["remote"], runs["cpu"]
    assert np.array_equal(remote.z_data, cpu.z_data) and np.array_equal(remote.x, cpu.x)
    assert np.array_equal(remote.z_data, expected_rows(size))

    def hazards(run):
        found = []
        for hazard in run.trace.hazards:
            commands = [run.trace.command(i) for i in hazard.command_ids]
            found.append((hazard.kind, [(c.kind.value, c.index) for c in commands]))
        return found

    assert hazards(remote) == hazards(cpu)
    expected = HazardKind.STALE_UPLOAD if staging == "submit" else HazardKind.LATENT_STALE_UPLOAD
    assert [kind for kind, _ in hazards(remote)] == [expected]


def test_a_failure_before_a_mapped_download_skips_it_and_lands_the_earlier_ones(
    thread_server, staging
):
    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging)
    buffer = device.create_buffer(2 * FLOATS, np.float32)
    buffer.fill(4.0)
    early, late = np.zeros(2 * FLOATS, np.float32), np.zeros(2 * FLOATS, np.float32)
    small = np.zeros(8, np.float32)
    bad = buffer.fill_async(5.0)
    bad.memory = bad.memory._replace(offset=1 << 30)  # outside the buffer on the server
    stream = device.default_stream
    with lnb.trace() as trace:
        stream.submit(
            [
                buffer.copy_to_async(early),  # mapped
                buffer.view(0, 8).copy_to_async(small),  # a readback, pending
                bad,
                buffer.copy_to_async(late),  # its flush finds the failure
            ]
        )
        with pytest.raises(CommandFailedError) as caught:
            stream.synchronize()
    assert caught.value.command_id == bad.id and "outside buffer handle" in str(caught.value)
    statuses = [record.status for record in trace.commands]
    assert statuses == [Status.OK, Status.OK, Status.FAILED, Status.SKIPPED]
    assert np.all(early == 4.0) and np.all(small == 4.0) and not late.any()
    assert np.all(buffer.numpy() == 4.0)  # the stream keeps working
    device.backend.close()


def test_a_mapped_download_is_recorded_when_it_writes_the_host_array(thread_server):
    device = lnb.create_device(thread_server.address, token=TOKEN)
    buffer = device.create_buffer(FLOATS, np.float32)
    buffer.fill(6.0)
    back = np.zeros(FLOATS, np.float32)
    with lnb.trace() as trace:
        buffer.copy_to(back, sync=True)
    (record,) = [r for r in trace.commands if r.kind.value == "download"]
    assert record.status is Status.OK and np.all(back == 6.0)
    assert record.device_started is not None
    assert record.device_started <= record.device_finished <= trace.syncs[-1].completed
    device.backend.close()


def test_a_freed_buffer_leaves_no_mapping_in_either_process(thread_server):
    device = lnb.create_device(thread_server.address, token=TOKEN)
    worker = device.info["server_worker_pid"]
    gc.collect()  # the buffers of earlier tests
    before = buffer_mappings(worker), buffer_mappings(os.getpid())
    buffer = device.create_buffer(2 * FLOATS, np.float32)
    buffer.fill(1.0)
    device.default_stream.synchronize()
    assert buffer_mappings(worker) == before[0] + 1
    assert buffer_mappings(os.getpid()) == before[1] + 1
    del buffer
    gc.collect()
    assert buffer_mappings(os.getpid()) == before[1]
    device.create_buffer(4, np.float32).fill(0.0)  # its batch frees the handle
    device.default_stream.synchronize()
    assert buffer_mappings(worker) == before[0]
    device.backend.close()


def test_without_memory_to_share_a_buffer_is_allocated_as_before(thread_server, monkeypatch):
    monkeypatch.setattr(regions.os, "memfd_create", no_descriptors_left)
    device = lnb.create_device(thread_server.address, token=TOKEN)
    buffer = device.create_buffer(FLOATS, np.float32)
    buffer.fill(3.0)
    assert buffer.allocation.mapped is None and np.all(buffer.numpy() == 3.0)
    device.backend.close()


def no_descriptors_left(*arguments):
    raise OSError(24, "Too many open files")


def test_memory_the_worker_refuses_leaves_a_buffer_of_its_own(thread_server, monkeypatch):
    monkeypatch.setattr(regions.fcntl, "fcntl", lambda *arguments: 0)  # no seals
    device = lnb.create_device(thread_server.address, token=TOKEN)
    buffer = device.create_buffer(FLOATS, np.float32)
    buffer.fill(3.0)
    assert buffer.allocation.mapped is None and np.all(buffer.numpy() == 3.0)
    device.backend.close()


def test_a_buffer_over_the_hosts_memory_fails_as_without_shared_memory(thread_server):
    """A memory file is sized without the check the OS makes of an allocation, so such a
    buffer is not placed in one: it fails (here) as a plain allocation does."""
    device = lnb.create_device(thread_server.address, token=TOKEN)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with pytest.raises(lnb.LuisaNbError, match="cannot allocate"):
        device.create_buffer(2 * memory // 4, np.float32)
    assert np.all(device.create_buffer(FLOATS, np.float32).numpy() == 0.0)
    device.backend.close()


# -- a hostile client on the worker's socket ---------------------------------------------


def sealed(nbytes=4096):
    """A sealed memfd's descriptor (the caller closes it) and its bytes mapped here."""
    return regions.sealed_memory("test-buffer", nbytes)


def test_a_shared_allocation_is_device_memory_the_client_sees(worker_link):
    device, raw = worker_link
    session = device.backend._connection.session
    worker = device.info["server_worker_pid"]
    mappings = buffer_mappings(worker)
    descriptor, memory = regions.sealed_memory("luisa_nb-buffer-test", 8192)
    try:
        reply = request(raw, session, "allocate", [descriptor], nbytes=8192, shared=True)
    finally:
        os.close(descriptor)
    assert reply["ok"] is True, reply
    handle = reply["handle"]
    element = np.float32(9.5).tobytes().hex()
    fill = ["fill", handle, 4096, 4096, "<f4", element]
    reply = request(raw, session, "batch", group=1, ops=[fill], frees=[])
    assert reply["done"] == 1, reply
    assert np.all(memory[4096:].view(np.float32) == 9.5) and not memory[:4096].any()
    assert buffer_mappings(worker) == mappings + 1
    request(raw, session, "batch", group=2, ops=[], frees=[handle])
    assert buffer_mappings(worker) == mappings


def test_a_shared_allocate_over_the_hosts_memory_is_refused(worker_link):
    device, raw = worker_link
    session = device.backend._connection.session
    nbytes = os.sysconf("SC_PAGE_SIZE") * (os.sysconf("SC_PHYS_PAGES") + 1)
    descriptor, _ = regions.sealed_memory("test-huge", nbytes)  # no page is touched
    try:
        reply = request(raw, session, "allocate", [descriptor], nbytes=nbytes, shared=True)
    finally:
        os.close(descriptor)
    assert reply["ok"] is False and f"cannot allocate {nbytes} bytes" in reply["error"]
    assert "more than this host's memory" in reply["error"]


def write_sealed(nbytes=4096):
    """A memfd sealed against shrinking and against writes: the worker cannot write it."""
    descriptor = os.memfd_create("write-sealed", os.MFD_ALLOW_SEALING)
    os.ftruncate(descriptor, nbytes)
    fcntl.fcntl(descriptor, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_WRITE)
    return descriptor


def two_sealed():
    return [sealed()[0], sealed()[0]]


@pytest.mark.parametrize(
    ("make", "arguments", "reason"),
    [
        (list, {"nbytes": 4096, "shared": True}, "carries one file descriptor, not 0"),
        (two_sealed, {"nbytes": 4096, "shared": True}, "carries one file descriptor, not 2"),
        (pipe_end, {"nbytes": 4096, "shared": True}, "must be memory (memfd), not another file"),
        (disk_file, {"nbytes": 4096, "shared": True}, "sealed against shrinking"),
        (unsealed_memfd, {"nbytes": 4096, "shared": True}, "sealed against shrinking"),
        (sealed, {"nbytes": 8192, "shared": True}, "holds 4096 bytes, the request says 8192"),
        (sealed, {"nbytes": 0, "shared": True}, "the request says 0"),
        (write_sealed, {"nbytes": 4096, "shared": True}, "cannot map the shared region"),
        (sealed, {"nbytes": 4096, "shared": 1}, "allocate shared must be true or false"),
        (sealed, {"nbytes": "4096", "shared": True}, "allocate nbytes must be an integer"),
        (sealed, {"nbytes": 4096}, "allocate carries no file descriptor unless it is shared"),
    ],
    ids=[
        "no descriptor",
        "two descriptors",
        "a pipe",
        "a file on disk",
        "unsealed",
        "wrong size",
        "empty",
        "sealed against writes",
        "shared not a bool",
        "bad size",
        "not shared",
    ],
)
def test_a_bad_shared_allocate_is_refused_and_its_descriptors_closed(
    worker_link, make, arguments, reason
):
    device, raw = worker_link
    session = device.backend._connection.session
    made = make()
    descriptors = made if type(made) is list else [made[0] if type(made) is tuple else made]
    try:
        reply = request(raw, session, "allocate", descriptors, **arguments)
    finally:
        for descriptor in descriptors:
            os.close(descriptor)
    assert reply["ok"] is False and reason in reply["error"], reply


def test_a_shared_allocate_through_the_supervisor_is_refused(thread_server):
    client = RawClient(thread_server.endpoint, thread_server.token)
    try:
        header, _ = client.ask(client.request("allocate", nbytes=4096, shared=True))
    finally:
        client.close()
    assert header["ok"] is False
    assert "a shared allocate carries one file descriptor, not 0" in header["error"]


def test_a_backend_with_device_memory_refuses_a_shared_allocate():
    class DeviceMemoryBackend(CpuBackend):
        device_memory_is_host = False

    worker = SessionWorker(DeviceMemoryBackend())
    descriptor, _ = sealed()
    envelope = encode({"v": PROTOCOL_VERSION, "id": 4, "session": "ab" * 8, "op": "allocate"})
    passed = [descriptor]
    try:
        frames = worker.answer(
            b"p", envelope, [encode({"nbytes": 4096, "shared": True})], descriptors=passed
        )
    finally:
        regions.close_all(passed)
    reply = json.loads(bytes(frames[0]))
    assert reply["ok"] is False and "keeps buffers in device memory" in reply["error"]
    assert not worker.allocations
