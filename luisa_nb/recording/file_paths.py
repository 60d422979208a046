"""The paths that trace files, reports and exports are read from and written to: every
way a path can fail becomes one :class:`~luisa_nb.errors.TraceError` that names the path
and says what to do (also an ``OSError`` or ``TypeError``, as a user of ``open`` expects)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from luisa_nb.errors import InvalidArgumentError, TraceFileError, TraceFileNotFoundError

MISSING_FOLDER = "its folder does not exist; create it, or pass another path"
_PERMISSION = "check the permissions of the file and of its folder"
_ADVICE = {
    errno.ELOOP: "its symbolic links form a loop; fix or remove the link",
    errno.ENAMETOOLONG: "pass a shorter path",
    errno.ENOTDIR: "a part of the path that should be a folder is a file; check the path",
    errno.EISDIR: "it is a folder; pass the path of a file",
    errno.EACCES: _PERMISSION,
    errno.EPERM: _PERMISSION,
    errno.EROFS: "pass a path on a writable file system",
    errno.ENOSPC: "free some space and try again",
}


def checked_path(path: object, doing: str) -> Path:
    """``path`` (a ``str`` or ``os.PathLike``) as a :class:`Path`, for ``doing`` (as in
    "cannot read the trace")."""
    try:
        text = os.fspath(path)
    except TypeError:
        text = None
    if not isinstance(text, str):
        raise InvalidArgumentError(
            f"cannot {doing} {path!r}: a path is a str or a pathlib.Path, not "
            f"{type(path).__name__}; pass the file's path"
        )
    if "\0" in text:
        raise TraceFileError(
            f"cannot {doing} {text!r}: the path holds a NUL character, which no file name "
            "can hold; check how the path was made",
            errno.EINVAL,
            text,
        )
    return Path(text)


@contextmanager
def file_errors(path: Path, doing: str, missing: str) -> Iterator[None]:
    """An ``OSError`` raised in the block while ``doing`` something at ``path`` as a
    :class:`TraceFileError` (:class:`TraceFileNotFoundError` where something is missing,
    ``missing`` saying what to do then)."""
    try:
        yield
    except TraceFileError:
        raise
    except OSError as error:
        found = error.errno != errno.ENOENT
        advice = _ADVICE.get(error.errno, "check the path") if found else missing
        kind = TraceFileError if found else TraceFileNotFoundError
        reason = error.strerror or str(error)
        raise kind(f"cannot {doing} {path} ({reason}); {advice}", error.errno, str(path)) from None
