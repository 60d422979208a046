"""Hazards found in traces of real runs (the analysis tests build traces by hand)."""

import threading

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind

N = 1024


def _download_then_upload(device, download_target, upload_source):
    a = device.create_buffer(N, np.float32)
    a.copy_from(np.arange(N, dtype=np.float32))
    b = device.create_buffer(upload_source.size, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        stream.submit(
            [
                a.view(0, download_target.size).copy_to_async(download_target),
                b.copy_from_async(upload_source),
            ]
        )
        stream.synchronize()
    return trace


def test_disjoint_slices_of_one_array_do_not_conflict(device):
    host = np.zeros(N, np.float32)
    trace = _download_then_upload(device, host[: N // 2], host[N // 2 :])
    assert trace.hazards == []


def test_overlapping_slices_conflict(device):
    host = np.zeros(N, np.float32)
    trace = _download_then_upload(device, host[: N // 2], host[N // 4 : 3 * N // 4])
    (hazard,) = trace.hazards
    expected = (
        HazardKind.STALE_UPLOAD if device.staging == "submit" else HazardKind.LATENT_STALE_UPLOAD
    )
    assert hazard.kind is expected
    assert hazard.host.address == host[N // 4 :].__array_interface__["data"][0]
    assert hazard.host.nbytes == (N // 4) * 4


def test_a_reshaped_view_is_the_same_memory(device):
    host = np.zeros(N, np.float32)
    trace = _download_then_upload(device, host, host.reshape(32, 32))
    assert [h.kind for h in trace.hazards] == [
        HazardKind.STALE_UPLOAD if device.staging == "submit" else HazardKind.LATENT_STALE_UPLOAD
    ]
    check = trace.upload(trace.hazards[0].command_ids[1])
    np.testing.assert_array_equal(check.expected, np.arange(N))
    assert check.stale == (device.staging == "submit")


@pytest.mark.parametrize("ordered", [False, True], ids=["no-event", "event-wait"])
def test_two_streams_writing_one_buffer(device, ordered):
    first, second = device.create_stream(), device.create_stream()
    shared = device.create_buffer(N, np.float32)
    event = device.create_event()
    with lnb.trace() as trace:
        first.submit([shared.fill_async(1.0)])
        if ordered:
            first.signal(event)
            second.wait(event)
        second.submit([shared.view(0, N // 2).fill_async(2.0)])
        device.synchronize()
    races = [h for h in trace.hazards if h.kind is HazardKind.DEVICE_RACE]
    if ordered:
        assert races == []
        np.testing.assert_array_equal(shared.numpy()[: N // 2], 2.0)
    else:
        (race,) = races
        assert race.command_ids == tuple(r.id for r in trace.commands)
        assert race.device.buffer == shared.id and race.device.nbytes == N // 2 * 4


def test_host_write_in_flight_is_reported(staging):
    device = lnb.create_device("cpu", staging=staging)
    stream = device.default_stream
    buffer = device.create_buffer(N, np.float32)
    host = np.zeros(N, np.float32)
    opened = threading.Event()
    stream.add_callback(lambda: opened.wait(10))
    with lnb.trace() as trace:
        command = buffer.copy_from_async(host)
        host[5] = 42.0  # written after enqueue, before the upload read it
        stream.submit([command])
        opened.set()
        stream.synchronize()
    (hazard,) = trace.hazards
    assert hazard.kind is HazardKind.HOST_WRITE_IN_FLIGHT
    assert hazard.command_ids == (trace.number_of(command),)
    assert hazard.host.address == host[5:].__array_interface__["data"][0]
    assert buffer.numpy()[5] == 42.0
