"""The simulated backends dx and metal: submit-time staging into a finite heap, readbacks after the
fence, and (dx) command reordering by device buffers only."""

import threading
import time

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb import errors
from luisa_nb.analysis import HazardKind
from luisa_nb.seed import SEED_FILL, expected_rows, run_seed

SIMULATED = ["dx", "metal"]


@pytest.fixture(params=SIMULATED)
def backend(request):
    return request.param


def test_simulated_backends_say_what_they_are(backend):
    info = lnb.create_device(backend).info
    assert info["name"] == backend and info["simulated"] is True
    assert info["staging"] == "submit"  # the default, as in LuisaCompute
    assert info["staging_capacity"] == 64 * 1024 * 1024
    assert info["readback"] == "fence"
    assert "simulation of LuisaCompute" in info["description"]
    assert info["simulates"].startswith("LuisaCompute ") and info["simulates"].endswith(" backend")


@pytest.mark.parametrize("staging", ["submit", "execute"])
def test_seed_on_the_simulated_backends(backend, staging):
    run = run_seed(lnb.create_device(backend, staging=staging))
    np.testing.assert_array_equal(run.z_data, expected_rows())
    if staging == "submit":
        np.testing.assert_array_equal(run.x, np.full(1024, SEED_FILL))
        assert [h.kind for h in run.trace.hazards] == [HazardKind.STALE_UPLOAD]
    else:
        np.testing.assert_array_equal(run.x, expected_rows())
        assert [h.kind for h in run.trace.hazards] == [HazardKind.LATENT_STALE_UPLOAD]


def test_downloads_land_after_the_fence(backend):
    device = lnb.create_device(backend, staging="execute")
    buffer = device.create_buffer(4, np.float32)
    host = np.zeros(4, np.float32)
    seen = []
    with lnb.trace() as trace:
        buffer.fill(5.0)
        device.default_stream.submit([buffer.copy_to_async(host), buffer.fill_async(6.0)])
        device.default_stream.add_callback(lambda: seen.append(host.copy()))
        device.default_stream.synchronize()
    download, fill = trace.commands[1:]
    assert download.host_write > fill.finished  # written once the whole list ran
    np.testing.assert_array_equal(seen[0], 5.0)


@pytest.mark.parametrize("staging", ["submit", "execute"])
def test_upload_larger_than_the_heap_is_read_in_heap_sized_pieces(backend, staging):
    capacity = 4096
    device = lnb.create_device(backend, staging=staging, staging_capacity=capacity)
    n = 3 * capacity // 4 + 10  # 3.01 heaps of float32
    buffer = device.create_buffer(n, np.float32)
    host = np.arange(n, dtype=np.float32)
    stream = device.default_stream
    opened = threading.Event()
    with lnb.trace() as trace:
        if staging == "execute":
            stream.add_callback(lambda: opened.wait(10))  # the upload runs after host changed
        stream.submit([buffer.copy_from_async(host)])
        returned = time.perf_counter_ns()
        host[:] = -1.0
        opened.set()
        stream.synchronize()
    (record,) = trace.commands
    if staging == "submit":
        # every piece was read while submit() ran, each once the one before reached the device
        np.testing.assert_array_equal(buffer.numpy(), np.arange(n, dtype=np.float32))
        pieces = record.host_pieces
        assert [piece[:2] for piece in pieces] == [
            (0, 4096),
            (4096, 4096),
            (8192, 4096),
            (12288, 40),
        ]
        times = [piece[2] for piece in pieces]
        assert times == sorted(times) and times[-1] < returned
        assert record.host_read == times[0]
        check = trace.upload(record.id)
        np.testing.assert_array_equal(check.staged, np.arange(n, dtype=np.float32))
        assert not check.stale
    else:
        np.testing.assert_array_equal(buffer.numpy(), -1.0)
        assert record.host_pieces is None and record.host_read > returned
    assert device.transfers.heap.free == capacity


def test_upload_after_download_of_the_same_memory_on_a_small_heap(backend):
    capacity = 4096
    device = lnb.create_device(backend, staging="submit", staging_capacity=capacity)
    n = 3 * capacity // 4 + 10
    buffer = device.create_buffer(n, np.float32)
    source = device.create_buffer(n, np.float32)
    source.copy_from(np.arange(n, dtype=np.float32), sync=True)  # heap free again
    host = np.full(n, -1.0, np.float32)
    with lnb.trace() as trace:
        device.default_stream.submit([source.copy_to_async(host), buffer.copy_from_async(host)])
        device.default_stream.synchronize()
    # the first heap-full was read at submit, before the readback landed after the fence;
    # submit() then waited for that run to free the heap, so later pieces read new bytes
    piece = capacity // 4
    result = buffer.numpy()
    np.testing.assert_array_equal(result[:piece], -1.0)
    np.testing.assert_array_equal(result[piece:], np.arange(piece, n, dtype=np.float32))
    stale, latent = trace.hazards
    assert stale.kind is HazardKind.STALE_UPLOAD and latent.kind is HazardKind.LATENT_STALE_UPLOAD
    assert (stale.host.nbytes, latent.host.nbytes) == (capacity, 4 * n - capacity)
    check = trace.upload(trace.commands[1].id)
    np.testing.assert_array_equal(check.differing_indices, np.arange(piece))


def test_submissions_wait_for_heap_space(backend):
    capacity = 4096
    device = lnb.create_device(backend, staging="submit", staging_capacity=capacity)
    buffers = [device.create_buffer(512, np.float32) for _ in range(6)]  # 2 KiB each
    data = [np.full(512, i, np.float32) for i in range(6)]
    stream = device.default_stream
    stream.submit([b.copy_from_async(d) for b, d in zip(buffers, data, strict=True)])
    stream.synchronize()
    for index, buffer in enumerate(buffers):
        np.testing.assert_array_equal(buffer.numpy(), index)
    assert device.transfers.heap.free == capacity


def test_bad_capacity_is_rejected(backend):
    with pytest.raises(errors.ConfigurationError, match="staging_capacity"):
        lnb.create_device(backend, staging_capacity=0)
    with pytest.raises(errors.ConfigurationError, match="does not take"):
        lnb.create_device(backend, colour="blue")


def test_dx_reordering_is_explained():
    device = lnb.create_device("dx", staging="execute", reorder=True)
    assert device.info["reorder"] is True
    a = device.create_buffer(8, np.float32)
    b = device.create_buffer(8, np.float32)
    h1 = np.arange(8, dtype=np.float32)
    h2 = np.full(8, -1.0, np.float32)
    with lnb.trace() as trace:
        device.default_stream.submit(
            [a.copy_from_async(h1), a.copy_to_async(h2), b.copy_from_async(h2)]
        )
        device.default_stream.synchronize()
    np.testing.assert_array_equal(b.numpy(), -1.0)  # stale even under staging="execute"
    (hazard,) = trace.hazards
    _, download, upload = trace.commands
    assert hazard.kind is HazardKind.STALE_UPLOAD
    assert hazard.command_ids == (download.id, upload.id)
    assert (
        "reorder" in hazard.message and f"ran #{upload.id} before #{download.id}" in hazard.message
    )
    assert "reordering off" in hazard.fix
    assert upload.started < download.started and upload.index > download.index


def test_dx_reordering_keeps_device_dependencies():
    device = lnb.create_device("dx", staging="execute", reorder=True)
    a = device.create_buffer(4, np.float32)
    out = np.zeros(4, np.float32)
    stream = device.default_stream
    stream.submit([a.fill_async(1.0), a.fill_async(2.0), a.copy_to_async(out)])
    stream.synchronize()
    np.testing.assert_array_equal(out, 2.0)
