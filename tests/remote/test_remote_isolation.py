"""Each session runs in a worker process of its own: a crash ends that session only."""

import json
import os
import signal

import numpy as np
import pytest

zmq = pytest.importorskip("zmq")

import luisa_nb as lnb  # noqa: E402
from luisa_nb.backends.base import OperationFailed  # noqa: E402
from luisa_nb.errors import CommandFailedError, KernelError, RemoteError  # noqa: E402
from luisa_nb.remote.protocol import PROTOCOL_VERSION, encode  # noqa: E402

from .helpers import TOKEN, ThreadServer, wait_gone  # noqa: E402


class HandWrittenKernel:
    """A compiled-C executable as the remote backend sees it, with C source of our own
    (it ignores its arguments, so it does not depend on the argument layout)."""

    mode = "c"
    buffer_parameters = ()
    scalar_parameters = ()

    def __init__(self, name: str, body: str) -> None:
        self.name = name
        self.source = f"void lnb_{name}_launch(const char *arguments, void *launch) {{ {body} }}\n"


def connect(server, direct=True):
    return lnb.create_device(server.address, token=TOKEN, direct=direct)


def assert_works(device, seed: float):
    """Upload, copy, fill and download on ``device`` give what numpy gives."""
    data = np.arange(1000, dtype=np.float32) * seed
    source = device.create_buffer(1000, np.float32)
    target = device.create_buffer(1000, np.float32)
    source.copy_from(data)
    source.copy_to_buffer(target)
    target.view(0, 10).fill(-seed)
    expected = data.copy()
    expected[:10] = -seed
    assert np.array_equal(target.numpy(), expected)


def test_a_kernel_that_crashes_ends_its_own_session_only(thread_server, direct):
    victim, bystander = connect(thread_server, direct), connect(thread_server)
    data = np.arange(4096, dtype=np.float64)
    kept = bystander.create_buffer(data.size, np.float64)
    kept.copy_from(data)
    worker = victim.info["server_worker_pid"]
    assert worker != bystander.info["server_worker_pid"]
    backend = victim.backend
    backend.dispatch(HandWrittenKernel("null_write", "*(volatile int *)0 = 1;"), (1, 1, 1), [], [])
    with pytest.raises(RemoteError) as caught:
        backend.flush()
    message = str(caught.value)
    assert f"the worker process (pid {worker}) that held this session's buffers" in message
    assert "was killed by signal SIGSEGV (a crash" in message
    assert "create a new device" in message
    assert wait_gone(worker)
    with pytest.raises(RemoteError, match="SIGSEGV"):
        victim.create_buffer(4, np.float32)  # the session stays ended
    assert np.array_equal(kept.numpy(), data)  # the other session lost nothing
    assert_works(bystander, 3.0)
    assert_works(connect(thread_server), 4.0)  # and new sessions start
    victim.backend.close()
    bystander.backend.close()


def test_a_killed_worker_fails_the_next_synchronize_of_its_device_only(thread_server, direct):
    victim, bystander = connect(thread_server, direct), connect(thread_server)
    buffer = victim.create_buffer(64, np.float32)
    buffer.fill(1.0)
    victim.synchronize()
    worker = victim.info["server_worker_pid"]
    os.kill(worker, signal.SIGKILL)
    assert wait_gone(worker)
    buffer.fill(2.0)
    with pytest.raises(CommandFailedError) as caught:
        victim.synchronize()
    cause = caught.value.__cause__
    assert isinstance(cause, RemoteError) and isinstance(cause, OperationFailed)
    assert f"(pid {worker})" in str(cause) and "was killed by signal SIGKILL" in str(cause)
    with pytest.raises(RemoteError, match="SIGKILL"):
        victim.backend.allocate(8)
    assert_works(bystander, 5.0)
    victim.backend.close()
    bystander.backend.close()


def test_a_kernel_error_fails_its_operation_and_the_session_goes_on(thread_server):
    device = connect(thread_server)
    backend = device.backend
    span = backend.dispatch(HandWrittenKernel("broken", "this is not C"), (1, 1, 1), [], [])
    with pytest.raises(OperationFailed) as caught:
        backend.flush()
    assert not isinstance(caught.value, RemoteError)  # the session was not lost
    assert caught.value.span is span
    assert str(caught.value).startswith("KernelBuildError: kernel 'lnb_broken': the C compiler")
    assert_works(device, 6.0)
    device.backend.close()


class OutOfRange(KernelError, IndexError):
    """Stands for whatever KernelError a kernel launch raises (e.g. KernelIndexError)."""


class RaisingKernel:
    """What ``ServedKernel`` becomes in the next test: its launch raises."""

    mode = "c"

    def __init__(self, definition, cancel):
        self.name = definition["name"]
        self.buffer_dtypes = []
        self.scalar_count = 0

    def launch(self, dims, buffers, scalars, cancel=None):
        raise OutOfRange("index 70 is outside buffer y of 64 elements (thread 70)")


def test_an_exception_from_a_launch_is_the_error_of_that_operation(monkeypatch):
    from luisa_nb.backends.cpu import CpuBackend
    from luisa_nb.remote import worker as worker_module
    from luisa_nb.remote.protocol import kernel_key

    monkeypatch.setattr(worker_module, "ServedKernel", RaisingKernel)
    worker = worker_module.SessionWorker(CpuBackend())
    definition = {"name": "lnb_k", "source": "", "buffers": [], "scalars": []}
    dispatch = ["dispatch", kernel_key(definition), [1, 1, 1], [], [], definition]
    envelope = encode({"v": PROTOCOL_VERSION, "id": 4, "session": "00" * 8, "op": "batch"})

    def batch(group, ops):
        arguments = zmq.Frame(encode({"group": group, "ops": ops, "frees": []}))
        frames = worker.answer(b"peer", memoryview(envelope), [arguments])
        return json.loads(frames[0])

    reply = batch(1, [dispatch])
    assert reply["ok"] is True and reply["done"] == 0 and reply["failed"] == 0
    assert reply["error"] == "OutOfRange: index 70 is outside buffer y of 64 elements (thread 70)"
    allocate = zmq.Frame(encode({"nbytes": 8}))
    allocation = worker.answer(
        b"peer", memoryview(envelope.replace(b"batch", b"allocate")), [allocate]
    )
    handle = json.loads(allocation[0])["handle"]
    reply = batch(2, [["fill", handle, 0, 8, "<i4", "07000000"]])
    assert reply["done"] == 1 and "failed" not in reply


def test_each_session_has_a_worker_until_it_ends_and_their_number_is_bounded():
    server = ThreadServer(max_sessions=2)
    try:
        first, second = connect(server), connect(server)
        workers = [first.info["server_worker_pid"], second.info["server_worker_pid"]]
        with pytest.raises(RemoteError, match=r"serves 2 sessions already \(--max-sessions\)"):
            connect(server)
        first.backend.close()
        assert wait_gone(workers[0])
        third = connect(server)
        assert_works(third, 7.0)
        assert_works(second, 8.0)
    finally:
        server.stop()
    assert wait_gone(workers[1]) and wait_gone(third.info["server_worker_pid"])
    second.backend.close()
    third.backend.close()
