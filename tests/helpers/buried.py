"""A render-loop-like program of 5,000 commands with one stale upload buried in it: a test
helper for the reproducer (a real run on luisa_nb, not records made by hand)."""

from __future__ import annotations

import numpy as np

from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.kernels import dispatch_id
from luisa_nb.runtime import Device, kernel

SIZE = 256
LIST_LENGTH = 10
BURIED_LIST = 271


@kernel
def brighten(values):
    i = dispatch_id().x
    values.write(i, values.read(i) * 0.5 + 1.0)


def buried_stale_upload(device: Device, commands: int = 5000) -> AnalyzedTrace:
    """``commands`` commands in lists of 10, each list synchronized before the next reuses
    its host arrays, except list :data:`BURIED_LIST`, which downloads into ``history`` and
    uploads ``history`` in the same list: one ``STALE_UPLOAD`` under ``staging="submit"``."""
    names = ("color", "albedo", "accumulated", "previous")
    buffers = {name: device.create_buffer(SIZE, np.float32, name=name) for name in names}
    scene = np.linspace(0.0, 1.0, SIZE, dtype=np.float32)
    output = np.zeros(SIZE, np.float32)
    history = np.zeros(SIZE, np.float32)
    stream = device.default_stream
    with AnalyzedTrace() as trace:
        for number in range(commands // LIST_LENGTH):
            color, albedo = buffers["color"], buffers["albedo"]
            accumulated, previous = buffers["accumulated"], buffers["previous"]
            work = [
                albedo.copy_from_async(scene),
                color.copy_from_async(scene),
                brighten.dispatch_async(SIZE, color),
                brighten.dispatch_async(SIZE, albedo),
                color.copy_to_buffer_async(accumulated),
                brighten.dispatch_async(SIZE, accumulated),
                accumulated.copy_to_async(history),
            ]
            if number == BURIED_LIST:
                work += [previous.copy_from_async(history)]
            else:
                work += [brighten.dispatch_async(SIZE, previous)]
            work += [previous.copy_to_async(output), brighten.dispatch_async(SIZE, color)]
            stream.submit(work)
            stream.synchronize()
    return trace
