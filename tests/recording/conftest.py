"""A small trace that uses every record type, field shape and status."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.recording import (
    Access,
    BufferInfo,
    Capture,
    CommandKind,
    CommandRecord,
    DeviceRange,
    HostRange,
    Status,
    StreamInfo,
    SyncKind,
    SyncRecord,
    Trace,
)

STARTED = 1_000_000


def _host(array: np.ndarray, name: str | None) -> HostRange:
    address = array.__array_interface__["data"][0]
    return HostRange(address, array.nbytes, array.dtype.str, array.shape, name)


def _command(id: int, seq: int, kind: CommandKind, stream: int, devices, **fields):
    fields.setdefault("submission", 1)
    fields.setdefault("index", 0)
    fields.setdefault("label", "")
    return CommandRecord(
        id=id, seq=seq, kind=kind, stream=stream, device_ranges=tuple(devices), **fields
    )


def build_sample_trace(cls: type[Trace] = Trace) -> Trace:
    """Two streams; an upload (enqueued bytes differ from those it read), a dispatch, a
    download into a 2-D array, a failed and a skipped command, a digest-only capture, and
    one sync record of each kind."""
    trace = cls(capture="head", capture_bytes=256)
    trace.metadata.started = STARTED
    trace.metadata.devices = [{"name": "cpu", "staging": "submit", "threads": 4}]
    trace.buffers = {
        1: BufferInfo(1, 4096, "<f4", 1024, "cpu", "z"),
        2: BufferInfo(2, 64, "<i4", 16, "cpu", None),
    }
    trace.streams = {0: StreamInfo(0, "cpu", "default"), 1: StreamInfo(1, "cpu", "copy")}
    z_data = np.full(1024, 123.0, np.float32)
    grid = np.zeros((4, 4), np.int32)
    whole_z = DeviceRange(1, 0, 4096, Access.WRITE)
    at = STARTED
    upload = _command(
        1,
        1,
        CommandKind.UPLOAD,
        0,
        [whole_z],
        host=_host(z_data, "z_data"),
        staging="submit",
        enqueued=at + 100,
        submitted=at + 200,
        started=at + 300,
        finished=at + 400,
        host_read=at + 200,
        status=Status.OK,
        enqueue_capture=trace.capture(z_data.view(np.uint8)),
        data_capture=trace.capture((z_data + 1).view(np.uint8)),
    )
    dispatch = _command(
        2,
        2,
        CommandKind.DISPATCH,
        0,
        [DeviceRange(1, 0, 4096, Access.READ_WRITE), DeviceRange(2, 0, 64, Access.READ)],
        label="vecadd",
        index=1,
        status=Status.OK,
        enqueued=at + 110,
        submitted=at + 200,
        started=at + 400,
        finished=at + 900,
    )
    download = _command(
        3,
        4,
        CommandKind.DOWNLOAD,
        1,
        [DeviceRange(2, 0, 64, Access.READ)],
        host=_host(grid, None),
        staging="submit",
        submission=2,
        status=Status.OK,
        enqueued=at + 1000,
        submitted=at + 1100,
        started=at + 1200,
        finished=at + 1300,
        host_write=at + 1300,
        data_capture=trace.capture(np.arange(16, dtype=np.int32).view(np.uint8)),
    )
    failed = _command(
        4,
        6,
        CommandKind.FILL,
        0,
        [DeviceRange(1, 1024, 1024, Access.WRITE)],
        submission=3,
        enqueued=at + 1400,
        submitted=at + 1500,
        started=at + 1550,
        status=Status.FAILED,
        error="ValueError: boom",
    )
    skipped = _command(
        5,
        7,
        CommandKind.UPLOAD,
        0,
        [whole_z],
        host=_host(z_data, "z_data"),
        submission=3,
        index=1,
        enqueued=at + 1410,
        submitted=at + 1500,
        status=Status.SKIPPED,
        enqueue_capture=Capture(4096, None, "0" * 32),
    )
    syncs = [
        SyncRecord(1, 3, SyncKind.SIGNAL, 0, event=9, issued=at + 250, completed=at + 950),
        SyncRecord(2, 5, SyncKind.WAIT, 1, event=9, issued=at + 260, completed=at + 1150),
        SyncRecord(3, 8, SyncKind.CALLBACK, 1, issued=at + 1600, completed=at + 1700),
        SyncRecord(
            4,
            9,
            SyncKind.EVENT_SYNCHRONIZE,
            None,
            event=9,
            issued=at + 1800,
            completed=at + 1810,
            status=Status.OK,
        ),
        SyncRecord(
            5,
            10,
            SyncKind.SYNCHRONIZE,
            0,
            covers=7,
            issued=at + 1900,
            completed=at + 1950,
            status=Status.FAILED,
            error="CommandFailedError",
        ),
    ]
    records = [upload, dispatch, syncs[0], download, syncs[1], failed, skipped, *syncs[2:]]
    for record in records:
        trace.add(record)
    trace.metadata.stopped = at + 2000
    return trace


@pytest.fixture
def sample_trace() -> Trace:
    return build_sample_trace()


@pytest.fixture(scope="session")
def make_sample_trace():
    """``make_sample_trace(cls=Trace)``: the sample trace as an instance of ``cls``."""
    return build_sample_trace
