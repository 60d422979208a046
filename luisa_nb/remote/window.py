"""A session's *window*: shared memory that bulk bytes cross when client and server run
on one host.

The server creates the window for each session worker: a file in its private directory
(on ``/dev/shm`` where there is one), :data:`HEADER_BYTES` of header holding a random
nonce, then the data. The worker maps it; ``hello`` tells the client its path and nonce.
A client that can open and map the file and reads the nonce there is on the same host as
the same user, and moves its transfers through the window instead of the messages: an
upload copies its bytes into a part of the window and its batch names the part; the
worker copies them into device memory and writes downloads into the part, and the client
copies them out when the reply lands. The bytes cross no socket, and the file's pages
are only taken as they are first written. Each batch in flight holds one part
(:class:`WindowParts`); the worker checks every range it is given against the window.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import secrets
import stat
import threading
from typing import Any

import numpy as np

HEADER_BYTES = mmap.PAGESIZE
NONCE_BYTES = 16
SERVER_DIRECTORY = re.compile(r"luisa_nb-server-[A-Za-z0-9_]+")
WORKER_FILE = re.compile(r"worker-[0-9]+\.(window|stream)")
LOCAL_FIELDS = {"worker": str, "window": str, "window_bytes": int, "nonce": str}


def create_window(path: str, nbytes: int) -> str:
    """Create the window file at ``path`` (mode 0600, ``nbytes`` of data, sparse) with a
    fresh nonce in its header; the nonce, as hex."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(descriptor, HEADER_BYTES + nbytes)
        os.pwrite(descriptor, nonce, 0)
    finally:
        os.close(descriptor)
    return nonce.hex()


class Window:
    """The data of a window file, mapped: ``array`` is its bytes (uint8)."""

    def __init__(self, path: str, nbytes: int) -> None:
        self.path: str | None = path
        descriptor = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
        try:
            if os.fstat(descriptor).st_size != HEADER_BYTES + nbytes:
                raise ValueError(f"{path} does not hold a window of {nbytes} bytes")
            self._map = mmap.mmap(descriptor, HEADER_BYTES + nbytes)
        finally:
            os.close(descriptor)
        self.nonce = self._map[:NONCE_BYTES].hex()
        self.array = np.frombuffer(self._map, np.uint8, nbytes, HEADER_BYTES)
        self.nbytes = nbytes

    @classmethod
    def attach(cls, path: str, nbytes: int, nonce: str) -> Window | None:
        """The window the server described, if this process can map it and it is the
        one the server made (the nonce matches); else ``None``."""
        try:
            window = cls(path, nbytes)
        except (OSError, ValueError):
            return None
        return window if secrets.compare_digest(window.nonce, nonce) else None

    def part(self, start: int, nbytes: int) -> np.ndarray:
        return self.array[start : start + nbytes]

    def unlink(self) -> None:
        """Remove the file (once the client has mapped it, nobody needs its name), so
        that its memory goes with the last mapping even if the server is killed."""
        if self.path is not None:
            remove(self.path)
            self.path = None


class WindowParts:
    """Hands out a window's parts of ``part_bytes`` each, to the batches of every thread
    of one connection. A batch takes a part when it starts and gives it back when its
    reply has landed; ``take`` never waits (a batch that finds none travels by message)."""

    def __init__(self, window: Window, part_bytes: int) -> None:
        self.window = window
        self.part_bytes = part_bytes
        self._free = list(range(window.nbytes // part_bytes - 1, -1, -1))
        self._lock = threading.Lock()

    def take(self) -> int | None:
        """The start of a free part, or ``None``."""
        with self._lock:
            return self._free.pop() * self.part_bytes if self._free else None

    def give_back(self, start: int) -> None:
        with self._lock:
            self._free.append(start // self.part_bytes)

    def part(self, start: int) -> np.ndarray:
        return self.window.part(start, self.part_bytes)


def remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def local_window(local: Any) -> tuple[Window, str] | None:
    """The window and the path of the worker's stream socket that ``hello``'s ``local``
    names, if this process can use them: the window is a file of this user's, mode 0600,
    in a directory of this user's, mode 0700, named as a luisa_nb server names them, the
    socket is in that directory too, and the file holds the nonce. A server cannot make
    a client write into any other file (nor one on another host, by chance)."""
    if type(local) is not dict or any(
        type(local.get(name)) is not kind for name, kind in LOCAL_FIELDS.items()
    ):
        return None
    path, socket = local["window"], local["worker"]
    folder = os.path.dirname(path)
    if not (
        os.path.dirname(socket) == folder
        and WORKER_FILE.fullmatch(os.path.basename(socket))
        and WORKER_FILE.fullmatch(os.path.basename(path))
        and SERVER_DIRECTORY.fullmatch(os.path.basename(folder))
        and _private(folder, stat.S_ISDIR, 0o700)
        and _private(path, stat.S_ISREG, 0o600)
    ):
        return None
    window = Window.attach(path, local["window_bytes"], local["nonce"])
    return None if window is None else (window, socket)


def _private(path: str, kind: Any, mode: int) -> bool:
    """Whether ``path`` (not a link) is of ``kind``, this user's, with exactly ``mode``."""
    try:
        status = os.lstat(path)
    except OSError:
        return False
    return (
        kind(status.st_mode)
        and status.st_uid == os.getuid()
        and stat.S_IMODE(status.st_mode) == mode
    )
