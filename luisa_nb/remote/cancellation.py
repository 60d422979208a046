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

from luisa_nb.kernels.executable import CancelFlag

FLAG_BYTES = ctypes.sizeof(ctypes.c_int32)


def session_cancel_flag(path: str, *, create: bool = False) -> CancelFlag:
    """The flag in the file at ``path`` (``create``: a new file, cleared); ``set`` asks
    the session's running and later kernels to stop, until ``clear``. The flag's int32
    keeps the file's mapping alive."""
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    descriptor = os.open(path, flags, 0o600)
    try:
        if create:
            os.ftruncate(descriptor, FLAG_BYTES)  # reads as zeros: clear
        mapped = mmap.mmap(descriptor, FLAG_BYTES)
    finally:
        os.close(descriptor)
    return CancelFlag(ctypes.c_int32.from_buffer(mapped))
