"""The program of LuisaCompute issue #143, written for luisa_nb.

One command list uploads ``z_data`` into ``z``, adds ``x + y`` into ``z`` with a kernel,
downloads ``z`` back into ``z_data``, uploads ``z_data`` into ``z`` again and copies
``z`` into ``x``. In stream order ``x`` ends as ``i + 1000 i``; a backend that stages
uploads at submission sends the old ``z_data`` (all 123.0) the second time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.kernels import dispatch_id
from luisa_nb.recording.trace import DEFAULT_CAPTURE_BYTES
from luisa_nb.runtime import Buffer, Device, kernel

SEED_SIZE = 1024
SEED_FILL = 123.0


def expected_rows(size: int = SEED_SIZE) -> np.ndarray:
    """What stream order says both ``z_data`` and ``x`` hold at the end."""
    index = np.arange(size, dtype=np.float32)
    return index + np.float32(1000.0) * index


@dataclass
class SeedRun:
    """The two rows the seed prints, and the trace of the command list."""

    z_data: np.ndarray
    x: np.ndarray
    trace: AnalyzedTrace


def _make_vecadd(x: Buffer, y: Buffer):
    @kernel
    def vecadd(buf_z):
        tid = dispatch_id().x
        buf_z.write(tid, x.read(tid) + y.read(tid))

    return vecadd


def run_seed(
    device: Device,
    *,
    size: int = SEED_SIZE,
    capture: str = "head",
    capture_bytes: int = DEFAULT_CAPTURE_BYTES,
) -> SeedRun:
    """Run the seed program on ``device`` under a trace."""
    x = device.create_buffer(size, np.float32, name="x")
    y = device.create_buffer(size, np.float32, name="y")
    z = device.create_buffer(size, np.float32, name="z")
    x.copy_from(np.arange(size, dtype=np.float32))
    y.copy_from(np.float32(1000.0) * np.arange(size, dtype=np.float32))
    vecadd = _make_vecadd(x, y)
    z_data = np.full(size, SEED_FILL, np.float32)
    stream = device.default_stream
    with AnalyzedTrace(capture=capture, capture_bytes=capture_bytes) as trace:
        stream.submit(
            [
                z.copy_from_async(z_data),
                vecadd.dispatch_async(size, z),
                z.copy_to_async(z_data),
                z.copy_from_async(z_data),
                z.copy_to_buffer_async(x),
            ]
        )
        stream.synchronize()
    return SeedRun(z_data=z_data, x=x.numpy(), trace=trace)
