"""What a stream's callback may wait for.

A callback runs on its stream's worker thread. While it waits for its own device, that
stream's later work cannot run, and other streams of the device may wait for that work:
such a wait would never end, so it raises :class:`StreamError` instead (and the callback
fails as any raising callback does). Waits for other devices are noted while they last,
so that callbacks of two devices never wait for each other. A submission made in a
callback does not wait for staging memory either (``SubmitStaging.submit``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from luisa_nb.errors import StreamError

if TYPE_CHECKING:
    from luisa_nb.runtime.device import Device
    from luisa_nb.runtime.stream import Stream


class _CallbackThread(threading.local):
    stream: Stream | None = None
    """The stream whose callback this thread (that stream's worker) is running."""


callback_thread = _CallbackThread()
_callback_waits: list[tuple[Device, Device]] = []
"""``(device of a callback's stream, device it waits for)`` of each wait in progress in a
callback."""
_callback_waits_lock = threading.Lock()


def wait_in_callback(device: Device, wait: str, function: Callable[[], object]) -> None:
    """Call ``function``, a wait for work of ``device`` that ``wait`` names, in a callback.

    A callback runs on its stream's worker, so a wait for its own device would never end:
    the stream's later work cannot run meanwhile, and the device's other streams may wait
    for that work (an event). Neither would a wait that closes a loop of callbacks
    waiting for each other's devices. Both raise :class:`StreamError`, before anything is
    submitted; any other wait is noted while it lasts."""
    stream = callback_thread.stream
    waiter = stream.device
    with _callback_waits_lock:
        if _leads_to(device, waiter):
            raise StreamError(_callback_wait_message(stream, device, wait))
        _callback_waits.append((waiter, device))
    callback_thread.stream = None  # the wait itself runs as on the host
    try:
        function()
    finally:
        callback_thread.stream = stream
        with _callback_waits_lock:
            _callback_waits.remove((waiter, device))


def _leads_to(start: Device, goal: Device) -> bool:
    """Whether ``start`` is ``goal``, or callbacks of ``start`` wait for it (or for a
    device that leads to it)."""
    seen: set[Device] = set()
    devices = [start]
    while devices:
        device = devices.pop()
        if device is goal:
            return True
        if device not in seen:
            seen.add(device)
            devices += [target for waiter, target in _callback_waits if waiter is device]
    return False


def _callback_wait_message(stream: Stream, device: Device, wait: str) -> str:
    if device is stream.device:
        reason = (
            f"a callback cannot wait for its own device {device.name!r}, since it holds its "
            f"stream's worker: the stream's later work cannot run until it returns, and other "
            f"streams may be waiting for that work"
        )
    else:
        reason = (
            f"a callback of device {device.name!r} is waiting for device "
            f"{stream.device.name!r} meanwhile, so each would wait for the other"
        )
    return (
        f"{wait} was called in a callback on stream {stream.name!r} and would never return; "
        f"{reason}. A callback runs after the work added before it, so it needs no wait: to "
        f"read results in it, add their downloads before it (copy_to(array, sync=False)); "
        f"to follow another stream, call stream.wait(event) before add_callback(); and "
        f"synchronize from the host"
    )


def in_callback() -> bool:
    """Whether this thread is running a stream's callback."""
    return callback_thread.stream is not None
