"""The device and stream that ``luisa.init()`` chose, as luisa-python keeps them."""

from __future__ import annotations

import atexit
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from luisa_nb.errors import NotInitializedError
from luisa_nb.kernels.type_system import set_host_luisa_types
from luisa_nb.recording.recorder import register_namer
from luisa_nb.runtime import Device, DeviceConfig, Stream, create_device, set_default_device
from luisa_nb.runtime.defaults import forget_default_device
from luisa_nb.runtime.stream import check_stream

if TYPE_CHECKING:
    from luisa_nb.recording.trace import Trace

DEVICE_VARIABLE = "LUISA_NB_DEVICE"
"""Names the device ``init()`` creates when the program names none, e.g. ``cpu:submit``."""

_device: Device | None = None
forced_device: DeviceConfig | None = None
"""A device name that wins over the one a program passes to ``init()`` (``luisa-nb run
--device``)."""


def init(backend_name: str | None = None) -> None:
    """Create the session's device unless one exists: :data:`forced_device`, else
    ``backend_name`` (a luisa_nb device name such as ``"cpu"``, ``"dx"`` or
    ``"cpu:submit"``), else ``$LUISA_NB_DEVICE``, else ``"cpu"``. It also becomes luisa_nb's
    default device, and host vectors follow luisa-python's types until :func:`close`
    (``int2(3) / int2(2) == int2(1, 1)``). At exit its streams are synchronized, as
    luisa-python's are."""
    global _device
    if _device is not None:
        return
    name = forced_device or backend_name or os.environ.get(DEVICE_VARIABLE) or "cpu"
    device = create_device(name)
    set_default_device(device)
    set_host_luisa_types(True)
    _device = device


def close() -> None:
    """Finish the session's work and forget its device; ``init()`` may then make another.
    A close the device refuses (in a callback of it) leaves the session as it was."""
    global _device
    device = _device
    if device is None:
        return
    try:
        device.close()
    finally:
        if device.closed:
            forget_default_device(device)
            set_host_luisa_types(False)
            _device = None


atexit.register(close)


def device() -> Device:
    if _device is None:
        raise NotInitializedError(
            "luisa_nb.luisa has no device yet; call luisa.init() (e.g. luisa.init('cpu')) first"
        )
    return _device


def stream(chosen: Stream | None = None, call: str = "luisa") -> Stream:
    """``chosen``, else the session's stream (its device's default stream); ``call``
    names the call whose ``stream`` argument ``chosen`` is, should it not be a stream."""
    if chosen is None:
        return device().default_stream
    check_stream(chosen, call)
    return chosen


def _note_api(trace: Trace, namespace: Mapping[str, object]) -> None:
    """Say that a trace's commands came through ``luisa_nb.luisa`` when some ran, or still
    wait, on the session's streams, so that its hints name luisa calls."""
    if _device is None:
        return
    streams = _device.streams
    waiting = {command.id for stream in streams for command in stream.pending}
    ran = {stream.id for stream in streams} & trace.streams.keys()
    if ran or waiting & {command.id for command in trace.metadata.pending}:
        trace.metadata.api = "luisa_nb.luisa"


register_namer(_note_api)
