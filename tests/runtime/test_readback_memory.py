"""Readback memory of a fence backend: a stream hands its downloads the memory of its
largest recent run again (up to ``SPARE_READBACK_BYTES``), so only the first runs touch
new pages; every download still lands its own bytes, also when a run holds several."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.backends.dx import DxBackend
from luisa_nb.runtime import staging
from luisa_nb.runtime.device import Device


class ReadbackLog(DxBackend):
    """The dx model (a fence backend), logging the address of each download's memory."""

    def __init__(self) -> None:
        super().__init__()
        self.addresses: list[int] = []

    def download(self, allocation, offset, out):
        self.addresses.append(out.ctypes.data)
        return super().download(allocation, offset, out)


@pytest.fixture
def device():
    backend = ReadbackLog()
    device = Device(backend, staging="execute")
    yield device, backend
    device.close()


def test_runs_reuse_the_readback_memory_of_earlier_runs_and_land_their_own_bytes(device):
    device, backend = device
    data = np.arange(4096, dtype=np.float32)
    buffer = device.create_buffer(data.size, np.float32)
    buffer.copy_from(data)
    stream = device.default_stream
    for round_ in range(3):
        halves = np.zeros(2048, np.float32), np.zeros(2048, np.float32)
        stream.submit(  # one run, two downloads
            [
                buffer.view(0, 2048).copy_to_async(halves[0]),
                buffer.view(2048, 4096).copy_to_async(halves[1]),
            ]
        )
        stream.synchronize()
        assert np.array_equal(np.concatenate(halves), data), round_
        whole = np.zeros_like(data)
        buffer.copy_to(whole, sync=True)
        assert np.array_equal(whole, data), round_
    # after the first run, downloads land in the spare memory its readbacks needed
    spare = backend.addresses[2]
    assert set(backend.addresses[2:]) == {spare, spare + 8192}


def test_a_run_larger_than_the_spare_limit_gets_new_memory_that_is_not_kept(device, monkeypatch):
    device, _ = device
    monkeypatch.setattr(staging, "SPARE_READBACK_BYTES", 1024)
    data = np.arange(1024, dtype=np.int32)  # 4 KiB: more than the limit
    buffer = device.create_buffer(data.size, np.int32)
    buffer.copy_from(data)
    for _ in range(3):
        out = np.zeros_like(data)
        buffer.copy_to(out, sync=True)
        assert np.array_equal(out, data)
    assert device.default_stream._executor.transfers.spare is None


def test_a_runs_own_readback_memory_is_kept_as_the_spare(device):
    device, backend = device
    data = np.arange(4096, dtype=np.float32)
    buffer = device.create_buffer(data.size, np.float32)
    buffer.copy_from(data)
    for round_ in range(3):
        whole = np.zeros_like(data)
        buffer.copy_to(whole, sync=True)
        assert np.array_equal(whole, data), round_
    # the first download's memory, already mapped, takes every later one
    assert len(set(backend.addresses)) == 1
