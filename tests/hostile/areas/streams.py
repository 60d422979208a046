"""Streams, events, callbacks and threads: callbacks that raise or call back into the
runtime, events of the wrong kind or device, Ctrl-C while a callback or event blocks, and
many threads submitting, synchronizing, closing and destroying at once."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import numpy as np

import luisa_nb as lnb
from luisa_nb.errors import CommandFailedError, LuisaNbError
from tests.kernels.checked_kernels import spin_forever

from .. import kernel_functions as functions
from ..cases import Case, case
from ..devices import backends, own_device, shared_device
from ..interrupts import ctrl_c_after
from ..oracles import expect, expect_equal_arrays, expect_error, fail
from ..thread_storms import THREAD_SCENARIOS, run_scenario
from ..values import sample_values

SIZE = 256
PROMPT_SECONDS = 5.0


class _RaisingStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("this exception cannot be printed")


class _NotAnException(BaseException):
    """A BaseException that is neither an Exception nor an exit."""


CALLBACK_ERRORS: dict[str, Callable[[], BaseException]] = {
    "ValueError": lambda: ValueError("from the callback"),
    "KeyboardInterrupt": KeyboardInterrupt,
    "SystemExit": lambda: SystemExit(3),
    "GeneratorExit": GeneratorExit,
    "MemoryError": MemoryError,
    "an exception whose str() raises": _RaisingStr,
    "a BaseException subclass": _NotAnException,
    "a luisa_nb error": lambda: lnb.LuisaNbError("from the callback"),
}
WAITS_IN_CALLBACKS = (
    "stream.synchronize()", "device.synchronize()", "device.close()",
    "buffer.numpy() on the callback's stream", "copy_to(sync=True) on the callback's stream",
    "event.synchronize() of a later signal", "stream.scope()",
)  # fmt: skip
"""Calls from a callback that would wait for the callback itself: each must fail in the
callback with a luisa_nb error, which the next synchronize() reports."""
CALLS_IN_CALLBACKS = (
    "submit an upload", "add_callback", "device.info", "stream.pending", "create_buffer",
    "create_stream", "synchronize another stream", "signal an event", "destroy a buffer",
    "record a trace", "dispatch a kernel",
)  # fmt: skip
"""Calls from a callback that must simply work."""
EVENT_MISUSES = ("wait(3)", "signal(None)", "wait('event')", "signal(a stream)")


def _stream_works(device: lnb.Device, stream: lnb.Stream) -> None:
    """The oracle after a failure: ``stream`` still uploads and downloads correctly."""
    buffer = device.create_buffer(SIZE)
    values = sample_values(np.float32, SIZE, seed=7)
    buffer.copy_from(values, stream=stream)
    expect_equal_arrays(buffer.numpy(stream=stream), values, "a round trip after the failure")


def callback_raises(backend: str, kind: str) -> None:
    device = shared_device(backend)
    stream = device.create_stream()
    error = CALLBACK_ERRORS[kind]()

    def callback() -> None:
        raise error

    stream.add_callback(callback)
    try:
        stream.synchronize()
    except CommandFailedError as failed:
        reported = [failure[2] for failure in failed.failures]
        expect(error in reported, f"the failure names {reported}, not the callback's {kind}")
    else:
        fail(f"synchronize() after a callback raised {kind} reported nothing")
    _stream_works(device, stream)


def wait_in_callback(backend: str, call: str) -> None:
    with own_device(backend) as device:
        stream = device.default_stream
        buffer = device.create_buffer(SIZE)
        event = device.create_event()

        def scoped() -> None:
            with stream.scope():
                pass

        calls = {
            "stream.synchronize()": stream.synchronize,
            "device.synchronize()": device.synchronize,
            "device.close()": device.close,
            "buffer.numpy() on the callback's stream": buffer.numpy,
            "copy_to(sync=True) on the callback's stream": lambda: buffer.copy_to(
                np.zeros(SIZE, np.float32), sync=True
            ),
            "event.synchronize() of a later signal": event.synchronize,
            "stream.scope()": scoped,
        }
        stream.add_callback(calls[call])
        stream.signal(event)
        try:
            stream.synchronize()
        except CommandFailedError as failed:
            inner = failed.failures[0][2]
            if not isinstance(inner, LuisaNbError):
                raise inner from failed
            return
        fail(f"{call} in a callback on the stream it waits for returned without an error")


def call_in_callback(backend: str, call: str) -> None:
    callback_chain(backend, (call,))


def callback_chain(backend: str, calls: tuple[str, ...]) -> None:
    """A stream whose callbacks each call back into the runtime (``calls``, from
    :data:`CALLS_IN_CALLBACKS`): every call works, the callbacks run in order, and what
    they submitted runs before the next synchronize() returns."""
    device = shared_device(backend)
    stream = device.create_stream()
    other = device.create_stream()
    buffer = device.create_buffer(SIZE)
    buffer.fill(0.0, stream=stream)
    values = sample_values(np.float32, SIZE, seed=3)
    ran: list[int] = []
    nested: list[int] = []

    def record_a_trace() -> None:
        with lnb.trace():
            other.add_callback(lambda: None)

    uses = {
        "submit an upload": lambda: buffer.copy_from(values, stream=stream),
        "add_callback": lambda: stream.add_callback(lambda: nested.append(1)),
        "device.info": lambda: device.info["staging"],
        "stream.pending": lambda: stream.pending,
        "create_buffer": lambda: device.create_buffer(4),
        "create_stream": device.create_stream,
        "synchronize another stream": other.synchronize,
        "signal an event": lambda: other.signal(device.create_event()),
        "destroy a buffer": device.create_buffer(4).destroy,
        "record a trace": record_a_trace,
        "dispatch a kernel": lambda: functions.ADD_ONE(buffer, dispatch_size=SIZE, stream=stream),
    }
    for position, call in enumerate(calls):
        stream.add_callback(
            lambda position=position, call=call: (uses[call](), ran.append(position))
        )
    stream.synchronize()
    stream.synchronize()  # what the callbacks submitted has run too
    expect(ran == list(range(len(calls))), f"the callbacks ran as {ran}, not in order once each")
    expect(len(nested) == calls.count("add_callback"), "a callback added by a callback did not run")
    expected = np.zeros(SIZE, np.float32)
    for call in calls:
        if call == "submit an upload":
            expected = values.copy()
        elif call == "dispatch a kernel":
            expected = expected + 1
    expect_equal_arrays(buffer.numpy(stream=stream), expected, f"the buffer after {calls}")


def event_misuse(backend: str, misuse: str) -> None:
    stream = shared_device(backend).create_stream()
    calls = {
        "wait(3)": lambda: stream.wait(3),
        "signal(None)": lambda: stream.signal(None),
        "wait('event')": lambda: stream.wait("event"),
        "signal(a stream)": lambda: stream.signal(stream),
    }
    with expect_error(misuse):
        calls[misuse]()


def unsignalled_event(backend: str) -> None:
    event = shared_device(backend).create_event()
    event.synchronize()  # nothing to wait for: returns at once


def interrupt_callback(backend: str) -> None:
    device = shared_device(backend)
    stream = device.create_stream()
    stream.add_callback(lambda: time.sleep(2.5))
    with ctrl_c_after(0.3) as interrupted:
        stream.synchronize()
    expect(interrupted.seconds is not None, "synchronize() was not interrupted")
    expect(interrupted.seconds < PROMPT_SECONDS, f"Ctrl-C took {interrupted.seconds:.1f} s")
    _stream_works(device, stream)


def interrupt_event_wait(backend: str) -> None:
    device = shared_device(backend)
    stream = device.create_stream()
    out = device.create_buffer(SIZE)
    event = device.create_event()
    stream.submit([lnb.kernel(spin_forever).dispatch_async(SIZE, out)])
    stream.signal(event)
    with ctrl_c_after(0.3) as interrupted:
        event.synchronize()
    expect(interrupted.seconds is not None, "event.synchronize() was not interrupted")
    expect(interrupted.seconds < PROMPT_SECONDS, f"Ctrl-C took {interrupted.seconds:.1f} s")
    with ctrl_c_after(0.3):
        stream.synchronize()  # cancels the kernel if the first Ctrl-C did not
    _stream_works(device, stream)


def threads(backend: str, scenario: str, count: int) -> None:
    run_scenario(backend, scenario, count)


def catalogue() -> list[Case]:
    cases = []
    for backend in backends():
        cases += [
            case(callback_raises, f"a callback raises {kind} on {backend}", backend, kind)
            for kind in CALLBACK_ERRORS
        ]
        cases += [
            case(wait_in_callback, f"{call} in a callback on {backend}", backend, call,
                 isolated=True)
            for call in WAITS_IN_CALLBACKS
        ]  # fmt: skip
        cases += [
            case(call_in_callback, f"{call} in a callback on {backend}", backend, call)
            for call in CALLS_IN_CALLBACKS
        ]
        cases += [
            case(event_misuse, f"{misuse} on {backend}", backend, misuse)
            for misuse in EVENT_MISUSES
        ]
        cases.append(case(unsignalled_event, f"an unsignalled event on {backend}", backend))
        cases.append(
            case(interrupt_callback, f"Ctrl-C while a callback sleeps on {backend}", backend,
                 timeout=15)
        )  # fmt: skip
        cases.append(
            case(interrupt_event_wait, f"Ctrl-C in event.synchronize() on {backend}", backend,
                 timeout=15, isolated=True)
        )  # fmt: skip
        cases += [
            case(threads, f"{count} threads: {scenario} on {backend}", backend, scenario, count,
                 timeout=30)
            for scenario in THREAD_SCENARIOS
            for count in (2, 16)
        ]  # fmt: skip
    return cases


def variant(rng: random.Random) -> Case:
    backend = rng.choice(backends())
    choice = rng.randrange(3)
    if choice == 0:
        scenario, count = rng.choice(THREAD_SCENARIOS), rng.randint(2, 24)
        return case(threads, f"{count} threads: {scenario} on {backend}", backend, scenario,
                    count, timeout=30)  # fmt: skip
    if choice == 1:
        call = rng.choice(CALLS_IN_CALLBACKS)
        return case(call_in_callback, f"{call} in a callback on {backend}", backend, call)
    kind = rng.choice(list(CALLBACK_ERRORS))
    return case(callback_raises, f"a callback raises {kind} on {backend}", backend, kind)
