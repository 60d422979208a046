"""HOST_USE_AFTER_FREE: the program lets go of a download's host array before a host
synchronize covered the download. luisa_nb keeps the array alive until the download has
written it, so the run is correct here (a latent finding); LuisaCompute keeps no
reference to a download's array, and there the download writes freed memory."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import inspect
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from helpers.findings import findings

import luisa_nb as lnb
from luisa_nb.analysis import AnalyzedTrace, HazardKind
from luisa_nb.errors import BackendNotFoundError, RemoteError
from luisa_nb.runtime import Device

SIZE = 256
BACKENDS = ("cpu:execute", "cpu:submit", "dx", "metal", "remote")
VALUES = np.arange(SIZE, dtype=np.float32)


@pytest.fixture(scope="module", params=BACKENDS)
def device(request: pytest.FixtureRequest) -> Iterator[Device]:
    try:
        device = lnb.create_device(request.param)
    except (BackendNotFoundError, RemoteError) as error:
        pytest.skip(f"device {request.param!r} does not start here: {error}")
    yield device
    device.close()


@pytest.fixture
def buffer(device: Device):
    buffer = device.create_buffer(SIZE, np.float32)
    buffer.copy_from(VALUES)
    device.synchronize()
    return buffer


def read_later(buffer) -> None:
    """Downloads into a local array and returns without waiting: the classic mistake."""
    out = np.empty(SIZE, np.float32)
    buffer.copy_to(out, sync=False)


def line_of(function, text: str) -> int:
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def released(trace: AnalyzedTrace) -> list:
    return [h for h in trace.hazards if h.kind is HazardKind.HOST_USE_AFTER_FREE]


def test_a_download_into_an_array_dropped_before_synchronize_is_reported(device, buffer):
    with AnalyzedTrace() as trace:
        read_later(buffer)
        device.synchronize()
    [download] = [c for c in trace.commands if c.kind.value == "download"]
    [hazard] = trace.hazards
    assert hazard.kind is HazardKind.HOST_USE_AFTER_FREE
    assert hazard.command_ids == (download.id,)
    assert hazard.host == download.host
    made = f"{__file__}:{line_of(read_later, 'copy_to')} in read_later"
    assert hazard.message == (
        f"#{download.id} download buffer -> out: the program let go of out[0:{SIZE}] "
        f"(downloaded into at {made}) while the runtime still held it before a host "
        f"synchronize covered #{download.id}; luisa_nb kept the array alive, so this run "
        f"was correct, but LuisaCompute keeps no reference to a download's array: there "
        f"#{download.id} writes freed memory"
    )
    assert hazard.fix == (
        f"keep out referenced until synchronize() has returned after #{download.id}, or "
        "download with copy_to(..., sync=True)"
    )
    assert hazard.times["released"] >= download.enqueued


def test_the_finding_does_not_depend_on_when_the_worker_ran(buffer):
    """The runtime drops its reference on the worker, before or after the synchronize
    begins: the release is placed before that synchronize either way."""
    device = buffer.device
    with AnalyzedTrace() as trace:
        for _ in range(200):
            read_later(buffer)
            device.synchronize()
    assert len(released(trace)) == 200


def download_and_return_once_it_ran(buffer) -> None:
    """Downloads without waiting and returns once the runtime has finished with the
    command: the program's return is what drops the array."""
    out = np.empty(SIZE, np.float32)
    buffer.copy_to(out, sync=False)
    ran = threading.Event()
    buffer.device.default_stream.add_callback(ran.set)
    assert ran.wait(10), "the download did not run within 10 s"


def test_the_site_is_where_the_program_dropped_the_array(buffer):
    device = buffer.device
    with AnalyzedTrace() as trace:
        download_and_return_once_it_ran(buffer)
        device.synchronize()
    [hazard] = trace.hazards
    [release] = trace.releases
    assert release.site is not None and release.site.startswith(f"{__file__}:")
    assert f"dropped its last reference to out[0:{SIZE}] at {release.site}" in hazard.message


def test_no_finding_while_the_program_holds_the_array_until_synchronize(buffer):
    device = buffer.device
    host = np.empty(SIZE * 2, np.float32)
    with AnalyzedTrace() as trace:
        kept = np.empty(SIZE, np.float32)
        buffer.copy_to(kept, sync=False)
        buffer.copy_to(host[:SIZE], sync=False)  # the view is dropped, its memory is not
        buffer.copy_to(host[SIZE:].reshape(16, -1), sync=False)
        device.synchronize()
        del kept  # after the synchronize: nothing in flight writes it
        for _ in range(100):
            buffer.copy_to(np.empty(SIZE, np.float32), sync=True)
    assert trace.hazards == []
    np.testing.assert_array_equal(host, np.concatenate([VALUES, VALUES]))


def test_memory_not_owned_by_an_array_is_not_watched(buffer):
    device = buffer.device
    with AnalyzedTrace() as trace:
        holder = bytearray(SIZE * 4)
        buffer.copy_to(np.frombuffer(holder, np.float32), sync=False)
        device.synchronize()
    assert trace.hazards == []
    np.testing.assert_array_equal(np.frombuffer(holder, np.float32), VALUES)


def test_a_saved_trace_reports_the_same_finding(buffer, tmp_path):
    device = buffer.device
    with AnalyzedTrace() as trace:
        read_later(buffer)
        device.synchronize()
    loaded = AnalyzedTrace.load(trace.save(tmp_path / "released.lnbtrace"))
    [release], [loaded_release] = trace.releases, loaded.releases
    assert dataclasses.replace(loaded_release, host=release.host) == release
    [download] = [c for c in loaded.commands if c.kind.value == "download"]
    assert download.host.address == loaded_release.host.address  # the array's own memory
    assert findings(loaded) == findings(trace)
    assert [h.kind for h in loaded.hazards] == [HazardKind.HOST_USE_AFTER_FREE]


def test_a_release_after_the_trace_stopped_is_not_recorded(buffer):
    with AnalyzedTrace() as trace:
        out = np.empty(SIZE, np.float32)
        buffer.copy_to(out, sync=False)
    buffer.device.synchronize()
    del out
    gc.collect()
    assert trace.releases == []
    assert released(trace) == []


def test_watches_end_with_their_arrays(buffer):
    """A loop of downloads into fresh arrays keeps no watch of an array once it is gone."""
    with AnalyzedTrace() as trace:
        for _ in range(1000):
            buffer.copy_to(np.empty(SIZE, np.float32), sync=True)
    assert trace.recorder._watches == {}
    assert len(trace.releases) == 1000
    assert trace.hazards == []


def test_luisa_programs_get_the_finding_too():
    import luisa_nb.luisa as luisa

    luisa.init("cpu")
    data = luisa.Buffer(SIZE, float)
    data.copy_from(VALUES)

    def read_later() -> None:
        result = np.empty(SIZE, np.float32)
        data.copy_to(result, sync=False)

    with contextlib.ExitStack() as stack:
        trace = stack.enter_context(AnalyzedTrace())
        read_later()
        luisa.synchronize()
    [hazard] = trace.hazards
    assert hazard.kind is HazardKind.HOST_USE_AFTER_FREE
    assert "result[0:256]" in hazard.message
    assert "luisa_nb kept the array alive" in hazard.message


def test_host_range_memos_of_freed_arrays_are_dropped_and_live_ones_kept():
    """``host_range`` keeps one memo per array without a callback per array: the memos of
    freed arrays go when the table has doubled, a live array keeps its range (the same
    object) through every sweep, and an array at a freed one's address gets its own."""
    from luisa_nb.runtime import host

    kept = np.zeros(16, np.float32)
    kept_range = host.host_range(kept)
    held, fillers = [], []
    for size in range(1, 2_000):
        array = np.zeros(size, np.uint8)
        assert host.host_range(array).nbytes == size
        if size % 500 == 0:
            held.append((array, host.host_range(array)))
        del array
        fillers.append(kept.view())  # takes the freed array's place: the next has a new id
    assert len(host._host_ranges) < 200
    assert host.host_range(kept) is kept_range
    for array, known in held:
        assert host.host_range(array) is known
    replaced = np.zeros(16, np.float64)
    assert host.host_range(replaced).nbytes == 128 and host.host_range(replaced).dtype == "<f8"
