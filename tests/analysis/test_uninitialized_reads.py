"""UNINITIALIZED_READ on real runs: reads of device bytes that no command wrote, per byte
range, and none where uploads, fills, copies or kernels wrote the bytes first."""

import io
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.analysis import HazardKind
from luisa_nb.analysis.uninitialized import find_uninitialized_reads
from luisa_nb.conformance import programs as conformance_programs
from luisa_nb.conformance.generator import random_program
from luisa_nb.conformance.runner import run_program
from tests.luisa.running import run_on_luisa_nb

TESTS = Path(__file__).resolve().parents[1]
UNINITIALIZED = HazardKind.UNINITIALIZED_READ


@lnb.kernel
def doubled(source, target):
    i = lnb.dispatch_id().x
    target.write(i, source.read(i) * 2.0)


@lnb.kernel
def accumulate(total):
    i = lnb.dispatch_id().x
    total.write(i, total.read(i) + 1.0)


@pytest.fixture(params=["cpu", "dx"])
def device(request):
    return lnb.create_device(request.param)


def findings(trace):
    return [h for h in trace.hazards if h.kind is UNINITIALIZED]


def test_a_kernel_reading_a_never_written_buffer_is_reported(device):
    with lnb.trace() as trace:
        source = device.create_buffer(16, np.float32, name="source")
        target = device.create_buffer(16, np.float32, name="target")
        doubled(source, target, dispatch_size=16)
        result = target.numpy()
    np.testing.assert_array_equal(result, np.zeros(16))  # zeros here, garbage on a GPU
    [finding] = findings(trace)
    dispatch = next(r for r in trace.commands if r.kind.value == "dispatch")
    assert finding.command_ids == (dispatch.id,)
    assert (finding.device.buffer, finding.device.offset, finding.device.nbytes) == (
        source.id,
        0,
        64,
    )
    assert "source[0:16]" in finding.message and "64 bytes" in finding.message
    assert "write source before" in finding.fix


def test_only_the_unwritten_part_of_a_partly_uploaded_buffer_is_reported(device):
    with lnb.trace() as trace:
        source = device.create_buffer(16, np.float32, name="source")
        target = device.create_buffer(16, np.float32, name="target")
        source.view(4, 12).copy_from(np.ones(8, np.float32))
        doubled(source, target, dispatch_size=16)
        target.numpy()
    [finding] = findings(trace)
    assert (finding.device.offset, finding.device.nbytes) == (0, 16)
    assert "source[0:4], source[12:16] (32 bytes)" in finding.message


def test_a_download_of_never_written_bytes_is_reported_and_a_written_one_is_not(device):
    host = np.ones(8, np.float32)
    with lnb.trace() as trace:
        buffer = device.create_buffer(8, np.float32, name="buffer")
        buffer.view(0, 4).fill(3.0)
        buffer.view(0, 4).copy_to(host[:4])
        buffer.copy_to(host)
    [finding] = findings(trace)
    last = trace.commands[-1]
    assert finding.command_ids == (last.id,)
    assert (finding.device.offset, finding.device.nbytes) == (16, 16)


def test_a_copy_carries_unwritten_bytes_to_its_target(device):
    with lnb.trace() as trace:
        partial = device.create_buffer(8, np.float32, name="partial")
        copied = device.create_buffer(8, np.float32, name="copied")
        partial.view(0, 6).copy_from(np.ones(6, np.float32))
        partial.copy_to_buffer(copied)
        copied.numpy()
    [finding] = findings(trace)  # the copy itself reads, like a memcpy: not reported
    assert finding.command_ids == (trace.commands[-1].id,)
    assert (finding.device.buffer, finding.device.offset, finding.device.nbytes) == (
        copied.id,
        24,
        8,
    )


def test_an_update_in_place_of_a_fresh_buffer_is_reported():
    device = lnb.create_device("cpu")
    with lnb.trace() as trace:
        total = device.create_buffer(4, np.float32, name="total")
        accumulate(total, dispatch_size=4)
        accumulate(total, dispatch_size=4)
        total.numpy()
    [finding] = findings(trace)  # the first update only: it wrote every byte
    assert finding.command_ids == (trace.commands[0].id,)
    assert "updates total[0:4]" in finding.message


def test_uploads_fills_copies_and_kernels_that_write_first_are_not_reported(device):
    with lnb.trace() as trace:
        uploaded = device.create_buffer(8, np.float32, name="uploaded")
        filled = device.create_buffer(8, np.float32, name="filled")
        copied = device.create_buffer(8, np.float32, name="copied")
        computed = device.create_buffer(8, np.float32, name="computed")
        uploaded.copy_from(np.arange(8, dtype=np.float32))
        filled.fill(2.0)
        uploaded.copy_to_buffer(copied)
        doubled(filled, computed, dispatch_size=8)
        total = device.create_buffer(8, np.float32, name="total")
        total.fill(0.0)
        accumulate(total, dispatch_size=8)
        results = [b.numpy() for b in (uploaded, filled, copied, computed, total)]
    assert findings(trace) == []
    np.testing.assert_array_equal(results[3], np.full(8, 4.0))


def test_a_buffer_made_before_the_trace_is_not_checked_and_counts_as_written():
    device = lnb.create_device("cpu")
    before = device.create_buffer(8, np.float32)
    with lnb.trace() as trace:
        before.numpy()
        fresh = device.create_buffer(8, np.float32)
        before.copy_to_buffer(fresh)
        fresh.numpy()
    assert findings(trace) == []


def test_a_saved_trace_reports_the_same_findings(device, tmp_path):
    with lnb.trace() as trace:
        buffer = device.create_buffer(8, np.float32, name="buffer")
        buffer.numpy()
    loaded = lnb.load_trace(trace.save(tmp_path / "trace.lnbtrace"))
    assert [h.to_dict() for h in findings(loaded)] == [h.to_dict() for h in findings(trace)]
    assert len(findings(loaded)) == 1


def test_the_seed_program_made_inside_the_trace_reads_only_written_bytes():
    device = lnb.create_device("dx")
    size = 256
    with lnb.trace() as trace:
        x = device.create_buffer(size, np.float32, name="x")
        y = device.create_buffer(size, np.float32, name="y")
        z = device.create_buffer(size, np.float32, name="z")
        x.copy_from(np.arange(size, dtype=np.float32))
        y.copy_from(np.arange(size, dtype=np.float32))
        z_data = np.full(size, 123.0, np.float32)
        stream = device.default_stream
        stream.submit(
            [
                z.copy_from_async(z_data),
                doubled.dispatch_async(size, x, z),
                z.copy_to_async(z_data),
                z.copy_from_async(z_data),
                z.copy_to_buffer_async(x),
            ]
        )
        stream.synchronize()
    assert [h.kind for h in trace.hazards] == [HazardKind.STALE_UPLOAD]


@pytest.mark.parametrize(
    "make",
    [conformance_programs.seed, conformance_programs.fills, conformance_programs.buffer_copies]
    + [lambda index=index: random_program(index) for index in range(0, 40, 4)],
)
def test_conformance_programs_read_only_written_bytes(make):
    run = run_program(lnb.create_device("cpu"), make())
    assert find_uninitialized_reads(run.trace) == []


@pytest.mark.parametrize(
    ("program", "arguments"),
    [
        ("bindless.py", ("cpu",)),
        ("bindless3d.py", ("cpu",)),
        ("seed.py", ()),
        ("from_list.py", ()),
        ("indirect.py", ("cpu",)),
        ("kernel_rules.py", ("cpu",)),
        ("shared_memory.py", ("cpu",)),
    ],
)
def test_the_luisa_programs_read_only_written_bytes(program, arguments):
    luisa.del_device()
    with lnb.trace() as trace, redirect_stdout(io.StringIO()):
        run_on_luisa_nb(TESTS / "luisa" / "programs" / program, *arguments)
    luisa.del_device()
    assert len(trace.commands) > 2
    assert findings(trace) == []


def test_the_finding_flows_through_the_views_as_any_other_kind():
    from luisa_nb.views.theme import HAZARD, kind_colour
    from luisa_nb.views.timeline import build_timeline

    device = lnb.create_device("cpu")
    with lnb.trace() as trace:
        buffer = device.create_buffer(4, np.float32, name="never_written")
        buffer.numpy()
    timeline = build_timeline(trace)
    [entry] = timeline.hazards
    assert entry["kind"] == "UNINITIALIZED_READ"
    assert entry["command_ids"] == [trace.commands[0].id]
    assert entry["arrow"] is None and entry["upload"] is None
    [group] = timeline.findings
    assert group["kind"] == "UNINITIALIZED_READ" and group["count"] == 1
    assert "never_written[0:4]" in group["message"]
    assert kind_colour(entry["kind"]) == HAZARD.css()
