"""Files written atomically: a temporary file beside the target, fsynced and renamed over
it, so a failed write leaves no partial file and the previous file untouched."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO


@contextmanager
def atomic_write(path: str | Path) -> Iterator[IO[bytes]]:
    """A binary file that replaces ``path`` when the block ends without an error.

    It is written beside ``path`` (so the final rename stays on one file system),
    fsynced, then renamed over ``path``. On any error it is removed and ``path`` is left
    as it was. The new file gets the mode an existing file had, else the umask's.
    """
    target = Path(os.path.realpath(path))
    descriptor, temporary = _create_temporary(target)
    try:
        with os.fdopen(descriptor, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        with suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _sync_folder(target.parent)


def _create_temporary(target: Path) -> tuple[int, Path]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; a no-op where folders cannot be
    opened or synced)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
