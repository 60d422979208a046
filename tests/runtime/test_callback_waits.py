"""A callback runs on its stream's worker: a wait for its own device fails instead of
hanging for good, and waits for other devices work, unless callbacks of two devices wait
for each other. The timeouts turn a hang into a failure."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers.callback_waits import WAITS, check_wait_in_callback_fails

import luisa_nb as lnb
from luisa_nb.errors import CommandFailedError, StreamError

BACKENDS = ["cpu", "dx", "metal", "remote"]


@pytest.fixture(params=BACKENDS)
def backend_device(request):
    """A device of each backend, left open: closing one whose stream hangs would hang."""
    return lnb.create_device(request.param)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("wait", WAITS)
def test_a_callback_that_waits_for_its_device_fails_and_the_stream_goes_on(backend_device, wait):
    check_wait_in_callback_fails(backend_device, wait)


@pytest.mark.timeout(60)
def test_a_callback_may_wait_for_another_device():
    first, second = lnb.create_device("cpu"), lnb.create_device("dx")
    values = np.arange(8, dtype=np.float32)
    buffer = second.create_buffer(8, np.float32)
    result = np.zeros(8, np.float32)
    seen = []
    buffer.copy_from(values)
    buffer.copy_to(result, sync=False)
    first.default_stream.add_callback(lambda: (second.synchronize(), seen.append(result.copy())))
    first.synchronize()
    np.testing.assert_array_equal(seen[0], values)


@pytest.mark.timeout(60)
def test_callbacks_of_two_devices_never_wait_for_each_other():
    """Each device's callback waits for the other device: the one that starts waiting
    second fails (whichever it is), and the other's wait then ends (raising that failure
    when it synchronized the failed callback's stream)."""
    first, second = lnb.create_device("cpu"), lnb.create_device("cpu")
    release = threading.Event()
    second.default_stream.add_callback(release.wait)  # both callbacks are queued first
    second.default_stream.add_callback(first.default_stream.synchronize)
    first.default_stream.add_callback(second.default_stream.synchronize)
    release.set()
    failures = []
    for device in (first, second):
        try:
            device.synchronize()
        except CommandFailedError as error:
            failures.append(error)
    assert len(failures) == 1, failures
    cause = failures[0].__cause__
    while isinstance(cause, CommandFailedError):
        cause = cause.__cause__
    assert isinstance(cause, StreamError), failures
    assert "is waiting for device 'cpu' meanwhile, so each would wait for the other" in str(cause)


@pytest.mark.timeout(60)
def test_an_upload_in_a_callback_does_not_wait_for_the_staging_heap():
    """The heap holds a quarter of the upload, so it goes in chunks, each of which
    would wait for the previous one to run: on the worker that runs the callback."""
    device = lnb.create_device("dx", staging_capacity=4096)
    buffer = device.create_buffer(4096, np.float32)
    values = np.arange(4096, dtype=np.float32)
    device.default_stream.add_callback(lambda: buffer.copy_from(values))
    device.synchronize()
    np.testing.assert_array_equal(buffer.numpy(), values)
