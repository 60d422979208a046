"""The backend hook for memory read at submit: ``Backend.snapshot_memory``. Under
``submit`` the runtime reads each upload into the memory its backend gives, while
``submit()`` runs, and the upload receives that very array; under ``execute`` the hook is
never asked."""

from __future__ import annotations

import threading
import time

import numpy as np

import luisa_nb as lnb
from luisa_nb.backends.cpu import CpuBackend
from luisa_nb.runtime.device import Device


class SnapshotLog(CpuBackend):
    """The cpu backend, logging each snapshot it gives and each array uploads receive."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, int, np.ndarray]] = []  # (what, clock, array)

    def snapshot_memory(self, nbytes: int) -> np.ndarray:
        memory = np.full(nbytes, 0xA5, np.uint8)  # not zeros: the read must fill it
        self.events.append(("snapshot", time.perf_counter_ns(), memory))
        return memory

    def upload(self, allocation, offset, data):
        self.events.append(("upload", time.perf_counter_ns(), data))
        return super().upload(allocation, offset, data)


def _two_uploads(staging: str):
    backend = SnapshotLog()
    device = Device(backend, staging=staging)
    a, b = device.create_buffer(16, np.float32), device.create_buffer(8, np.int32)
    host_a, host_b = np.arange(16, dtype=np.float32), np.arange(8, dtype=np.int32) * 3
    stream = device.default_stream
    opened = threading.Event()
    with lnb.trace() as trace:
        stream.add_callback(lambda: opened.wait(10))  # the uploads run after host changed
        submitted = time.perf_counter_ns()
        stream.submit([a.copy_from_async(host_a), b.copy_from_async(host_b)])
        returned = time.perf_counter_ns()
        host_a[:] = -1.0
        opened.set()
        stream.synchronize()
    return backend, trace, (submitted, returned), (a.numpy(), b.numpy())


def test_under_submit_uploads_are_read_into_the_backends_memory_at_submit():
    backend, trace, (submitted, returned), (a, b) = _two_uploads("submit")
    kinds = [what for what, _, _ in backend.events]
    assert kinds == ["snapshot", "snapshot", "upload", "upload"]
    snapshots = [array for what, _, array in backend.events if what == "snapshot"]
    uploaded = [array for what, _, array in backend.events if what == "upload"]
    assert all(s is u for s, u in zip(snapshots, uploaded, strict=True))  # no second copy
    assert [s.nbytes for s in snapshots] == [64, 32]
    np.testing.assert_array_equal(a, np.arange(16, dtype=np.float32))  # the bytes at submit
    np.testing.assert_array_equal(b, np.arange(8, dtype=np.int32) * 3)
    given = [clock for what, clock, _ in backend.events if what == "snapshot"]
    reads = [record.host_read for record in trace.commands]
    # each snapshot is given, then read (the trace's host read), all before submit returns
    assert submitted <= given[0] <= reads[0] <= given[1] <= reads[1] <= returned


def test_under_execute_the_hook_is_not_asked():
    backend, trace, (_, returned), (a, b) = _two_uploads("execute")
    assert [what for what, _, _ in backend.events] == ["upload", "upload"]
    np.testing.assert_array_equal(a, -1.0)  # read when it ran, after the host changed
    np.testing.assert_array_equal(b, np.arange(8, dtype=np.int32) * 3)
    assert all(record.host_read > returned for record in trace.commands)


def test_the_default_hook_gives_numpy_memory():
    memory = CpuBackend().snapshot_memory(12)
    assert type(memory) is np.ndarray and memory.dtype == np.uint8 and memory.shape == (12,)


def test_a_backend_with_a_staging_heap_reads_into_the_heap(monkeypatch):
    from luisa_nb.backends.dx import DxBackend

    def refuse(self, nbytes):
        raise AssertionError("a backend with a staging heap was asked for snapshot memory")

    monkeypatch.setattr(DxBackend, "snapshot_memory", refuse)
    device = lnb.create_device("dx", staging="submit")
    try:
        buffer = device.create_buffer(3, np.float32)
        buffer.copy_from(np.array([1.0, 2.0, 3.0], np.float32))
        np.testing.assert_array_equal(buffer.numpy(), [1.0, 2.0, 3.0])
    finally:
        device.close()
