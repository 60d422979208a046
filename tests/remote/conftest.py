import os
import threading
from pathlib import Path

import pytest

TOKEN = "test-token-0123456789"


def server_children() -> list[int]:
    """Server processes whose parent is this test process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        ppid = next(line for line in status.splitlines() if line.startswith("PPid:"))
        ours = int(ppid.split()[1]) == os.getpid() and b"luisa_nb.remote.server" in command
        if ours and "State:\tZ" not in status:
            found.append(int(entry.name))
    return found


@pytest.fixture(autouse=True, scope="session")
def _no_orphan_servers():
    """Every server process a test started is gone when the tests end."""
    yield
    import gc

    gc.collect()
    assert server_children() == []


class ThreadServer:
    """A server on a thread of the test process, with a token and a small message limit."""

    def __init__(self, max_message_bytes: int) -> None:
        from luisa_nb.remote.server import Server

        self.server = Server("cpu", port=0, token=TOKEN, max_message_bytes=max_message_bytes)
        self.endpoint = self.server.endpoint
        self.address = self.server.address
        self.token = TOKEN
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.server.serve, args=(self._stop,))
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.server.close()


@pytest.fixture(scope="session")
def thread_server():
    """A server for the whole session; messages above 4 MiB of data are refused, so
    uploads above 2 MiB travel in several chunks."""
    pytest.importorskip("zmq")
    server = ThreadServer(max_message_bytes=4 << 20)
    yield server
    server.stop()


@pytest.fixture(params=["submit", "execute"])
def staging(request):
    return request.param


@pytest.fixture
def device(thread_server, staging):
    import luisa_nb as lnb

    device = lnb.create_device(thread_server.address, token=TOKEN, staging=staging)
    yield device
    device.backend.close()
