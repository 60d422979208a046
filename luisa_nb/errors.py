"""The exception hierarchy of luisa_nb, rooted in :class:`LuisaNbError`.

Every error that luisa_nb raises for a user mistake is a subclass of ``LuisaNbError``,
and also of the builtin exception a Python user would expect (``TypeError``,
``ValueError``, ``IndexError``), so ``except ValueError`` keeps working. Messages name
the object involved and say what to do next.
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path

#: Set to show luisa_nb's own frames in tracebacks (and the kernel compiler's).
DEBUG_VARIABLE = "LUISA_NB_KERNEL_DEBUG"
_HIDDEN_FOLDERS = (str(Path(__file__).parent) + os.sep,)
_SHELL_FOLDERS = ("IPython" + os.sep + "core" + os.sep,)


class LuisaNbError(Exception):
    """Base class of every error raised by luisa_nb."""

    def _render_traceback_(self) -> list[str]:
        """IPython shows these lines in place of its own traceback (see
        :func:`user_traceback`)."""
        return user_traceback(self).splitlines()


def user_traceback(error: BaseException) -> str:
    """``error``'s traceback as Python prints it, less luisa_nb's own frames (and the
    shell's, before the user's code): the user's lines that led to it, then the message,
    which names the command or kernel. A luisa_nb cause that the message already quotes
    is left out; causes that are not luisa_nb errors (bugs) keep every frame. With
    ``$LUISA_NB_KERNEL_DEBUG`` set, nothing is left out."""
    summary = traceback.TracebackException.from_exception(error)
    if not os.environ.get(DEBUG_VARIABLE):
        link: traceback.TracebackException | None = summary
        while link is not None:
            if issubclass(link.exc_type, LuisaNbError):
                link.stack = traceback.StackSummary.from_list(_user_frames(link.stack))
                cause = link.__cause__
                if cause and issubclass(cause.exc_type, LuisaNbError) and str(cause) in str(link):
                    link.__cause__, link.__suppress_context__ = None, True
            link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)
    return "".join(summary.format())


def _user_frames(frames: traceback.StackSummary) -> list[traceback.FrameSummary]:
    kept = [frame for frame in frames if not frame.filename.startswith(_HIDDEN_FOLDERS)]
    while kept and any(folder in kept[0].filename for folder in _SHELL_FOLDERS):
        kept.pop(0)
    return kept


class ConfigurationError(LuisaNbError, ValueError):
    """An option has a value luisa_nb does not know (a staging policy, a capture mode)."""


class BackendNotFoundError(LuisaNbError, ValueError):
    """``create_device`` was asked for a backend that does not exist or cannot load."""


class BackendUnavailableError(BackendNotFoundError):
    """A backend exists but cannot run here: what it needs (a package, a GPU) is missing.
    The message says which, and how to install it."""


class HostArrayError(LuisaNbError, ValueError):
    """A host array cannot be used for a copy."""


class HostDtypeError(HostArrayError, TypeError):
    """The host array's dtype differs from the buffer's."""


class HostSizeError(HostArrayError):
    """The host array's total size differs from the buffer (view)'s size."""


class HostLayoutError(HostArrayError):
    """The host array is not C-contiguous."""


class HostReadOnlyError(HostArrayError):
    """A download targets a read-only host array."""


class HostValueRangeError(HostDtypeError, OverflowError):
    """A host value does not fit the buffer's element type (``2**40`` for an int32
    buffer)."""


class ViewRangeError(LuisaNbError, IndexError):
    """A buffer view or element index lies outside its buffer."""


class BufferDestroyedError(LuisaNbError, RuntimeError):
    """A destroyed buffer was used."""


class AllocationSizeError(LuisaNbError, ValueError):
    """A buffer or image is larger than its device can address in one allocation."""


class DeviceMemoryError(LuisaNbError, MemoryError):
    """A device has not enough memory for a buffer or image of the size asked for."""


class DeviceMismatchError(LuisaNbError, ValueError):
    """Objects from different devices were used in one command."""


class InvalidArgumentError(LuisaNbError, TypeError):
    """An argument is not of a kind the call accepts (e.g. a list where a buffer is needed)."""


class BufferMismatchError(LuisaNbError, ValueError):
    """Two buffers (views) or arrays differ in dtype, size or shape where they must agree."""


class RecordNotFoundError(LuisaNbError, KeyError):
    """A trace has no record (or no upload check) with the id asked for."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class CommandReuseError(LuisaNbError, RuntimeError):
    """A command object was submitted twice; each ``*_async`` call makes one command."""


class StreamError(LuisaNbError, RuntimeError):
    """A stream or event was used in a way that cannot work (e.g. after it was closed)."""


class CommandFailedError(LuisaNbError, RuntimeError):
    """Commands (or callbacks) raised on a stream's worker; surfaced at the next
    ``synchronize()``. ``command_id`` is the first; ``failures`` lists every one as
    ``(command_id, description, exception)``."""

    def __init__(
        self,
        message: str,
        command_id: int,
        failures: list[tuple[int, str, BaseException]] | None = None,
    ) -> None:
        super().__init__(message)
        self.command_id = command_id
        self.failures = failures or []


class IndirectDispatchError(LuisaNbError, ValueError):
    """An indirect dispatch cannot run as its indirect dispatch buffer says: the dispatch
    count is above the buffer's capacity, an entry's block size is not the kernel's, an
    entry's size is too large, or the offset is outside the buffer."""


class RemoteError(LuisaNbError, RuntimeError):
    """The remote backend's server cannot be started or reached, rejected a request, or
    stopped answering."""


class KernelError(LuisaNbError):
    """Base class of kernel errors."""


class KernelCompileError(KernelError, SyntaxError):
    """The kernel source uses Python that the kernel language does not accept, or
    mixes types. The message carries ``file:line:col`` and the source line with a caret.
    """

    def __init__(
        self,
        message: str,
        *,
        filename: str = "<kernel>",
        lineno: int = 0,
        col_offset: int = 0,
        source_line: str = "",
    ) -> None:
        self.reason = message
        location = f"{filename}:{lineno}:{col_offset + 1}"
        text = f"{location}: {message}"
        if source_line:
            stripped = source_line.rstrip("\n")
            indent = len(stripped) - len(stripped.lstrip())
            caret = " " * (col_offset - indent) + "^"
            text += f"\n    {stripped.strip()}\n    {caret}"
        super().__init__(text)
        self.msg = text
        self.filename = filename
        self.lineno = lineno
        self.offset = col_offset + 1
        self.text = source_line

    def __str__(self) -> str:
        return self.msg


class KernelArgumentError(KernelError, TypeError):
    """A kernel was dispatched with arguments of the wrong number or type."""


class KernelBuildError(KernelError, RuntimeError):
    """The C compiler rejected generated code; the message holds its output."""


class KernelIndexError(KernelError, IndexError):
    """A checked kernel indexed a buffer (or image) out of range; the dispatch stopped.

    ``kernel``, ``line`` (source line), ``thread`` (the dispatch id), ``index``, ``size``
    and ``buffer`` (the parameter or captured name) say where.
    """

    def __init__(
        self,
        message: str,
        *,
        kernel: str,
        line: int,
        thread: tuple[int, int, int],
        index: int,
        size: int,
        buffer: str,
    ) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.line = line
        self.thread = thread
        self.index = index
        self.size = size
        self.buffer = buffer


class KernelNonFiniteError(KernelError, FloatingPointError):
    """A kernel built with ``checks="nan"`` wrote a NaN or an infinity; the dispatch stopped.

    Fields as :class:`KernelIndexError`, with ``value`` the value written.
    """

    def __init__(
        self,
        message: str,
        *,
        kernel: str,
        line: int,
        thread: tuple[int, int, int],
        index: int,
        buffer: str,
        value: float,
    ) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.line = line
        self.thread = thread
        self.index = index
        self.buffer = buffer
        self.value = value


class KernelBarrierError(KernelError):
    """Threads of one block paused at different ``sync_block()`` calls; the dispatch
    stopped. ``lines``: the two barriers' source lines, in order; ``block``: the block's
    position (``dispatch_id() // block size``)."""

    def __init__(
        self, message: str, *, kernel: str, lines: tuple[int, int], block: tuple[int, int, int]
    ) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.lines = lines
        self.block = block


class KernelFaultError(KernelError):
    """A compiled kernel touched memory it may not (a SIGSEGV or SIGBUS, possible with
    ``checks=False``); the dispatch stopped and the process goes on. ``kernel``, ``block``
    (the first thread of the block that faulted), ``signal`` (its name) and ``address``
    say where."""

    def __init__(
        self,
        message: str,
        *,
        kernel: str,
        block: tuple[int, int, int],
        signal: str,
        address: int,
    ) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.block = block
        self.signal = signal
        self.address = address


class KernelCancelledError(KernelError):
    """A kernel stopped early because the user interrupted a wait (Ctrl-C in
    ``synchronize()``); the trace marks its command cancelled."""


class TraceError(LuisaNbError):
    """A trace cannot be started, saved or loaded."""


class ReplayDataMissingError(TraceError):
    """A replay cannot show some bytes: the trace lacks what made them (the message says
    what, and the capture setting that keeps it)."""


class TraceFormatError(TraceError, ValueError):
    """A trace file is not a luisa_nb trace, or has an unsupported version."""


class TraceFileError(TraceError, OSError):
    """A trace file, or a page or export made from a trace, cannot be read or written at
    the path given: no permission, a symbolic link loop, a name too long, a NUL character
    in the path. ``errno`` and ``filename`` say which error and which path."""

    def __init__(self, message: str, errno: int | None = None, filename: str | None = None):
        super().__init__(message)
        self.errno = errno
        self.filename = filename

    def __str__(self) -> str:
        return str(self.args[0])


class TraceFileNotFoundError(TraceFileError, FileNotFoundError):
    """No file at the path given, or no folder to write it in."""


class UnsupportedFeatureError(LuisaNbError, NotImplementedError):
    """A luisa-python feature that luisa_nb does not have (ray tracing, autodiff, GUI)."""


class ReproducerError(LuisaNbError, ValueError):
    """A finding the reproducer cannot write a program for, or a program that does not
    reproduce it."""


class NotInitializedError(LuisaNbError, RuntimeError):
    """``luisa_nb.luisa`` was used before ``luisa.init()``."""


class MissingDependencyError(LuisaNbError, ImportError):
    """A feature needs an optional package that is not installed; the message names the
    extra to install."""


class LuisaNbWarning(UserWarning):
    """Warnings from luisa_nb, e.g. falling back to the per-thread Python kernel mode."""


class PendingCommandsWarning(LuisaNbWarning):
    """A trace ended with commands that were never executed, or recorded nothing."""
