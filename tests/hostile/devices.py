"""Devices the cases of one worker share, and putting the shared state back after a case.

A remote device starts a server process (about a second), so each worker keeps one device
per backend for the cases that do not close theirs; a case that needs a device of its own
(to close it, or to break it) makes one with :func:`own_device`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import cache

import luisa_nb as lnb
from luisa_nb.backends import available_backends
from luisa_nb.errors import LuisaNbError
from luisa_nb.luisa import session
from luisa_nb.recording import recorder
from luisa_nb.runtime import Device, default_device
from luisa_nb.runtime.device import forget_default_device

RUNTIME_BACKENDS = ("cpu", "dx", "metal", "remote")


@cache
def backends() -> tuple[str, ...]:
    """The backends the cases run on: the four of the runtime, and cuda where it loads."""
    return RUNTIME_BACKENDS + (("cuda",) if "cuda" in available_backends() else ())


_shared: dict[str, Device] = {}


def shared_device(backend: str) -> Device:
    """This worker's device of ``backend`` (made again if a case closed it)."""
    device = _shared.get(backend)
    if device is None or device.closed:
        device = _shared[backend] = lnb.create_device(backend)
    return device


@contextlib.contextmanager
def own_device(backend: str, **options: object) -> Iterator[Device]:
    """A new device of ``backend`` for one case, closed when the case ends."""
    device = lnb.create_device(backend, **options)
    try:
        yield device
    finally:
        with contextlib.suppress(LuisaNbError):
            device.close()


def settle() -> None:
    """Put the state cases share back: stop a trace left recording, end the
    ``luisa_nb.luisa`` session, synchronize the shared devices (dropping their failures)
    and forget a default device that was closed."""
    trace = recorder.active_trace()
    if trace is not None:
        recorder.stop(trace)
    with contextlib.suppress(LuisaNbError):
        session.close()
    for device in list(_shared.values()):
        with contextlib.suppress(LuisaNbError):
            device.synchronize()
    current = default_device()
    if current.closed:
        forget_default_device(current)
