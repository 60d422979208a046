"""Traces built by hand, record by record, as the runtime would fill them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from luisa_nb.analysis import AnalyzedTrace
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
)

SIZE = 1024
FILL = 123.0


class TraceBuilder:
    """Adds records to an :class:`AnalyzedTrace` with ids and ``seq`` in call order.

    Times are explicit where a test depends on them; otherwise each command gets
    ``enqueued < submitted < started <= host_read/host_write <= finished`` from a clock
    that only moves forward.
    """

    def __init__(self, capture: str = "head", capture_bytes: int = 65536) -> None:
        self.trace = AnalyzedTrace(capture=capture, capture_bytes=capture_bytes)
        self.trace.metadata.started = 1000
        self.clock = 1000
        self._seq = itertools.count(1)
        self._ids = itertools.count(1)
        self._sync_ids = itertools.count(1)

    def tick(self, step: int = 100) -> int:
        self.clock += step
        return self.clock

    def buffer(self, name: str, size: int = SIZE, dtype: str = "<f4") -> int:
        buffer_id = len(self.trace.buffers) + 1
        nbytes = size * np.dtype(dtype).itemsize
        self.trace.buffers[buffer_id] = BufferInfo(buffer_id, nbytes, dtype, size, "cpu", name)
        return buffer_id

    def stream(self, name: str) -> int:
        stream_id = len(self.trace.streams)
        self.trace.streams[stream_id] = StreamInfo(stream_id, "cpu", name)
        return stream_id

    def host(self, array: np.ndarray, name: str | None = None) -> HostRange:
        """The host range of ``array``, by address as the runtime records it."""
        address = array.__array_interface__["data"][0]
        return HostRange(address, array.nbytes, array.dtype.str, array.shape, name)

    def whole(self, buffer: int, access: Access) -> DeviceRange:
        return DeviceRange(buffer, 0, self.trace.buffers[buffer].nbytes, access)

    def capture(self, values: np.ndarray | None) -> Capture | None:
        if values is None:
            return None
        return self.trace.capture(np.ascontiguousarray(values).reshape(-1).view(np.uint8))

    def command(
        self,
        kind: CommandKind,
        devices: list[DeviceRange],
        *,
        stream: int = 0,
        host: HostRange | None = None,
        label: str = "",
        staging: str = "execute",
        status: Status = Status.OK,
        enqueue_values: np.ndarray | None = None,
        data_values: np.ndarray | None = None,
        submission: int = 1,
        index: int = 0,
        **times: int | None,
    ) -> CommandRecord:
        defaults = {"enqueued": self.tick(), "submitted": self.tick(), "started": self.tick()}
        defaults["finished"] = self.tick()
        if kind is CommandKind.UPLOAD:
            defaults["host_read"] = defaults["started"]
        if kind is CommandKind.DOWNLOAD:
            defaults["host_write"] = defaults["finished"]
        defaults.update(times)
        record = CommandRecord(
            id=next(self._ids),
            seq=next(self._seq),
            kind=kind,
            stream=stream,
            submission=submission,
            index=index,
            label=label,
            device_ranges=tuple(devices),
            host=host,
            staging=staging,
            enqueue_capture=self.capture(enqueue_values),
            data_capture=self.capture(data_values),
            status=status,
            **defaults,
        )
        self.trace.add(record)
        return record

    def upload(self, buffer: int, host: HostRange, enqueue_values, data_values=..., **options):
        """An upload; ``data_values`` (the bytes it sent) default to ``enqueue_values``."""
        data_values = enqueue_values if data_values is ... else data_values
        device = self._device(buffer, host, Access.WRITE, options)
        return self.command(
            CommandKind.UPLOAD,
            [device],
            host=host,
            enqueue_values=enqueue_values,
            data_values=data_values,
            **options,
        )

    def download(self, buffer: int, host: HostRange, values, **options) -> CommandRecord:
        device = self._device(buffer, host, Access.READ, options)
        return self.command(
            CommandKind.DOWNLOAD, [device], host=host, data_values=values, **options
        )

    def _device(self, buffer: int, host: HostRange, access: Access, options: dict) -> DeviceRange:
        offset = options.pop("device_offset", 0)
        return DeviceRange(buffer, offset, host.nbytes, access)

    def sync(
        self,
        kind: SyncKind,
        stream: int | None = None,
        *,
        event: int | None = None,
        covers: int | None = None,
        status: Status = Status.OK,
    ) -> SyncRecord:
        issued = self.tick()
        record = SyncRecord(
            id=next(self._sync_ids),
            seq=next(self._seq),
            kind=kind,
            stream=stream,
            event=event,
            covers=covers,
            issued=issued,
            completed=self.tick(),
            status=status,
        )
        self.trace.add(record)
        return record

    def finish(self) -> AnalyzedTrace:
        self.trace.metadata.stopped = self.tick()
        return self.trace


def expected_rows() -> np.ndarray:
    index = np.arange(SIZE, dtype=np.float32)
    return index + np.float32(1000.0) * index


def seed_trace(staging: str, capture: str = "head", capture_bytes: int = 65536) -> AnalyzedTrace:
    """The five records of the seed program (LuisaCompute #143) in one submission.

    All five are enqueued, then submitted at 2000; they run back to back from 2100. Under
    staging="submit" both uploads read ``z_data`` at submission, before the download wrote
    it at 2400; under "execute" the second upload reads it when it starts, at 2400.
    """
    build = TraceBuilder(capture=capture, capture_bytes=capture_bytes)
    x, y, z = build.buffer("x"), build.buffer("y"), build.buffer("z")
    build.stream("default")
    z_data = np.full(SIZE, FILL, np.float32)
    host = build.host(z_data, "z_data")
    old, new = z_data.copy(), expected_rows()
    submit = staging == "submit"
    first_read, second_read = (2000, 2000) if submit else (2100, 2400)
    common = {"staging": staging, "submitted": 2000}
    build.upload(
        z,
        host,
        old,
        enqueued=1100,
        started=2100,
        finished=2200,
        host_read=first_read,
        index=0,
        **common,
    )
    reads = [build.whole(x, Access.READ), build.whole(y, Access.READ)]
    build.command(
        CommandKind.DISPATCH,
        [*reads, build.whole(z, Access.WRITE)],
        label="vecadd",
        enqueued=1200,
        started=2200,
        finished=2300,
        index=1,
        **common,
    )
    build.download(
        z, host, new, enqueued=1300, started=2300, finished=2400, host_write=2400, index=2, **common
    )
    build.upload(
        z,
        host,
        old,
        old if submit else new,
        enqueued=1400,
        started=2400,
        finished=2500,
        host_read=second_read,
        index=3,
        **common,
    )
    copy = [build.whole(z, Access.READ), build.whole(x, Access.WRITE)]
    build.command(
        CommandKind.COPY, copy, enqueued=1500, started=2500, finished=2600, index=4, **common
    )
    build.sync(SyncKind.SYNCHRONIZE, 0, covers=5)
    return build.finish()


@pytest.fixture
def builder() -> TraceBuilder:
    return TraceBuilder()


@pytest.fixture
def make_builder() -> type[TraceBuilder]:
    """``make_builder(capture=..., capture_bytes=...)``: a builder with another policy."""
    return TraceBuilder


@pytest.fixture(params=["submit", "execute"])
def staging(request) -> str:
    return request.param


@pytest.fixture
def seed(staging) -> AnalyzedTrace:
    return seed_trace(staging)


@pytest.fixture
def make_seed():
    """``make_seed(staging, capture="head", capture_bytes=65536)``: a fresh seed trace."""
    return seed_trace
