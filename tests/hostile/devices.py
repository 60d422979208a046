"""Devices the cases of one worker share, and putting the shared state back after a case.

A remote device starts a server process (about a second), so each worker keeps one device
per backend for the cases that do not close theirs; a case that needs a device of its own
(to close it, or to break it) makes one with :func:`own_device`. A device a case cannot
get is :class:`SetupError`, never a clean outcome; after each case every shared device
must still round-trip data, or the case is silent (and the device is replaced).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import cache

import numpy as np

import luisa_nb as lnb
from luisa_nb.backends import available_backends
from luisa_nb.errors import CommandFailedError, LuisaNbError
from luisa_nb.luisa import session
from luisa_nb.recording import recorder
from luisa_nb.runtime import Device, default_device
from luisa_nb.runtime.defaults import forget_default_device

from .outcomes import OracleFailure, first_line

RUNTIME_BACKENDS = ("cpu", "dx", "metal", "remote")


@cache
def backends() -> tuple[str, ...]:
    """The backends the cases run on: the four of the runtime, and cuda where it loads."""
    return RUNTIME_BACKENDS + (("cuda",) if "cuda" in available_backends() else ())


class SetupError(RuntimeError):
    """A case could not get the device it runs on: it did not run (a raw outcome, so that
    it shows)."""


def _create(backend: str, **options: object) -> Device:
    try:
        return lnb.create_device(backend, **options)
    except LuisaNbError as error:
        raise SetupError(f"setup: no {backend} device: {first_line(error)}") from error


_shared: dict[str, Device] = {}


def shared_device(backend: str) -> Device:
    """This worker's device of ``backend`` (made again if a case closed it)."""
    device = _shared.get(backend)
    if device is None or device.closed:
        device = _shared[backend] = _create(backend)
    return device


@contextlib.contextmanager
def own_device(backend: str, **options: object) -> Iterator[Device]:
    """A new device of ``backend`` for one case, closed when the case ends."""
    device = _create(backend, **options)
    try:
        yield device
    finally:
        with contextlib.suppress(LuisaNbError):
            device.close()


def _check_works(backend: str, device: Device) -> None:
    """``device`` still uploads and downloads after a case (its failures dropped); else it
    is replaced and the case is silent."""
    values = np.arange(8, dtype=np.float32)
    try:
        with contextlib.suppress(CommandFailedError):
            device.synchronize()
        buffer = device.create_buffer(8)
        buffer.copy_from(values)
        works = np.array_equal(buffer.numpy(), values)
    except Exception as error:
        works, reason = False, first_line(error)
    else:
        reason = "a round trip came back wrong"
    if not works:
        del _shared[backend]
        with contextlib.suppress(Exception):
            device.close()
        raise OracleFailure(f"the {backend} device stopped working after the case: {reason}")


def settle() -> None:
    """Put the state cases share back: stop a trace left recording, end the
    ``luisa_nb.luisa`` session, forget a default device that was closed, and check that
    every shared device still works (see :func:`_check_works`)."""
    trace = recorder.active_trace()
    if trace is not None:
        recorder.stop(trace)
    with contextlib.suppress(LuisaNbError):
        session.close()
    current = default_device()
    if current.closed:
        forget_default_device(current)
    for backend, device in list(_shared.items()):
        if device.closed:
            del _shared[backend]
        else:
            _check_works(backend, device)
