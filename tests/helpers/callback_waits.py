"""A callback that waits for its own device, on any backend (a test helper, not part of
the package): the runtime's tests run it on every local backend and remote, the CUDA
tests on the CuPy stand-in."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import CommandFailedError, LuisaNbError, StreamError

WAITS = (
    "stream.synchronize()",
    "device.synchronize()",
    "device.close()",
    "other_stream.synchronize()",
    "event.synchronize()",
    "buffer.numpy()",
)
"""The waits a callback on a device's default stream tries, each on that device."""


def check_wait_in_callback_fails(device, wait: str) -> None:
    """A callback on ``device``'s default stream makes the wait ``wait`` (the event is
    signalled after the callback, on the same stream). The next ``synchronize()`` raises
    :class:`CommandFailedError` caused by a :class:`StreamError` that says what to do
    instead, the device stays open, and the stream then runs new commands correctly."""
    stream = device.default_stream
    other = device.create_stream("other")
    event = device.create_event()
    buffer = device.create_buffer(16, np.float32)
    calls = {
        "stream.synchronize()": stream.synchronize,
        "device.synchronize()": device.synchronize,
        "device.close()": device.close,
        "other_stream.synchronize()": other.synchronize,
        "event.synchronize()": event.synchronize,
        "buffer.numpy()": buffer.numpy,
    }
    stream.add_callback(calls[wait])
    stream.signal(event)
    with pytest.raises(CommandFailedError) as raised:
        stream.synchronize()
    cause = raised.value.__cause__
    assert isinstance(cause, StreamError) and isinstance(cause, LuisaNbError)
    assert isinstance(cause, RuntimeError)
    message = str(cause)
    assert "was called in a callback on stream 'default' and would never return" in message
    assert f"cannot wait for its own device {device.name!r}" in message
    assert "stream.wait(event) before add_callback()" in message  # what to do instead
    assert not device.closed
    values = np.arange(16, dtype=np.float32)
    buffer.copy_from(values)
    np.testing.assert_array_equal(buffer.numpy(), values)
    event.synchronize()
    device.synchronize()
