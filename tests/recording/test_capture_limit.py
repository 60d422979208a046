"""``capture_limit``: a trace keeps at most that many captured bytes in all, then digests
only, so a long traced loop of new arrays cannot fill the machine's memory; findings still
come from the digests."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.cli import main
from luisa_nb.errors import ConfigurationError
from luisa_nb.recording import row_appender
from luisa_nb.recording import trace as trace_module
from luisa_nb.recording.recorder import PythonTraceRecorder, TraceRecorder
from luisa_nb.recording.trace import DEFAULT_CAPTURE_LIMIT, capture_limit

SIZE = 1024  # float32: 4 KiB per array
KEPT = 10
LIMIT = KEPT * SIZE * 4 + 100  # room for ten arrays' bytes, not eleven
STEPS = 25

RECORDERS = [pytest.param(PythonTraceRecorder, id="python")]
if row_appender.NATIVE:
    RECORDERS.append(pytest.param(TraceRecorder, id="c"))


@pytest.fixture(params=RECORDERS)
def recorder_class(request, monkeypatch):
    """Traces made in the test record with this class."""
    monkeypatch.setattr(trace_module, "TraceRecorder", request.param)
    return request.param


def fresh_array_loop(device: lnb.Device, steps: int) -> None:
    """Upload a new array each step and download it back: one new 4 KiB capture a step."""
    buffer = device.create_buffer(SIZE, np.float32)
    out = np.empty(SIZE, np.float32)
    for step in range(steps):
        buffer.copy_from(np.full(SIZE, float(step), np.float32))
        buffer.copy_to(out)


def stale_upload(device: lnb.Device) -> None:
    """#143: an upload after a download of the same host array, in one command list."""
    z = device.create_buffer(SIZE, np.float32)
    z.copy_from(np.full(SIZE, 7.0, np.float32))
    z_data = np.full(SIZE, -1.0, np.float32)  # bytes no earlier capture holds
    device.default_stream.submit([z.copy_to_async(z_data), z.copy_from_async(z_data)])
    device.synchronize()


def uploads(trace) -> list:
    return [command for command in trace.commands if command.kind.value == "upload"]


def test_captures_stop_at_the_limit_and_findings_go_on(recorder_class, tmp_path):
    device = lnb.create_device("cpu", staging="submit")
    with lnb.trace(capture_limit=LIMIT) as trace:
        fresh_array_loop(device, STEPS)
        stale_upload(device)
    assert sum(blob.nbytes for blob in trace.blobs.values()) == KEPT * SIZE * 4
    loop_uploads = uploads(trace)[:STEPS]
    for step, command in enumerate(loop_uploads[:KEPT]):
        kept = trace.captured_bytes(command.enqueue_capture).view(np.float32)
        np.testing.assert_array_equal(kept, np.full(SIZE, float(step), np.float32))
    later = [command.enqueue_capture for command in loop_uploads[KEPT:]]
    assert all(capture.blob is None and capture.digest for capture in later)
    assert len({capture.digest for capture in later}) == STEPS - KEPT
    assert trace.metadata.capture_limited is not None
    assert trace.metadata.started <= trace.metadata.capture_limited <= trace.metadata.stopped

    [hazard] = [h for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
    check = trace.upload(hazard.command_ids[-1])
    assert check.stale and check.staged is None and check.expected is None
    assert f"capture_limit={LIMIT} bytes" in trace.uncaptured_reason()

    path = tmp_path / "limited.lnbtrace"
    trace.save(path)
    loaded = lnb.load_trace(path)
    assert loaded.metadata.capture_limit == LIMIT
    assert loaded.metadata.capture_limited == trace.metadata.capture_limited
    assert [h.kind for h in loaded.hazards] == [h.kind for h in trace.hazards]
    assert loaded.uncaptured_reason() == trace.uncaptured_reason()
    device.close()


def test_by_default_a_trace_keeps_a_gibibyte_and_none_lifts_the_limit(recorder_class):
    device = lnb.create_device("cpu")
    assert lnb.trace().metadata.capture_limit == DEFAULT_CAPTURE_LIMIT == 1 << 30
    with lnb.trace(capture_limit=None) as trace:
        fresh_array_loop(device, STEPS)
    assert len(trace.blobs) == STEPS and trace.metadata.capture_limited is None
    assert "capture='head'" in trace.uncaptured_reason()
    device.close()


def test_a_limit_of_zero_keeps_digests_only(recorder_class):
    device = lnb.create_device("cpu")
    with lnb.trace(capture_limit=0) as trace:
        fresh_array_loop(device, 3)
    assert not trace.blobs
    assert all(command.enqueue_capture.blob is None for command in uploads(trace))
    device.close()


def test_a_limit_past_what_memory_can_hold_is_no_limit(recorder_class):
    with lnb.trace(capture_limit=10**40) as trace:
        fresh_array_loop(lnb.default_device(), 3)
    assert len(trace.blobs) == 3 and trace.metadata.capture_limit == 10**40


@pytest.mark.parametrize("limit", [-1, 1.5, "1GiB", True])
def test_a_bad_limit_is_refused(limit):
    with pytest.raises(ConfigurationError, match=r"capture_limit=.* must be an int >= 0"):
        lnb.trace(capture_limit=limit)


def test_the_command_line_form_of_a_limit():
    assert capture_limit("none") is None
    assert capture_limit("4096") == 4096
    assert capture_limit("512MiB") == 512 << 20
    assert capture_limit("2 GiB") == 2 << 30
    for text in ("", "-5", "1.5GiB", "GiB", "12PB", "lots"):
        with pytest.raises(ValueError, match="is not a number of bytes"):
            capture_limit(text)


def test_luisa_nb_run_takes_a_limit(tmp_path, capsys):
    program = tmp_path / "loop.py"
    program.write_text(
        "import numpy as np\n"
        "import luisa\n"
        "luisa.init()\n"
        "buffer = luisa.Buffer(1024, float)\n"
        "for step in range(6):\n"
        "    buffer.copy_from(np.full(1024, float(step), np.float32))\n"
        "luisa.synchronize()\n"
    )
    saved = tmp_path / "loop.lnbtrace"
    assert main(["run", "--capture-limit", "8KiB", "--trace", str(saved), str(program)]) == 0
    loaded = lnb.load_trace(saved)
    assert loaded.metadata.capture_limit == 8192 and len(loaded.blobs) == 2
    with pytest.raises(SystemExit):
        main(["run", "--capture-limit", "lots", str(program)])
    assert "invalid capture_limit value: 'lots'" in capsys.readouterr().err
