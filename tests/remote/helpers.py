"""What the remote tests share: process checks and a client that speaks the protocol."""

import contextlib
import json
import os
import secrets
import tempfile
import threading
import time
from pathlib import Path

from tests.helpers.processes import running, wait_gone  # noqa: F401 (used by the remote tests)

TOKEN = "test-token-0123456789"


def cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` has used (user and system)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_kib(pid: int) -> int:
    """The most resident memory process ``pid`` has had (VmHWM), in KiB."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1])


class RawClient:
    """A bare DEALER socket logged in with ``token`` (``None``: no login at all), with
    a session of its own; it speaks the protocol by hand."""

    def __init__(self, endpoint, token):
        import zmq

        from luisa_nb.remote.protocol import PLAIN_USER

        self.session = secrets.token_hex(8)
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if token is not None:
            self.socket.plain_username = PLAIN_USER.encode()
            self.socket.plain_password = token.encode()
        self.socket.connect(endpoint)

    def request(self, op, **arguments):
        """The frames of a request: its envelope, then its arguments if it has any."""
        from luisa_nb.remote.protocol import PROTOCOL_VERSION, encode

        envelope = encode({"v": PROTOCOL_VERSION, "id": 7, "session": self.session, "op": op})
        return [envelope, encode(arguments)] if arguments else [envelope]

    def ask(self, frames, timeout=2000):
        """The reply (header, data frames) to ``frames``, or None if none comes (also when
        the request cannot even be sent: a connection the server refused has no peer)."""
        import zmq

        deadline = time.monotonic() + timeout / 1000
        if not self.socket.poll(timeout, zmq.POLLOUT):
            return None
        self.socket.send_multipart(frames)
        while self.socket.poll(max(1, int((deadline - time.monotonic()) * 1000))):
            reply = self.socket.recv_multipart()
            header = json.loads(reply[0])
            if not header.get("probe"):
                return header, reply[1:]
        return None

    def close(self):
        self.socket.close()
        self.context.term()


class StreamSocket:
    """A client's end of a worker's Unix stream socket, with the few methods of a ZeroMQ
    socket that the tests use (``send_multipart``, ``poll``, ``recv_multipart``)."""

    def __init__(self, path):
        import socket

        self.connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.connection.settimeout(5.0)
        self.connection.connect(path)

    def send_multipart(self, frames):
        from luisa_nb.remote.stream import send_frames

        send_frames(self.connection, frames, 5.0)

    def poll(self, timeout):
        import select

        return bool(select.select([self.connection], [], [], timeout / 1000)[0])

    def recv_multipart(self):
        from luisa_nb.remote.protocol import MAX_FRAME_BYTES
        from luisa_nb.remote.stream import receive_frames

        return [bytes(frame) for frame in receive_frames(self.connection, MAX_FRAME_BYTES, 5.0)]

    def close(self):
        self.connection.close()


class StreamClient(RawClient):
    """A client of session ``session`` that speaks to its worker's stream socket at
    ``path`` by hand, as :class:`RawClient` speaks to a server."""

    def __init__(self, path, session):
        self.session = session
        self.socket = StreamSocket(path)

    def ask(self, frames, timeout=2000):
        self.socket.send_multipart(frames)
        if not self.socket.poll(timeout):
            return None
        reply = self.socket.recv_multipart()
        return json.loads(reply[0]), reply[1:]

    def close(self):
        self.socket.close()


def _processes() -> dict[int, tuple[int, bytes, bool]]:
    """Every process: pid -> (parent pid, command line, whether a zombie)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        ppid = next(line for line in status.splitlines() if line.startswith("PPid:"))
        found[int(entry.name)] = (int(ppid.split()[1]), command, "State:\tZ" in status)
    return found


def server_children() -> list[int]:
    """Server processes whose parent is this test process."""
    return [
        pid
        for pid, (ppid, command, zombie) in _processes().items()
        if ppid == os.getpid() and b"luisa_nb.remote.server" in command and not zombie
    ]


def worker_processes(server_pid: int) -> list[int]:
    """The session workers of the server process ``server_pid``: children of its fork
    server."""
    processes = _processes()
    forkservers = {
        pid
        for pid, (ppid, command, _) in processes.items()
        if ppid == server_pid and b"forkserver" in command
    }
    return [
        pid for pid, (ppid, _, zombie) in processes.items() if ppid in forkservers and not zombie
    ]


def server_helpers(server_pid: int) -> list[int]:
    """The fork server and the resource tracker that ``multiprocessing`` started for the
    server process ``server_pid``."""
    return [
        pid
        for pid, (ppid, command, zombie) in _processes().items()
        if ppid == server_pid
        and not zombie
        and (b"forkserver" in command or b"resource_tracker" in command)
    ]


class ThreadServer:
    """A server on a thread of the test process, with a token; ``options`` go to
    :class:`~luisa_nb.remote.server.Server`."""

    def __init__(self, **options) -> None:
        from luisa_nb.remote.server import Server

        self.server = Server("cpu", port=0, token=TOKEN, **options)
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


# -- a hostile client on a worker's socket ------------------------------------------------


def open_descriptors(pid: int) -> list[str]:
    """What the worker's descriptors open, but sockets and event descriptors (ZeroMQ
    opens and closes its own as the supervisor's connection needs)."""
    targets = []
    for name in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):
            targets.append(os.readlink(f"/proc/{pid}/fd/{name}"))
    return sorted(t for t in targets if not t.startswith(("socket:", "anon_inode:")))


def request(raw, session, op, descriptors=(), **arguments):
    """The reply header to ``op`` with ``arguments`` and ``descriptors`` (``SCM_RIGHTS``)
    sent over ``raw`` (a :class:`StreamSocket` to the worker)."""
    from luisa_nb.remote.protocol import PROTOCOL_VERSION, encode
    from luisa_nb.remote.stream import descriptor_message, message_pieces

    envelope = encode({"v": PROTOCOL_VERSION, "id": 3, "session": session, "op": op})
    raw.connection.sendmsg(
        message_pieces([envelope, encode(arguments)]), descriptor_message(descriptors)
    )
    return json.loads(raw.recv_multipart()[0])


def serves(device) -> bool:
    """Whether the device still reads back a large buffer correctly."""
    import numpy as np

    from luisa_nb.remote.regions import SHARED_READBACK_BYTES

    data = np.arange(SHARED_READBACK_BYTES // 2, dtype=np.float32)
    buffer = device.create_buffer(data.size, np.float32)
    buffer.copy_from(data)
    return bool(np.array_equal(buffer.numpy(), data))


def unsealed_memfd(nbytes=4096):
    descriptor = os.memfd_create("unsealed")
    os.ftruncate(descriptor, nbytes)
    return descriptor


def disk_file(nbytes=4096):
    descriptor, path = tempfile.mkstemp()
    os.unlink(path)
    os.ftruncate(descriptor, nbytes)
    return descriptor


def pipe_end(nbytes=4096):
    reading, writing = os.pipe()
    os.close(writing)
    return reading
