"""On one-stream traces the analysis leaves out the commands that cannot meet; what it
finds must be exactly what the full pass finds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import luisa_nb as lnb
from luisa_nb.analysis.hazards import HazardKind, _Finder
from luisa_nb.conformance.runner import run_program
from luisa_nb.conformance.strategies import programs
from luisa_nb.runtime.config import DeviceConfig


def both_passes(trace) -> tuple[list[dict], list[dict]]:
    narrowed = [hazard.to_dict() for hazard in _Finder(trace, narrow=True).run()]
    full = [hazard.to_dict() for hazard in _Finder(trace, narrow=False).run()]
    return narrowed, full


@pytest.mark.parametrize("staging", ["submit", "execute"])
@settings(max_examples=40, deadline=None)
@given(program=programs(max_streams=1, concurrency=False))
def test_random_one_stream_programs_give_the_same_hazards(staging, program):
    device = lnb.create_device("dx", staging=staging)
    try:
        trace = run_program(device, program).trace
    finally:
        device.close()
    narrowed, full = both_passes(trace)
    assert narrowed == full


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("upload"), st.integers(0, 2), st.integers(0, 1), st.booleans()),
        st.tuples(st.just("download"), st.integers(0, 2), st.integers(0, 1), st.booleans()),
        st.tuples(st.just("synchronize"), st.booleans(), st.just(0), st.just(False)),
        st.tuples(st.just("write host"), st.integers(0, 2), st.just(0), st.just(False)),
    ),
    max_size=30,
)


@pytest.mark.parametrize("backend", ["cpu:submit", "cpu:execute", "dx:submit"])
@settings(max_examples=60, deadline=None)
@given(operations=OPERATIONS)
def test_random_transfers_on_one_stream_give_the_same_hazards(backend, operations):
    """Uploads and downloads of three host arrays (two overlapping halves and a whole)
    in lists that are submitted at random points, with or without a synchronize."""
    device = DeviceConfig.parse(backend).create()
    buffers = [device.create_buffer(8, np.float32) for _ in range(2)]
    whole = np.zeros(16, np.float32)
    hosts = [whole[:8], whole[8:], whole[4:12]]
    stream = device.default_stream
    pending = []
    with lnb.trace() as trace:
        for step, (kind, host, buffer, submit_now) in enumerate(operations):
            if kind == "upload":
                pending.append(buffers[buffer].copy_from_async(hosts[host]))
            elif kind == "download":
                pending.append(buffers[buffer].copy_to_async(hosts[host]))
            elif kind == "write host":
                stream.submit(pending)
                pending = []
                hosts[host][...] = step
            else:
                stream.submit(pending)
                pending = []
                if host:  # the flag picks the device or the stream
                    device.synchronize()
                else:
                    stream.synchronize()
            if submit_now and pending:
                stream.submit(pending)
                pending = []
        stream.submit(pending)
        device.synchronize()
    device.close()
    narrowed, full = both_passes(trace)
    assert narrowed == full


def test_a_loop_that_skips_some_synchronizes_gives_the_same_hazards():
    device = lnb.create_device("cpu", staging="submit")
    state = device.create_buffer(64, np.float32)
    parameters, result = np.ones(64, np.float32), np.zeros(64, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        unsynchronized = False
        for iteration in range(60):
            source = result if unsynchronized else parameters
            stream.submit([state.copy_from_async(source), state.copy_to_async(result)])
            unsynchronized = iteration % 7 == 6
            if not unsynchronized:
                stream.synchronize()
        stream.synchronize()
    narrowed, full = both_passes(trace)
    assert narrowed == full
    assert [hazard["kind"] for hazard in full].count(HazardKind.STALE_UPLOAD.value) == 8
