"""Traced uploads into real luisa-python buffers, in every shape the C upload
(luisa_nb/runtime/_luisa_uploads.c) takes or leaves to Python; prints one JSON line: what
the trace recorded of each upload (the bytes at enqueue and the bytes sent), what the
buffers hold after, the hazards found, and how many uploads went through Python.
`python upload_bytes.py` (set LUISA_NB_PYTHON_RECORDER=1 for the Python path)."""

import json
import sys

import numpy as np

import luisa
import luisa_nb as lnb
from luisa_nb.runtime import real_luisa

python_uploads = []
UPLOAD_CODE = real_luisa.Instrumentation.upload.__code__


def count_python_uploads(frame, event, argument):
    """Counts the uploads made in Python (a profile hook adds no frame, which would change
    the names the trace gives host arrays)."""
    if event == "call" and frame.f_code is UPLOAD_CODE:
        python_uploads.append(1)


lnb.instrument_luisa()
luisa.init("cpu", support_gui=False)
N = 64


def values(capture, dtype):
    """The first and last two values of captured bytes."""
    held = np.frombuffer(trace.captured_bytes(capture).tobytes(), dtype)
    return [*held[:2].tolist(), *held[-2:].tolist()]


def program():
    """Uploads of one array changed between them, of other arrays and views, of other
    dtypes and shapes, on two streams, by position and by keyword."""
    a, b = luisa.Buffer(N, float), luisa.Buffer(N, float)
    ints = luisa.Buffer(N, int)
    other = luisa.globalvars.device.create_stream(False)
    h = np.zeros(N, np.float32)
    g = np.full(N, 2.0, np.float32)
    for value in (1.0, 3.0):  # the same array, written between its uploads
        a.copy_from(h)
        h[:] = value
        a.copy_from(h)
    h[0] = 9.0
    a.copy_from(h)
    b.copy_from(g)  # another buffer, then another array into a: a's readback goes first
    a.copy_from(g)
    a.copy_from(h)
    wide = np.arange(2 * N, dtype=np.float32)
    a.copy_from(wide[::2])  # not contiguous: its bytes are a copy
    wide[0] = -1.0
    a.copy_from(wide[::2])
    square = np.arange(N, dtype=np.float32).reshape(8, 8)
    b.copy_from(square)  # two axes, contiguous
    square[7, 7] = 100.0
    b.copy_from(square)
    b.copy_from(np.asfortranarray(square))  # contiguous, not in C order
    counts = np.arange(N, dtype=np.int32)
    ints.copy_from(counts)
    counts[-1] = -7
    ints.copy_from(counts)
    frozen = np.full(N, 5.0, np.float32)
    frozen.flags.writeable = False
    b.copy_from(frozen)
    b.copy_from(frozen)
    a.copy_from(h, False, other)  # the other stream, by position
    h[1] = 11.0
    a.copy_from(h, False, other)
    b.copy_from(g, stream=other)  # by keyword
    luisa.synchronize(other)
    a.copy_from(h, sync=True)
    luisa.synchronize()
    return {
        "a": a.numpy()[:4].tolist(),
        "b": b.numpy()[-4:].tolist(),
        "ints": ints.numpy()[-2:].tolist(),
    }


with lnb.trace() as trace:
    sys.setprofile(count_python_uploads)
    held = program()
    sys.setprofile(None)
buffer_ids = sorted(trace.buffers)
uploads = sorted(
    (command for command in trace.commands if command.kind.value == "upload"),
    key=lambda command: command.id,
)
print(
    json.dumps(
        {
            "uploads": [
                {
                    "buffer": buffer_ids.index(command.device_ranges[0].buffer),
                    "stream": command.stream,
                    "host": [command.host.name, command.host.dtype, list(command.host.shape)],
                    "enqueued": values(command.enqueue_capture, command.host.dtype),
                    "sent": values(command.data_capture, command.host.dtype),
                    "same_bytes": command.enqueue_capture is command.data_capture,
                }
                for command in uploads
            ],
            "held": held,
            "hazards": sorted(hazard.kind.value for hazard in trace.hazards),
            "python_uploads": len(python_uploads),
            "native": real_luisa.NATIVE,
        }
    )
)
