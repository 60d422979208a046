"""Many threads on one device at once, as the runtime promises they may: each on a stream
of its own, or on a shared stream under a lock; and, while they work, a device that is
synchronized, closed, or has a buffer destroyed."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np

import luisa_nb as lnb
from luisa_nb.errors import LuisaNbError

from .devices import own_device, shared_device
from .oracles import OracleFailure, expect, expect_equal_arrays
from .values import sample_values

SIZE = 1024
ROUNDS = 5
Bodies = list[Callable[[], None]]


def _round_trips(device: lnb.Device, seed: int, lock: threading.Lock | None = None) -> None:
    """Upload and download ROUNDS arrays on a stream of this thread (or, under ``lock``,
    the device's default stream), checking each."""
    held = lock or contextlib.nullcontext()
    stream = device.default_stream if lock else device.create_stream()
    buffer = device.create_buffer(SIZE)
    for round_number in range(ROUNDS):
        values = sample_values(np.float32, SIZE, seed=seed * 100 + round_number)
        with held:
            buffer.copy_from(values, stream=stream)
        with held:
            received = buffer.numpy(stream=stream)
        expect_equal_arrays(received, values, f"thread {seed}, round {round_number}")


def _own_streams(device: lnb.Device, count: int) -> Bodies:
    return [lambda seed=seed: _round_trips(device, seed) for seed in range(count)]


def _one_stream(device: lnb.Device, count: int) -> Bodies:
    lock = threading.Lock()
    return [lambda seed=seed: _round_trips(device, seed, lock) for seed in range(count)]


def _synchronizers(device: lnb.Device, count: int) -> Bodies:
    def synchronize() -> None:
        for _ in range(4 * ROUNDS):
            device.synchronize()

    workers = _own_streams(device, count - count // 2)
    return [*workers, *[synchronize] * (count // 2)]


def _callbacks(device: lnb.Device, count: int) -> Bodies:
    def add(seed: int) -> None:
        stream = device.create_stream()
        called: list[int] = []
        for number in range(10):
            stream.add_callback(lambda number=number: called.append(number))
        stream.synchronize()
        expect(called == list(range(10)), f"thread {seed}'s callbacks ran as {called}")

    return [lambda seed=seed: add(seed) for seed in range(count)]


def _events(device: lnb.Device, count: int) -> Bodies:
    bodies = []
    for pair in range(max(1, count // 2)):
        buffer = device.create_buffer(SIZE)
        event = device.create_event()
        signalled = threading.Event()
        values = sample_values(np.float32, SIZE, seed=pair)

        def produce(buffer=buffer, event=event, signalled=signalled, values=values) -> None:
            stream = device.create_stream()
            buffer.copy_from(values, stream=stream)
            stream.signal(event)
            signalled.set()

        def consume(buffer=buffer, event=event, signalled=signalled, values=values) -> None:
            stream = device.create_stream()
            signalled.wait()
            stream.wait(event)
            received = np.zeros(SIZE, np.float32)
            buffer.copy_to(received, stream=stream)
            expect_equal_arrays(received, values, "download ordered by an event")

        bodies += [produce, consume]
    return bodies


def _close_meanwhile(device: lnb.Device, count: int) -> Bodies:
    def close() -> None:
        time.sleep(0.01)
        device.close()

    return [*_own_streams(device, count - 1), close]


def _destroy_meanwhile(device: lnb.Device, count: int) -> Bodies:
    shared = device.create_buffer(SIZE * count)

    def use(seed: int) -> None:
        part = shared.view(seed * SIZE, (seed + 1) * SIZE)
        for round_number in range(ROUNDS):
            values = sample_values(np.float32, SIZE, seed=seed * 100 + round_number)
            part.copy_from(values)
            expect_equal_arrays(part.numpy(), values, f"view {seed}, round {round_number}")

    def destroy() -> None:
        time.sleep(0.005)
        shared.destroy()

    return [*(lambda seed=seed: use(seed) for seed in range(count - 1)), destroy]


SCENARIOS: dict[str, Callable[[lnb.Device, int], Bodies]] = {
    "own streams": _own_streams,
    "one stream with a lock": _one_stream,
    "synchronize while others submit": _synchronizers,
    "callbacks": _callbacks,
    "events between streams": _events,
    "close while others submit": _close_meanwhile,
    "destroy while others submit": _destroy_meanwhile,
}
THREAD_SCENARIOS = tuple(SCENARIOS)
DISRUPTIVE = frozenset({"close while others submit", "destroy while others submit"})
"""Scenarios where a thread may get a luisa_nb error (its device closed, its buffer
destroyed); in the others every call must work."""


def _run(bodies: Bodies) -> list[BaseException]:
    """Run each body on a thread of its own, all at once; what they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(bodies))

    def run(body: Callable[[], None]) -> None:
        try:
            start.wait()
            body()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(body,), daemon=True) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@contextlib.contextmanager
def _device_for(backend: str, scenario: str) -> Iterator[lnb.Device]:
    if scenario == "close while others submit":
        with own_device(backend) as device:
            yield device
    else:
        yield shared_device(backend)


def run_scenario(backend: str, scenario: str, count: int) -> None:
    """Run ``scenario`` with ``count`` threads; raise the first error no scenario allows."""
    with _device_for(backend, scenario) as device:
        errors = _run(SCENARIOS[scenario](device, count))
    for error in errors:
        if isinstance(error, OracleFailure):
            raise error
        if not isinstance(error, LuisaNbError):
            raise error
        if scenario not in DISRUPTIVE:
            raise OracleFailure(f"a thread's valid call was refused: {error}") from error
