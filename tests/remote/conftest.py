import json
import os
import subprocess
import sys
import time

import pytest

from .helpers import (
    TOKEN,
    StreamSocket,
    ThreadServer,
    open_descriptors,
    server_children,
    serves,
    worker_processes,
)


@pytest.fixture(autouse=True, scope="session")
def _no_orphan_servers():
    """Every server and worker process a test started is gone when the tests end."""
    yield
    import gc

    gc.collect()
    assert server_children() == []
    assert worker_processes(os.getpid()) == []


@pytest.fixture(scope="session")
def thread_server():
    """A server for the whole session; payloads above 4 MiB are refused, so uploads
    above 4 MiB travel in several chunks."""
    pytest.importorskip("zmq")
    server = ThreadServer(max_message_bytes=4 << 20)
    yield server
    server.stop()


@pytest.fixture(params=["submit", "execute"])
def staging(request):
    return request.param


@pytest.fixture(params=[True, False], ids=["direct", "relayed"])
def direct(request):
    """Whether a device on this host talks to its worker directly (the default) or
    through the supervisor, as one on another host does."""
    return request.param


@pytest.fixture
def device(thread_server, staging, direct):
    import luisa_nb as lnb

    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging, direct=direct)
    assert device.info["direct"] is direct
    yield device
    device.backend.close()


@pytest.fixture(scope="session")
def process_server():
    """A server process with a 1 MiB payload limit: (process, endpoint, token)."""
    pytest.importorskip("zmq")
    from luisa_nb.remote.protocol import TOKEN_VARIABLE

    token = "process-server-token"
    command = [sys.executable, "-m", "luisa_nb.remote.server", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--max-message-bytes", str(1 << 20), "--exit-with-parent"],
        stdout=subprocess.PIPE,
        env={**os.environ, TOKEN_VARIABLE: token},
    )
    endpoint = json.loads(process.stdout.readline())["endpoint"]
    yield process, endpoint, token
    process.terminate()
    process.wait(5)
    process.stdout.close()


@pytest.fixture
def worker_link(thread_server):
    """A device of the thread server and a raw connection to its worker's socket; the
    worker's open files (memory, pipes, files) are the same after the test: none leaked."""
    import luisa_nb as lnb

    device = lnb.create_device(thread_server.address, token=TOKEN)
    assert serves(device)  # every thread of the device has its connection to the worker
    worker = device.info["server_worker_pid"]
    before = open_descriptors(worker)
    raw = StreamSocket(device.backend._connection.worker_path)
    yield device, raw
    raw.close()
    assert serves(device)
    deadline = time.monotonic() + 5
    while open_descriptors(worker) != before and time.monotonic() < deadline:
        time.sleep(0.01)  # the worker closes the raw connection when it sees it closed
    assert open_descriptors(worker) == before
    device.backend.close()


@pytest.fixture
def sent_operations(monkeypatch):
    """The names of the operations every channel queues, in order."""
    from luisa_nb.remote.channel import Channel

    names = []
    add = Channel.add

    def recording(self, operation, *arguments, **options):
        names.append(operation[0])
        return add(self, operation, *arguments, **options)

    monkeypatch.setattr(Channel, "add", recording)
    return names


@pytest.fixture
def buffers_in_device_memory(monkeypatch):
    """Every buffer as on a server whose device memory is not host memory (a direct
    client shares those of a cpu server: tests/remote/test_remote_shared_buffers.py)."""
    from luisa_nb.remote.client import Connection

    monkeypatch.setattr(Connection, "allocate_shared", lambda connection, nbytes: None)
