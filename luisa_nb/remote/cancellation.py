"""A session's cancel flag, in memory that the supervisor and the session's worker share.

A worker runs a kernel on its main thread and reads no message until the kernel ends,
so a cancel cannot travel to it as a message. Instead the supervisor, which keeps
reading, sets this flag when the client asks (``cancel``) and clears it again
(``resume``), and the running kernel's compiled C polls it, as a local backend's kernel
polls :class:`~luisa_nb.kernels.executable.CancelFlag`. The flag is a 4-byte file in the
server's private directory, mapped by both processes.
"""

from __future__ import annotations

import ctypes
import mmap
import os

FLAG_BYTES = ctypes.sizeof(ctypes.c_int32)


class SessionCancelFlag:
    """The flag in the file at ``path`` (``create``: a new file, cleared). ``address`` is
    what compiled C polls; ``set`` asks the session's running and later kernels to stop,
    until ``clear``."""

    __slots__ = ("_map", "_value", "address", "path")

    def __init__(self, path: str, *, create: bool = False) -> None:
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        descriptor = os.open(path, flags, 0o600)
        try:
            if create:
                os.ftruncate(descriptor, FLAG_BYTES)  # reads as zeros: clear
            self._map = mmap.mmap(descriptor, FLAG_BYTES)
        finally:
            os.close(descriptor)
        self._value = ctypes.c_int32.from_buffer(self._map)
        self.address: int = ctypes.addressof(self._value)
        self.path = path

    @property
    def is_set(self) -> bool:
        return self._value.value != 0

    def set(self) -> None:
        self._value.value = 1

    def clear(self) -> None:
        self._value.value = 0
