"""Checked kernels: what a kernel checks (:class:`KernelChecks`), the launch record
compiled C fills in when a dispatch stops early, and the errors raised from it (in C and
in Python mode alike).
"""

from __future__ import annotations

import ctypes
import signal
from collections.abc import Callable
from enum import Enum

from luisa_nb.errors import (
    ConfigurationError,
    KernelBarrierError,
    KernelFaultError,
    KernelIndexError,
    KernelNonFiniteError,
)

# Status codes of a launch, shared with the generated C (see c.checks.LAUNCH_PRELUDE).
STATUS_OK = 0
STATUS_INDEX_ERROR = 1
STATUS_NON_FINITE = 2
STATUS_CANCELLED = 3
STATUS_INVALID_SIZE = 4
STATUS_DIVERGED_BARRIERS = 5  # threads of a block paused at different barriers
STATUS_FAULT = 6  # a memory fault (see kernels/c/fault_guard.py)


class KernelChecks(Enum):
    """What a compiled kernel checks; each member's value is the ``checks=`` setting a
    user writes for it (``True``, ``False``, ``"nan"``).

    Settings are parsed where a user gives them (``@kernel(checks=)``,
    ``create_device(checks=)``); a dispatch takes its kernel's member, else its device's
    (``device.kernel_checks``), and the executable built for it passes that member to the
    emitters and Python mode, which ask :attr:`bounds` and :attr:`finite_writes`. Members
    hash by identity, so a compile cache keyed by one costs no more than one keyed by a
    bool.
    """

    OFF = False
    BOUNDS = True
    BOUNDS_AND_FINITE = "nan"

    __hash__ = object.__hash__

    @classmethod
    def parse(cls, setting: object, *, allow_default: bool = False) -> KernelChecks | None:
        """``setting`` (``True``, ``False``, ``"nan"``, a member, or with ``allow_default``
        ``None`` for the device's default) as a member; else :class:`ConfigurationError`."""
        if isinstance(setting, cls):
            return setting
        if setting is None and allow_default:
            return None
        if type(setting) in (bool, str) and setting in (True, False, "nan"):
            return cls(setting)
        default = "None (the device's default), " if allow_default else ""
        raise ConfigurationError(
            f"checks={setting!r} is not a kernel-check setting; use {default}True (every "
            f"buffer index checked), False (no checks) or 'nan' (indices, and every value "
            f"written to a float buffer must be finite)"
        )

    @property
    def bounds(self) -> bool:
        """Every buffer index, texel coordinate, bindless slot and indirect entry is checked
        to lie inside what it addresses."""
        return self is not KernelChecks.OFF

    @property
    def finite_writes(self) -> bool:
        """Every value written to a float buffer must be finite (besides :attr:`bounds`)."""
        return self is KernelChecks.BOUNDS_AND_FINITE

    def __bool__(self) -> bool:
        """Refused: ``OFF`` would be true, so ask :attr:`bounds` or :attr:`finite_writes`."""
        raise TypeError(
            "KernelChecks has no truth value; ask checks.bounds or checks.finite_writes"
        )

    def __repr__(self) -> str:
        """``'nan'``, ``True``: messages show ``checks='nan'``, as the user wrote it."""
        return repr(self.value)


class LaunchRecord(ctypes.Structure):
    """Filled in by compiled C when a launch stops early; mirrors ``lnb_launch`` in C.

    After a memory fault (``STATUS_FAULT``) ``thread`` is the first thread of the block
    that faulted, ``index`` the address it touched and ``value`` the signal number.
    ``guard``: the address of the fault guard's entry, or 0 to run unguarded.
    """

    _fields_ = [
        ("status", ctypes.c_int32),
        ("line", ctypes.c_int32),
        ("buffer", ctypes.c_int32),
        ("access", ctypes.c_int32),  # 0 read, 1 write
        ("unsigned_index", ctypes.c_int32),
        ("thread", ctypes.c_int32 * 3),
        ("index", ctypes.c_int64),
        ("value", ctypes.c_double),
        ("cancel", ctypes.c_void_p),  # address of an int32 flag; non-zero asks C to stop
        ("guard", ctypes.c_void_p),
    ]

    def outcome(self) -> list[int | float]:
        """What a launch that stopped reports, as plain numbers (sent by the remote server)."""
        return [
            self.status,
            self.line,
            self.buffer,
            self.access,
            self.unsigned_index,
            *self.thread,
            self.index,
            self.value,
        ]

    @classmethod
    def from_outcome(cls, values: list[int | float]) -> LaunchRecord:
        """The record of :meth:`outcome` ``values``; ``ValueError`` if they are not one."""
        if type(values) is not list or len(values) != 10:
            raise ValueError("a launch outcome is a list of 10 numbers")
        *integers, value = values
        if any(type(item) is not int for item in integers) or type(value) not in (int, float):
            raise ValueError("a launch outcome is 9 integers and a number")
        try:
            status, line, buffer, access, unsigned, x, y, z, index = integers
            return cls(status, line, buffer, access, unsigned, (x, y, z), index, value)
        except (OverflowError, TypeError) as error:
            raise ValueError(f"a launch outcome out of range: {error}") from None


def index_error(
    kernel: str,
    where: str,
    line: int,
    thread: tuple[int, int, int],
    access: str,
    index: int,
    size: int,
    buffer: str,
) -> KernelIndexError:
    """The error of a thread that used ``index`` on a buffer of ``size`` elements.

    ``where`` is ``file:line: source`` (or empty); ``access`` is "reads" or "writes".
    """
    location = f" at {where}" if where else ""
    message = (
        f"kernel {kernel!r}: thread {thread} {access} index {index} of buffer {buffer!r}, "
        f"which has {size} element{'s' if size != 1 else ''}{location}; the dispatch stopped. "
        f"Keep indices in 0 <= i < {size}: dispatch no more threads than the buffer holds, "
        f"or guard the access (e.g. `if i < n:`)"
    )
    return KernelIndexError(
        message, kernel=kernel, line=line, thread=thread, index=index, size=size, buffer=buffer
    )


def diverged_barriers_error(
    kernel: str,
    lines: tuple[int, int],
    where: Callable[[int], str],
    thread: tuple[int, int, int],
    block_size: tuple[int, int, int],
) -> KernelBarrierError:
    """The error of a block whose threads (one of them ``thread``) paused at the
    ``sync_block()`` calls on two different ``lines``; ``where(line)`` is ``file:line:
    source``."""
    first, second = sorted(lines)
    block = tuple(position // size for position, size in zip(thread, block_size, strict=True))
    places = " and ".join(where(line) or f"line {line}" for line in (first, second))
    message = (
        f"kernel {kernel!r}: threads of block {block} paused at different sync_block() "
        f"calls: {places}; the dispatch stopped. Every thread of a block that has not "
        f"returned must reach the same barriers in the same order: keep sync_block() out "
        f"of branches and loops whose course differs between the threads of a block"
    )
    return KernelBarrierError(message, kernel=kernel, lines=(first, second), block=block)


def texel_error(
    kernel: str,
    where: str,
    line: int,
    thread: tuple[int, int, int],
    access: str,
    coord: tuple[int, ...],
    size: tuple[int, ...],
    image: str,
) -> KernelIndexError:
    """The error of a thread that used texel ``coord`` of an image of ``size`` (width,
    height[, depth]). Its ``index`` is the texel's number in storage order and its
    ``size`` the number of texels."""
    location = f" at {where}" if where else ""
    index, stride = 0, 1
    for position, extent in zip(coord, size, strict=True):
        index, stride = index + position * stride, stride * extent
    axes = zip("xyz"[: len(size)], size, strict=True)
    bounds = " and ".join(f"0 <= {axis} < {extent}" for axis, extent in axes)
    shape = "(width, height)" if len(size) == 2 else "(width, height, depth)"
    message = (
        f"kernel {kernel!r}: thread {thread} {access} texel {tuple(coord)} of image {image!r}, "
        f"which is {'x'.join(map(str, size))}{location}; the dispatch stopped. Keep "
        f"coordinates in {bounds}: dispatch {shape} threads, or guard the access"
    )
    return KernelIndexError(
        message, kernel=kernel, line=line, thread=thread, index=index, size=stride, buffer=image
    )


def slot_error(
    kernel: str,
    where: str,
    line: int,
    thread: tuple[int, int, int],
    slot: int,
    heap: str,
    method: str,
    suitable: list[int],
    element: object = None,
) -> KernelIndexError:
    """The error of a thread whose bindless call ``method`` used ``slot`` of bindless array
    ``heap``, which holds no resource the call can use (``suitable``: the slots that do;
    ``element``: the element type a ``buffer_read`` reads)."""
    location = f" at {where}" if where else ""
    listed = ", ".join(map(str, suitable)) if suitable else "none"
    if method.startswith("texture"):
        needed = f"{method[7]}D image"
    else:
        needed = f"buffer of {element}" if method == "buffer_read" else "buffer"
    message = (
        f"kernel {kernel!r}: thread {thread} calls {heap}.{method} on slot {slot}, which "
        f"holds no {needed}{location}; the dispatch stopped. Slots it can use: {listed}. "
        f"Emplace a {needed} in that slot and update() the array"
    )
    return KernelIndexError(
        message, kernel=kernel, line=line, thread=thread, index=slot, size=-1, buffer=heap
    )


def non_finite_error(
    kernel: str,
    where: str,
    line: int,
    thread: tuple[int, int, int],
    index: int,
    buffer: str,
    value: float,
) -> KernelNonFiniteError:
    """The error of a thread that wrote a NaN or an infinity with ``checks="nan"``."""
    location = f" at {where}" if where else ""
    message = (
        f"kernel {kernel!r}: thread {thread} writes {value!r} to {buffer}[{index}]"
        f"{location}; checks='nan' requires finite values, so the dispatch stopped. Look "
        f"for a division by zero, sqrt/log of a negative number or an overflow, or declare "
        f"the kernel with checks=True to allow non-finite values"
    )
    return KernelNonFiniteError(
        message, kernel=kernel, line=line, thread=thread, index=index, buffer=buffer, value=value
    )


def fault_error(
    kernel: str, block: tuple[int, int, int], number: float, address: int, checked: bool
) -> KernelFaultError:
    """The error of a launch stopped by the fault guard: signal ``number`` at ``address`` in
    the block of threads starting at thread ``block``."""
    try:
        name = signal.Signals(int(number)).name
    except (ValueError, OverflowError):  # not a signal: a record from elsewhere
        name = f"signal {number}"
    if checked:
        advice = (
            "The kernel's indices are checked, so this is a bug in luisa_nb: please report "
            "it with the kernel's source"
        )
    else:
        advice = (
            "With checks=False nothing keeps an index inside its buffer: run the kernel with "
            "checks=True to find the thread and the index. Writes out of range before the "
            "fault may have changed other memory of this process"
        )
    message = (
        f"kernel {kernel!r}: a thread of the block starting at thread {block} touched memory "
        f"it may not ({name} at address {address:#x}); the dispatch stopped. {advice}"
    )
    return KernelFaultError(message, kernel=kernel, block=block, signal=name, address=address)
