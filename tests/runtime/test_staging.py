"""Both staging policies are real: the same command list gives different bytes."""

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.recording import CommandKind

N = 1024


def _copy_only(device, *, synchronize_between: bool):
    a = device.create_buffer(N, np.float32)
    b = device.create_buffer(N, np.float32)
    h1 = np.arange(N, dtype=np.float32)
    h2 = np.full(N, -7.0, np.float32)
    stream = device.default_stream
    with lnb.trace() as trace:
        if synchronize_between:
            stream.submit([a.copy_from_async(h1), a.copy_to_async(h2)])
            stream.synchronize()
            stream.submit([b.copy_from_async(h2)])
        else:
            stream.submit([a.copy_from_async(h1), a.copy_to_async(h2), b.copy_from_async(h2)])
        stream.synchronize()
    return trace, b.numpy()


def test_copy_only_list_is_stale_under_submit():
    trace, b = _copy_only(lnb.create_device("cpu", staging="submit"), synchronize_between=False)
    np.testing.assert_array_equal(b, np.full(N, -7.0))
    _, download, stale = trace.commands
    assert [h.kind for h in trace.hazards] == [HazardKind.STALE_UPLOAD]
    assert trace.hazards[0].command_ids == (download.id, stale.id)
    assert stale.host_read < download.host_write


def test_copy_only_list_is_correct_but_latent_under_execute():
    trace, b = _copy_only(lnb.create_device("cpu", staging="execute"), synchronize_between=False)
    np.testing.assert_array_equal(b, np.arange(N))
    _, download, later = trace.commands
    assert [h.kind for h in trace.hazards] == [HazardKind.LATENT_STALE_UPLOAD]
    assert trace.hazards[0].command_ids == (download.id, later.id)
    assert later.host_read > download.host_write


def test_synchronize_between_fixes_both_policies(staging):
    trace, b = _copy_only(lnb.create_device("cpu", staging=staging), synchronize_between=True)
    np.testing.assert_array_equal(b, np.arange(N))
    assert trace.hazards == []


def test_submit_policy_reads_host_memory_before_submit_returns():
    device = lnb.create_device("cpu", staging="submit")
    buffer = device.create_buffer(4, np.int32)
    host = np.array([1, 2, 3, 4], np.int32)
    device.default_stream.submit([buffer.copy_from_async(host)])
    host[:] = 0  # changed after submit: a submit-staged upload already has its bytes
    np.testing.assert_array_equal(buffer.numpy(), [1, 2, 3, 4])


def test_trace_records_times_and_host_ranges(staging):
    device = lnb.create_device("cpu", staging=staging)
    buffer = device.create_buffer(N, np.float32)
    host = np.arange(N, dtype=np.float32).reshape(32, 32)
    with lnb.trace() as trace:
        device.default_stream.submit([buffer.copy_from_async(host), buffer.copy_to_async(host)])
        device.default_stream.synchronize()
    upload, download = trace.commands
    assert upload.kind is CommandKind.UPLOAD and download.kind is CommandKind.DOWNLOAD
    for record in (upload, download):
        assert record.enqueued <= record.submitted <= record.started <= record.finished
        assert record.host.address == host.__array_interface__["data"][0]
        assert record.host.nbytes == host.nbytes and record.host.shape == (32, 32)
        assert record.host.name == "host"
        assert record.staging == staging
    if staging == "submit":
        assert upload.host_read <= upload.started
    else:
        assert upload.started <= upload.host_read <= upload.finished
    assert download.started <= download.host_write <= download.finished
    assert trace.buffers[buffer.id].name == "buffer"
    staged = trace.captured_values(upload.data_capture, upload.host)
    np.testing.assert_array_equal(staged, np.arange(N))
    assert upload.data_capture.digest == download.data_capture.digest


@pytest.mark.parametrize("capture", ["none", "head", "full"])
def test_capture_policies(capture):
    device = lnb.create_device("cpu")
    buffer = device.create_buffer(N, np.float64)
    host = np.linspace(0, 1, N)
    with lnb.trace(capture=capture, capture_bytes=256) as trace:
        buffer.copy_from(host, sync=True)
        buffer.copy_to(np.empty(N))
    upload = trace.commands[0]
    kept = trace.captured_bytes(upload.data_capture)
    expected_kept = {"none": None, "head": 256, "full": host.nbytes}[capture]
    assert (kept is None) if expected_kept is None else (kept.nbytes == expected_kept)
    assert upload.data_capture.digest is not None
    assert upload.data_capture.digest == trace.commands[1].data_capture.digest
    assert upload.data_capture.complete == (capture == "full")
