"""Ctrl-C in a worker: SIGINT to the main thread while a case waits, as a terminal sends
it (the test helper's :func:`interrupt_main_thread_after`), and how long the wait took to
give it back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass


@dataclass
class Interruption:
    """``seconds`` from Ctrl-C to the ``KeyboardInterrupt``; None if none came."""

    seconds: float | None = None


@contextmanager
def ctrl_c_after(delay: float) -> Iterator[Interruption]:
    """Send Ctrl-C after ``delay`` seconds and take the ``KeyboardInterrupt`` it causes in
    the block; no interrupt is left to land after the block."""
    from ..helpers.interrupts import interrupt_main_thread_after  # the worker runs in tests/..

    interruption = Interruption()
    sent = time.perf_counter() + delay
    timer = interrupt_main_thread_after(delay)
    try:
        yield interruption
    except KeyboardInterrupt:
        interruption.seconds = time.perf_counter() - sent
    finally:
        timer.cancel()
        with suppress(KeyboardInterrupt):
            timer.join()
            time.sleep(0.05)  # a signal sent as the block ended is raised here
