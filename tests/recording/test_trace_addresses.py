"""Trace files and the Chrome export hold no address of the process's memory, and a
loaded trace gives the findings of the live one: its host ranges keep every overlap,
containment and offset among them (``h`` and ``h.reshape`` are the same memory,
``h[:512]`` and ``h[512:]`` are not)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from helpers.findings import findings

import luisa_nb as lnb
from luisa_nb.analysis import AnalyzedTrace, HazardKind
from luisa_nb.recording import HostRange
from luisa_nb.recording.synthetic_addresses import synthetic_addresses


@pytest.fixture(scope="module")
def recorded():
    """A download into ``h`` as 32x32 and an upload of ``h``; downloads and uploads over
    slices of ``g``; an upload from an array no variable names. Every array used is in
    ``arrays``."""
    device = lnb.create_device("cpu", staging="submit")
    z = device.create_buffer(1024, np.float32, name="z")
    h, g = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
    grid, first_half, second_half, middle = h.reshape(32, 32), g[:512], g[512:], g[256:768]
    arrays = [h, g, grid, first_half, second_half, middle, np.ones(256, np.float32)]
    stream = device.default_stream
    with AnalyzedTrace() as trace:
        stream.submit(
            [
                z.copy_to_async(grid),
                z.copy_from_async(h),  # the same memory as grid: stale
                z.view(0, 512).copy_to_async(first_half),
                z.view(512).copy_from_async(second_half),  # no byte of first_half: fine
                z.view(0, 512).copy_from_async(middle),  # stale where it overlaps first_half
                z.view(0, 256).copy_from_async(arrays[-1]),
            ]
        )
        stream.synchronize()
    return trace, arrays


def address_forms(arrays) -> list[bytes]:
    """Every way the arrays' addresses could be written: decimal, hex, 8 raw bytes."""
    forms = []
    for array in arrays:
        address = array.__array_interface__["data"][0]
        forms += [str(address).encode(), f"{address:x}".encode(), f"{address:X}".encode()]
        forms += [address.to_bytes(8, "little"), address.to_bytes(8, "big")]
    return forms


def test_the_live_trace_finds_what_the_layout_says(recorded):
    trace, _ = recorded
    commands = {command.id: command for command in trace.commands}
    stale = [
        (hazard.host.address - commands[hazard.command_ids[-1]].host.address, hazard.host.nbytes)
        for hazard in trace.hazards
        if hazard.kind is HazardKind.STALE_UPLOAD
    ]
    assert stale == [(0, 4096), (0, 1024)]  # all of h; the first half of middle


def test_a_saved_trace_holds_no_address(recorded, tmp_path):
    trace, arrays = recorded
    path = trace.save(tmp_path / "trace.lnbtrace")
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    for content in [path.read_bytes(), *members.values()]:
        for form in address_forms(arrays):
            assert form not in content, form


def test_a_loaded_trace_gives_the_same_findings(recorded, tmp_path):
    trace, _ = recorded
    loaded = AnalyzedTrace.load(trace.save(tmp_path / "trace.lnbtrace"))
    assert findings(loaded) == findings(trace)
    assert [h.kind for h in loaded.hazards] == [h.kind for h in trace.hazards]
    assert [u.stale for u in loaded.uploads] == [u.stale for u in trace.uploads]


def test_the_chrome_export_holds_no_address(recorded, tmp_path):
    trace, arrays = recorded
    exported = tmp_path / "trace.json"
    trace.to_chrome_trace(exported)
    loaded = AnalyzedTrace.load(trace.save(tmp_path / "trace.lnbtrace"))
    for text in (exported.read_text(), json.dumps(loaded.to_chrome_trace())):
        assert "host#3" in text  # the unnamed array, named after the third memory used
        for form in address_forms(arrays):
            assert form.decode("latin-1") not in text, form


def host(address: int, nbytes: int) -> HostRange:
    return HostRange(address, nbytes, "<f4", (nbytes // 4,))


def test_synthetic_addresses_keep_overlaps_and_offsets_and_drop_the_rest():
    whole = host(0x7F00_0000, 4096)
    tail = host(0x7F00_0800, 2048)
    inner = host(0x7F00_0100, 16)
    empty = host(0x7F00_1000, 0)  # touches the end of whole
    apart = host(0x5500_0000, 64)
    low = host(0x1000, 8)
    hosts = [apart, whole, tail, inner, empty, low]
    moved = synthetic_addresses(hosts)
    assert [a - moved[1] for a in moved[1:5]] == [0, 0x800, 0x100, 4096]
    placed = [host(address, h.nbytes) for address, h in zip(moved, hosts, strict=True)]
    for i, first in enumerate(hosts):
        for j, second in enumerate(hosts):
            assert placed[i].overlaps(placed[j]) == first.overlaps(second), (i, j)
    assert moved[0] < moved[1] < moved[5]  # clusters in the order of first use
    assert synthetic_addresses(placed) == moved  # saving a loaded trace changes nothing


def test_views_of_a_live_trace_show_no_address(recorded, tmp_path):
    """An unnamed array is named after the memory it lies in when the trace stops, so the
    report and the viewer made from the live trace show no address of the process."""
    from luisa_nb.report import write_report
    from luisa_nb.widgets import TraceViewer

    trace, arrays = recorded
    report = write_report(trace, tmp_path / "report.html").read_text()
    viewer = TraceViewer(trace)._repr_html_()
    messages = " ".join(hazard.message for hazard in trace.hazards)
    for text in (report, viewer, messages):
        for form in address_forms(arrays):
            assert form.decode("latin-1") not in text, form
    assert "host#3" in report
