"""A small real program for the timeline's overlays: two streams linked by an event, in
nested user ranges, with a kernel taking a scalar (a test helper, not part of the
package)."""

from __future__ import annotations

import time

import numpy as np

import luisa_nb as lnb

PAUSE = 0.03
"""Seconds the host sleeps between the signal and the wait (user Python time)."""


def streams_trace(pause: float = PAUSE) -> lnb.ViewableTrace:
    """The trace of: in range "step", range "produce" runs ``produce`` and downloads its
    result into ``result`` on stream "producer", then signals an event; the host sleeps
    ``pause`` seconds; stream "consumer" waits for the event and runs ``consume``. The
    device's default stream is never used, but ``dev.synchronize()`` waits for it too.
    The kernels are made anew, so that each trace records their preparation."""

    @lnb.kernel
    def produce(data, factor):
        i = lnb.dispatch_id().x
        data.write(i, factor * i)

    @lnb.kernel
    def consume(data, out):
        i = lnb.dispatch_id().x
        out.write(i, data.read(i) + 1.0)

    dev = lnb.create_device("cpu")
    producer = dev.create_stream("producer")
    consumer = dev.create_stream("consumer")
    data = dev.create_buffer(64, np.float32, name="data")
    out = dev.create_buffer(64, np.float32, name="out")
    ready = dev.create_event()
    result = np.zeros(64, np.float32)
    with lnb.trace() as trace:
        with lnb.range("step"):
            with lnb.range("produce"):
                producer.submit([produce.dispatch_async(64, data, 2.0), data.copy_to_async(result)])
                producer.signal(ready)
            time.sleep(pause)
            consumer.wait(ready)
            consumer.submit([consume.dispatch_async(64, data, out)])
        dev.synchronize()
    return trace
