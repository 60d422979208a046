"""A trace recorder's per-command hooks and logs (``recording.row_appender``): the C
appender and its Python twin log the same rows from the plain values the runtime hands
them, traces made with either read the same, and the rows are in one order with their
seqs and times."""

from __future__ import annotations

import gc
import importlib.util
import os
import pickle
import subprocess
import sys
import threading
import time
import tracemalloc
import weakref

import numpy as np
import pytest
from xxhash import xxh3_128_digest

import luisa_nb as lnb
from luisa_nb.conformance.programs import FIXED_PROGRAMS
from luisa_nb.conformance.runner import run_program
from luisa_nb.kernels.lang.vectors import dtype_of, float3
from luisa_nb.recording import row_appender
from luisa_nb.recording import trace as trace_module
from luisa_nb.recording.recorder import PythonTraceRecorder, TraceRecorder, active_recorder
from luisa_nb.recording.row_appender import (
    ACCESS_WIDTH,
    SUBMISSION_COLUMNS,
    SUBMISSION_WIDTH,
    PythonLog,
    digests_of,
    rows_of,
)
from luisa_nb.runtime.commands import DispatchCommand

NATIVE_MISSING = "the C row appender was not built (no C compiler or Python headers at install)"
needs_native = pytest.mark.skipif(not row_appender.NATIVE, reason=NATIVE_MISSING)

LOGS = [pytest.param(PythonLog, id="python")]
RECORDERS = [pytest.param(PythonTraceRecorder, id="python")]
if row_appender.NATIVE:
    LOGS.append(pytest.param(row_appender.Log, id="c"))
    RECORDERS.append(pytest.param(TraceRecorder, id="c"))


@lnb.kernel
def bump(target):
    i = lnb.dispatch_id().x
    target.write(i, target.read(i) + 1.0)


@pytest.fixture(params=RECORDERS)
def recorder_class(request, monkeypatch):
    """Traces made in the test record with this class."""
    monkeypatch.setattr(trace_module, "TraceRecorder", request.param)
    return request.param


def test_the_c_appender_is_built_where_ci_asks_for_it():
    """CI sets LUISA_NB_REQUIRE_NATIVE: a build that silently fell back to Python fails it."""
    if not os.environ.get("LUISA_NB_REQUIRE_NATIVE"):
        pytest.skip("LUISA_NB_REQUIRE_NATIVE is not set")
    assert row_appender.NATIVE, NATIVE_MISSING


@needs_native
def test_both_appenders_agree_on_the_row_layout():
    from luisa_nb.recording import _row_appender

    assert _row_appender.SUBMISSION_WIDTH == SUBMISSION_WIDTH == len(SUBMISSION_COLUMNS)
    assert _row_appender.ACCESS_WIDTH == ACCESS_WIDTH


@pytest.mark.parametrize("log_class", LOGS)
def test_a_tick_reads_the_clock_time_perf_counter_ns_reads(log_class):
    """Rows from C and from Python are compared on one timeline: each tick lies between
    the ``time.perf_counter_ns()`` readings around it, in both directions."""
    log = log_class(1)
    readings = []
    for _ in range(2000):
        readings.append(time.perf_counter_ns())
        log.tick()
    readings.append(time.perf_counter_ns())
    ticks = rows_of(log)[:, 0]
    assert (np.asarray(readings[:-1]) <= ticks).all()
    assert (ticks <= np.asarray(readings[1:])).all()


@pytest.mark.parametrize("log_class", LOGS)
def test_a_log_keeps_rows_of_int64(log_class):
    log = log_class(3)
    assert len(log) == 0 and log.width == 3 and log.tobytes() == b""
    for row in range(2500):  # past the first growth
        log.append(row, -row, 2**62 + row)
    assert len(log) == 2500
    assert log.row(0) == (0, 0, 2**62) and log.row(-1) == (2499, -2499, 2**62 + 2499)
    rows = rows_of(log, 2498)
    np.testing.assert_array_equal(rows, [[2498, -2498, 2**62 + 2498], [2499, -2499, 2**62 + 2499]])
    assert rows_of(log).shape == (2500, 3) and len(log.tobytes(9999)) == 0
    log.append(7, 1, 1)
    assert log.last_row_where(0, 7, 0) == 2500
    assert log.last_row_where(0, 7, 2501) == -1
    assert log.last_row_where(1, -3, 0) == 3 and log.last_row_where(1, -3, 4) == -1
    with pytest.raises(TypeError, match="holds 3 values, not 2"):
        log.append(1, 2)
    with pytest.raises(IndexError):
        log.row(2501)
    with pytest.raises(IndexError):
        log.last_row_where(3, 0, 0)
    with pytest.raises(ValueError):
        log_class(0)
    assert len(log) == 2501


def _program_rows(run):
    """What a program's trace says, with the process-wide command ids numbered in order."""
    table = run.trace.table
    ids = {command_id: order for order, command_id in enumerate(table.numbers["id"].tolist())}
    rows = []
    for record in run.trace.commands:
        rows.append(
            (
                ids[record.id],
                record.seq,
                record.submission,
                record.index,
                record.kind,
                record.label,
                record.staging,
                record.status,
                record.host_read is None,
                record.host_write is None,
                None if record.data_capture is None else record.data_capture.digest,
                None if record.enqueue_capture is None else record.enqueue_capture.digest,
                record.host_pieces and [(offset, n) for offset, n, _ in record.host_pieces],
            )
        )
    # a device-wide synchronize goes through the streams in no fixed order
    syncs = sorted((sync.kind.value, sync.covers or 0) for sync in run.trace.syncs)
    syncs.append(sorted(sync.seq for sync in run.trace.syncs))
    hazards = sorted((hazard.kind.value, len(hazard.command_ids)) for hazard in run.trace.hazards)
    return rows, syncs, hazards


RACE_ATTEMPTS = 6
"""Runs of each appender a program may take to show the same outcome as the other."""


@needs_native
@pytest.mark.parametrize("backend", ["cpu", "dx"])
def test_traces_of_both_appenders_read_the_same(backend, monkeypatch):
    """Every fixed conformance program, traced with the C hooks and with the Python ones:
    the same rows, sync points, captures and hazards. Some programs race on purpose (a
    download and an upload of one host array with no host synchronize between them), and
    which way the race goes depends on timing: with numpy 1.26, 3-6% of runs on ``dx`` went
    the other way, with either appender. So each appender runs a program until one of its
    traces reads the same as one of the other's; an appender that records differently never
    does."""

    def trace_with(recorder_class):
        monkeypatch.setattr(trace_module, "TraceRecorder", recorder_class)
        run = run_program(lnb.create_device(backend), program)
        assert type(run.trace.recorder) is recorder_class
        return _program_rows(run)

    for make in FIXED_PROGRAMS:
        program = make()
        seen_c, seen_python = [], []
        for _ in range(RACE_ATTEMPTS):
            seen_c.append(trace_with(TraceRecorder))
            seen_python.append(trace_with(PythonTraceRecorder))
            if any(rows in seen_python for rows in seen_c):
                break
        else:
            assert seen_c[0] == seen_python[0], program.name
        assert seen_c[0][0], program.name


class _Stream:
    """What the sync hooks read of a stream: its id."""

    def __init__(self, stream_id: int) -> None:
        self.id = stream_id


def test_both_appenders_log_sync_points_alike():
    """The C sync hooks log what the Python ones log: each sync point's row (the commands
    a synchronize covers, or the sync point placed after them), its completion, its error,
    and the host waits in progress; the C hooks refuse what is not a member."""
    from luisa_nb.recording.records import Status, SyncKind

    def sync_rows(recorder_class):
        trace = trace_module.Trace()
        trace.recorder = recorder = recorder_class(trace)
        first, second = _Stream(3), _Stream(4)
        waits = []
        issued = [
            (SyncKind.SYNCHRONIZE, first, None),  # nothing submitted: covers nothing
            (SyncKind.SIGNAL, first, 7),
            (SyncKind.SYNCHRONIZE, first, None),  # covers the signal
            (SyncKind.EVENT_SYNCHRONIZE, None, 7),
            (SyncKind.WAIT, second, 7),
            (SyncKind.CALLBACK, second, None),
        ]
        tokens, fields = [], (None,)
        for number, (kind, stream, event) in enumerate(issued):
            if number == 2:  # a command on each stream before the second synchronize
                recorder._policies.update({3: "execute", 4: "execute"})  # streams seen,
                recorder._described_at[id(fields)] = 0  # fields described: rows alone
                recorder.submitted_one(3, 100, 5, fields, None, None)
                recorder.submitted_one(4, 101, 6, fields, None, None)
            tokens.append(recorder.sync_issued(kind, stream, event, 50 + number))
            waits.append(dict(recorder._host_waits))
        tokens.append(recorder.sync_issued(SyncKind.SYNCHRONIZE, second, None, 60))
        for token in tokens[:-1]:
            recorder.sync_completed(token, Status.OK)
        recorder.sync_completed(tokens[-1], Status.FAILED, error="it broke")
        waits.append(dict(recorder._host_waits))
        if recorder_class is not PythonTraceRecorder:  # the C hooks log members by identity
            with pytest.raises(KeyError, match="not a SyncKind"):
                recorder.sync_issued("synchronize", first, None, 61)
            with pytest.raises(KeyError, match="not a Status"):
                recorder.sync_completed(tokens[0], "ok")
        issued_rows = rows_of(recorder.syncs)
        completed_rows = rows_of(recorder.sync_completions)
        times = issued_rows[:, -1].tolist() + completed_rows[:, 1].tolist()
        assert times == sorted(times)
        return (
            np.delete(issued_rows, -1, axis=1).tolist(),
            np.delete(completed_rows, 1, axis=1).tolist(),
            recorder.sync_errors,
            waits,
            tokens,
        )

    python_rows = sync_rows(PythonTraceRecorder)
    issued, completed, errors, waits, tokens = python_rows
    assert tokens == list(range(7))
    assert [row[5] for row in issued] == [-1, -1, 3, -1, -1, -1, 8]
    assert completed[-1] == [6, 2, 0] and errors == ["it broke"]
    assert waits[0] == {0: 1} and waits[-1] == {}
    if row_appender.NATIVE:
        assert sync_rows(TraceRecorder) == python_rows


@lnb.kernel
def scale(target, factor):
    i = lnb.dispatch_id().x
    target.write(i, target.read(i) * factor)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy >= 2.5: shape/dtype set in place
def test_each_command_is_logged_with_the_fields_trace_fields_gives(recorder_class):
    """The runtime hands each command's trace fields, which it keeps in memos (an
    upload's and a download's in their view, a dispatch's in its arguments): after every
    change that makes the memo stale (new bytes, an array reshaped or given another dtype
    object in place, another array, another size or kernel), the fields logged are the
    ones ``trace_fields()`` gives, and a fresh memo's are shared."""
    point = dtype_of(float3)
    device = lnb.create_device("cpu")
    stream = device.default_stream
    buffer = device.create_buffer(8, np.float32)
    points = device.create_buffer(2, point)
    host, other = np.ones(8, np.float32), np.ones(8, np.float32)
    records = np.zeros(2, point)
    commands = []

    def submit(command):
        stream.submit([command])
        commands.append((command, command.trace_fields()))

    with lnb.trace():
        recorder = active_recorder()
        for _ in range(2):
            submit(buffer.copy_from_async(host))
        host[0] = 2.0
        submit(buffer.copy_from_async(host))
        host.shape = (2, 4)
        submit(buffer.copy_from_async(host))
        host.shape = (4, 2)
        submit(buffer.copy_from_async(host))
        submit(buffer.copy_from_async(other))
        submit(buffer.copy_to_async(host))
        host.shape = (8,)
        submit(buffer.copy_to_async(host))
        submit(buffer.copy_to_async(host))
        submit(points.copy_from_async(records))
        records.dtype = pickle.loads(pickle.dumps(point))  # equal, another object
        submit(points.copy_from_async(records))
        for size in (8, 8, 4):
            submit(bump.dispatch_async(size, buffer))
        submit(scale.dispatch_async(4, buffer, 2.0))
        submit(bump.dispatch_async(4, buffer))
        submit(DispatchCommand("renamed", (4, 1, 1), commands[-1][0].arguments))
        stream.synchronize()
        rows, described = recorder.command_log()
    logged = {command_id: described[position] for command_id, position in zip(
        rows["id"].tolist(), rows["described"].tolist(), strict=True)}  # fmt: skip
    for command, fields in commands:
        assert logged[command.id] is fields, command
    labels = [fields[1] for _, fields in commands if fields[1]]
    assert labels == [
        "bump [8]", "bump [8]", "bump [4]", "scale(factor=2.0) [4]", "bump [4]", "renamed [4]"
    ]  # fmt: skip
    shapes = [fields[3].shape for _, fields in commands[:9]]
    assert shapes == [(8,), (8,), (8,), (2, 4), (4, 2), (8,), (4, 2), (8,), (8,)]
    assert commands[1][1] is commands[0][1] and commands[2][1] is not commands[1][1]
    assert commands[8][1] is commands[7][1] and commands[10][1] is not commands[9][1]


class _Index:
    """An int the hooks convert through ``__index__``."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def test_a_run_logs_its_step_ids_ticks_and_where_it_ended(recorder_class):
    """A run's ids are logged in order, after the runs before it; its ticks, however the
    worker or a backend gives them, are rows naming the run; a run that ended early says
    after how many steps; an id that is no int is an error, and no run is logged."""
    with lnb.trace():
        recorder = active_recorder()
        ids = [3, 2**40 + 7, _Index(-1)] * 700
        timer = recorder.run_timer(ids)
        empty = recorder.run_timer(())
        timer.times.tick()
        timer.times.append(5)
        timer.times.frombytes(np.array([7, 8], np.int64).tobytes())
        empty.tick_at(9)
        timer.end_at(2)
        with pytest.raises(TypeError):
            recorder.run_timer([1, object()])
        logged = recorder.run_log()
    firsts, sizes = logged.runs["first_step"].tolist(), logged.runs["steps"].tolist()
    first, count = firsts[timer.run], sizes[timer.run]
    assert logged.steps["id"][first : first + count].tolist() == [3, 2**40 + 7, -1] * 700
    assert empty.run == timer.run + 1 == len(logged.runs) - 1
    assert (firsts[empty.run], sizes[empty.run]) == (first + count, 0)
    assert logged.ends == {timer.run: 2}
    runs, times = logged.ticks["run"].tolist(), logged.ticks["time"].tolist()
    assert runs == [timer.run] * 4 + [empty.run]
    assert times[0] > 9 and times[1:] == [5, 7, 8, 9]


def test_submitted_logs_plain_values_and_reads_nothing_of_what_it_passes_on(recorder_class):
    """``submitted`` (and ``submitted_one``, for one command) takes each command's id,
    enqueue time and trace fields as values; the stream and commands it gets only go,
    unread, to the recorder's ``_first_submission_of`` (once per stream) and ``_describe``
    (once per trace fields not seen before). Values that do not match the commands are an
    error, and no row is logged."""
    stream, commands = object(), [object(), object(), object()]
    first, second, third = ("first",), ("second",), ("third",)
    with lnb.trace() as trace:
        recorder = trace.recorder
        noted, described = [], []

        def first_submission_of(stream):
            noted.append(stream)
            recorder._policies[7] = "execute"

        recorder._first_submission_of = first_submission_of

        def describe(fields, command, stream):
            described.append((fields, command, stream))
            position = recorder._described_at[id(fields)] = len(described) + 40
            return position

        recorder._describe = describe
        recorder.submitted(7, [11, 12, 13], (21, 22, _Index(23)), [first, first, second],
                           stream, commands)  # fmt: skip
        recorder.submitted(7, (14,), (24,), (second,), stream, commands[:1])
        with pytest.raises(ValueError):
            recorder.submitted(7, [15, 16], [25], [first, first], stream, commands)
        with pytest.raises(TypeError):
            recorder.submitted(7, [15], ["25"], [first], stream, commands)
        recorder.submitted_one(7, _Index(16), 26, third, stream, commands[1])
        recorder.submitted_one(7, 17, 27, third, stream, commands[2])
        recorder.submitted_one(7, 18, 28, first, stream, commands[0])
        with pytest.raises(TypeError):
            recorder.submitted_one(7, 19, "29", first, stream, commands[0])
        rows, _ = recorder.command_log()
    assert noted == [stream]
    assert described == [
        (first, commands[0], stream),
        (second, commands[2], stream),
        (third, commands[1], stream),
    ]
    assert rows["id"].tolist() == [11, 12, 13, 14, 16, 17, 18]
    assert rows["enqueued"].tolist() == [21, 22, 23, 24, 26, 27, 28]
    assert rows["described"].tolist() == [41, 41, 42, 42, 43, 43, 41]
    assert rows["stream"].tolist() == [7] * 7
    assert rows["submission"].tolist() == [1, 1, 1, 2, 3, 4, 5]
    assert rows["seq"].tolist() == [1, 2, 3, 4, 5, 6, 7]


def test_host_accesses_take_at_and_reject_bad_arguments(recorder_class):
    with lnb.trace() as trace:
        recorder = trace.recorder
        data = np.arange(16, dtype=np.uint8)
        recorder.host_read(5, 8, data)
        recorder.host_read(5, 0, data, at=123)
        recorder.host_write(6, data, at=456)
        recorder.host_write(6, data[:4])
        with pytest.raises(TypeError):
            recorder.host_read(5, data)
        with pytest.raises(TypeError):
            recorder.host_write(6, data, when=1)
        with pytest.raises(TypeError):
            recorder.host_read(5, 0, data, 7, at=8)
    rows = rows_of(recorder.accesses)
    digests = digests_of(rows)
    assert rows[:, :3].tolist() == [[5, 0, 8], [5, 0, 0], [6, 1, 0], [6, 1, 0]]
    assert rows[1, 3] == 123 and rows[2, 3] == 456 and rows[0, 3] > 456
    assert digests[0] == digests[1] == digests[2] != digests[3]
    assert trace.captures[digests[3]].nbytes == 4


def test_host_reads_of_several_commands_are_host_read_rows_of_each(recorder_class):
    """host_reads(ids, offset, data, at) appends the rows host_read gives each id, in order,
    with one digest; bad values append no row."""
    data = np.arange(32, dtype=np.uint8)
    with lnb.trace() as trace:
        recorder = trace.recorder
        recorder.host_reads([7, 3, 9], 4, data, 555)
        recorder.host_reads((), 0, data[:8], 556)
        recorder.host_read(3, 4, data, at=555)
        with pytest.raises(TypeError):
            recorder.host_reads([1, "2"], 0, data, 557)
        with pytest.raises(TypeError):
            recorder.host_reads([1], 0, data)
        data[0] ^= 0xFF
        recorder.host_reads([11], 0, data, 558)
    rows = rows_of(recorder.accesses)
    digests = digests_of(rows)
    assert rows[:, :4].tolist() == [
        [7, 0, 4, 555],
        [3, 0, 4, 555],
        [9, 0, 4, 555],
        [3, 0, 4, 555],
        [11, 0, 0, 558],
    ]
    assert digests[:4] == [xxh3_128_digest(np.arange(32, dtype=np.uint8))] * 4
    assert digests[4] == xxh3_128_digest(data) != digests[0]
    assert trace.captured_bytes(trace.captures[digests[4]]).tobytes() == data.tobytes()


@pytest.mark.parametrize("nbytes", [0, 1, 4096, 64 * 1024, 64 * 1024 + 1])
def test_each_access_keeps_the_digest_of_its_bytes(recorder_class, nbytes):
    """The C appender compares bytes equal to the last ones it hashed instead of hashing them
    again: bytes changed in place, in the first or last byte, still get their own digest."""
    data = np.arange(nbytes, dtype=np.uint64).astype(np.uint8)
    seen = []
    with lnb.trace() as trace:
        recorder = trace.recorder
        for change in (None, 0, None, -1, None):
            if change is not None and nbytes:
                data[change] ^= 0xFF
            seen.append(xxh3_128_digest(data))
            recorder.host_read(1, 0, data)
            assert recorder.upload_enqueued(data, data) is trace.captures[seen[-1]]
    digests = digests_of(rows_of(recorder.accesses))
    assert digests == seen
    assert len(set(seen)) == (1 if nbytes == 0 else 2 if nbytes == 1 else 3)


def xxhash_exports_its_hash() -> bool:
    """Whether the shared object of xxhash's extension module exports XXH3_128bits."""
    try:
        import ctypes

        import xxhash._xxhash as extension

        return hasattr(ctypes.CDLL(extension.__file__), "XXH3_128bits")
    except (ImportError, OSError):
        return False


@needs_native
def test_the_c_appender_digests_every_length_as_xxhash_does():
    """Inputs up to 64 KiB are hashed by the C function inside xxhash's module, without a
    Python call, where the module exports it: every length up to 300 bytes and some longer
    ones (either side of 64 KiB, taken by the Python call) get xxh3_128_digest's digest."""
    from luisa_nb.recording import _row_appender

    if xxhash_exports_its_hash():
        assert _row_appender.DIRECT_HASH
    generator = np.random.default_rng(29)
    lengths = [*range(301), 1023, 1024, 4095, 4097, 65535, 65536, 65537, 200_000]
    arrays = [generator.integers(0, 256, length, dtype=np.uint8) for length in lengths]
    with lnb.trace() as trace:
        recorder = trace.recorder
        for command_id, data in enumerate(arrays, 1):
            recorder.host_read(command_id, 0, data)
    assert digests_of(rows_of(recorder.accesses)) == [xxh3_128_digest(data) for data in arrays]


def test_rows_are_in_seq_order_with_times_from_the_trace_clock(recorder_class):
    """Two threads submit to their own streams at once: rows, seqs and submission times
    are in one order, and a submission's time lies between the clock readings around
    it (the C appender reads the clock ``time.perf_counter_ns`` reads)."""
    device = lnb.create_device("cpu")
    buffers = [device.create_buffer(4, np.float32) for _ in range(2)]
    streams = [device.create_stream(f"s{i}") for i in range(2)]
    before = time.perf_counter_ns()

    def submit(stream, buffer):
        for count in range(200):
            stream.submit([bump.dispatch_async(4, buffer) for _ in range(1 + count % 3)])

    with lnb.trace() as trace:
        pairs = zip(streams, buffers, strict=True)
        threads = [threading.Thread(target=submit, args=pair) for pair in pairs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for stream in streams:
            stream.synchronize()
    after = time.perf_counter_ns()
    rows, _ = trace.recorder.command_log()
    column = {name: rows[name] for name in SUBMISSION_COLUMNS}
    assert len(rows) == 2 * sum(1 + count % 3 for count in range(200))
    assert (np.diff(column["seq"]) == 1).all() and column["seq"][0] == 1
    assert (np.diff(column["submission"]) >= 0).all() and column["submission"][-1] == 400
    assert (np.diff(column["submitted"]) >= 0).all()
    assert before < column["submitted"][0] and column["submitted"][-1] < after
    assert (column["enqueued"] <= column["submitted"]).all()
    syncs = trace.syncs
    assert [sync.seq for sync in syncs] == [len(rows) + 1, len(rows) + 2]
    for sync, stream in zip(syncs, streams, strict=True):
        own = column["stream"] == stream.id
        assert sync.covers == column["seq"][own].max()


def test_logs_hold_no_python_object_per_command(recorder_class):
    """A list of 2000 dispatches and one of 2000 uploads leave their rows as numbers: the
    Python objects alive afterwards do not grow with the number of commands (an entry
    tuple with its ints per command, or a digest object per host read, would add
    thousands)."""
    device = lnb.create_device("cpu")
    stream = device.default_stream
    buffer = device.create_buffer(4, np.float32)
    host = np.ones(4, np.float32)
    with lnb.trace() as trace:
        stream.submit([bump.dispatch_async(4, buffer), buffer.copy_from_async(host)])
        stream.synchronize()
        gc.collect()
        before = sys.getallocatedblocks()
        stream.submit([bump.dispatch_async(4, buffer) for _ in range(2000)])
        stream.submit([buffer.copy_from_async(host) for _ in range(2000)])
        stream.synchronize()
        gc.collect()
        after = sys.getallocatedblocks()
    assert len(trace.commands) == 4002
    assert after - before < 500


KEPT_BYTES_PER_COMMAND = 500
"""The most memory a trace may keep per command of a long loop (its logs, and what they
name)."""


def _simulate(device: lnb.Device, iterations: int) -> None:
    """A simulation loop as a user writes it: upload, dispatch, download, synchronize."""
    stream = device.default_stream
    state = device.create_buffer(256, np.float32)
    parameters, result = np.zeros(256, np.float32), np.zeros(256, np.float32)
    for _ in range(iterations):
        stream.submit(
            [
                state.copy_from_async(parameters),
                bump.dispatch_async(256, state),
                state.copy_to_async(result),
            ]
        )
        stream.synchronize()


def test_a_long_traced_loop_keeps_little_memory_per_command(recorder_class):
    """A loop of 6,667 iterations (20,001 commands, 6,667 sync points) leaves its trace
    holding at most 500 bytes per command, as tracemalloc counts them: the sizes of the
    allocations still alive, the same in every run. (A log of ids and one of times per
    run, each reserving 8 KiB when first written, made the C appender keep 5.8 KB.)"""
    iterations = 6_667
    device = lnb.create_device("cpu")  # staging="submit" would count its staging memory too
    _simulate(device, 100)  # the kernel's build, and what the runtime allocates once
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with lnb.trace() as trace:
            _simulate(device, iterations)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    commands = len(trace.recorder.submissions)
    assert commands == 3 * iterations
    assert kept / commands <= KEPT_BYTES_PER_COMMAND


def _traced_program() -> tuple[weakref.ref, weakref.ref, lnb.Device]:
    device = lnb.create_device("cpu")
    buffer = device.create_buffer(4, np.float32)
    host = np.ones(4, np.float32)
    with lnb.trace() as trace:
        buffer.copy_from(host)
        bump(buffer, dispatch_size=4)
        buffer.copy_to(host)
    assert len(trace.commands) == 3
    return weakref.ref(trace), weakref.ref(trace.recorder), device


def test_a_stopped_trace_is_freed(recorder_class):
    """Once the user lets go of a stopped trace, it and its recorder are freed, while the
    device and its stream live on: the C appender says what it holds, and a stream's worker
    keeps no recorder between runs. (Made in a function: a frame whose ``f_locals`` the
    trace read keeps its variables until it returns.)"""
    trace, recorder, device = _traced_program()
    gc.collect()
    assert trace() is None and recorder() is None
    assert device.default_stream is not None


def test_the_python_hooks_can_be_chosen_where_the_c_appender_was_built():
    code = "from luisa_nb.recording import row_appender as a; print(a.NATIVE, a.RowAppender)"
    environment = {**os.environ, row_appender.PYTHON_HOOKS_VARIABLE: "1"}
    chosen = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    )
    assert chosen.stdout.split()[0] == "False" and "PythonRowAppender" in chosen.stdout
    environment[row_appender.PYTHON_HOOKS_VARIABLE] = "0"
    default = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    )
    built = importlib.util.find_spec("luisa_nb.recording._row_appender") is not None
    assert default.stdout.split()[0] == str(built)  # as built, whatever this process chose


def test_a_digest_names_the_bytes_it_was_taken_of_while_another_thread_writes(recorder_class):
    """Host memory may change while a hook runs Python code (another thread, or real
    LuisaCompute's own threads, writing it). Here the bytes change while they are being
    captured: the next read of the changed bytes still gets their own digest, not the
    digest of the bytes before the change (the C appender keeps the bytes it hashed, copied
    before hashing)."""
    data = np.zeros(4096, np.uint8)
    with lnb.trace() as trace:
        recorder = trace.recorder
        capture = recorder._capture

        def capture_then_write(bytes_, digest, owned=False):
            captured = capture(bytes_, digest, owned)
            data[7] = 99  # what a writer racing with the hook would do
            return captured

        recorder._capture = capture_then_write
        recorder.host_read(1, 0, data)
        recorder._capture = capture
        recorder.host_read(2, 0, data)
    digests = digests_of(rows_of(recorder.accesses))
    before = np.zeros(4096, np.uint8)
    assert digests == [xxh3_128_digest(before), xxh3_128_digest(data)]


@needs_native
def test_a_capture_holds_the_bytes_its_digest_names_while_another_thread_writes():
    """Capturing new bytes runs Python code, while which another thread may write the host
    memory. The C appender captures the copy it hashed, so the capture's blob holds the bytes
    its digest names, not the bytes written meanwhile."""
    data = np.zeros(4096, np.uint8)
    with lnb.trace() as trace:
        recorder = trace.recorder
        assert isinstance(recorder, TraceRecorder)
        capture = recorder._capture

        def write_then_capture(bytes_, digest, owned=False):
            data[7] = 99  # what a writer racing with the hook would do
            return capture(bytes_, digest, owned)

        recorder._capture = write_then_capture
        recorder.host_read(1, 0, data)
    digests = digests_of(rows_of(recorder.accesses))
    before = np.zeros(4096, np.uint8)
    assert digests == [xxh3_128_digest(before)]
    np.testing.assert_array_equal(trace.captured_bytes(trace.captures[digests[0]]), before)
    assert not trace.captured_bytes(trace.captures[digests[0]]).flags.writeable


def test_a_capture_keeps_an_owned_copy_as_it_is_and_copies_other_bytes():
    """``Trace.capture(data, owned=True)`` keeps ``data`` itself as the blob (the C appender
    hands it the copy it hashed, which no one writes); other bytes are copied, so a later
    write to them leaves the blob alone. A head shorter than the bytes is always copied."""
    owned, shared = np.full(4096, 1, np.uint8), np.full(4096, 2, np.uint8)
    owned.flags.writeable = False
    with lnb.trace() as trace:
        kept = trace.capture(owned, owned=True)
        copied = trace.capture(shared)
    with lnb.trace(capture_bytes=16) as head_trace:
        head = head_trace.capture(np.full(4096, 3, np.uint8), owned=True)
    assert trace.blobs[kept.blob] is owned
    assert trace.blobs[copied.blob] is not shared
    assert not trace.captured_bytes(copied).flags.writeable
    shared[0] = 9
    np.testing.assert_array_equal(trace.captured_bytes(copied), np.full(4096, 2, np.uint8))
    assert not head.complete and len(head_trace.blobs[head.blob]) == 16


@pytest.mark.parametrize(
    ("capture", "capture_bytes"), [("none", 0), ("head", 16), ("head", 4096), ("full", 0)]
)
def test_both_appenders_capture_new_bytes_alike_under_each_policy(capture, capture_bytes):
    """The C hooks capture new bytes themselves where the policy keeps all of them or none,
    and leave a shorter head to ``Trace.capture``: every capture, and every blob, is the one
    the Python hooks make."""
    sizes = (0, 1, 16, 17, 4096, 64 * 1024 + 1)
    arrays = [np.arange(nbytes, dtype=np.uint64).astype(np.uint8) for nbytes in sizes]
    captured = []
    for recorder_class in [parameter.values[0] for parameter in RECORDERS]:
        trace = trace_module.Trace(capture, capture_bytes)
        trace.recorder = recorder = recorder_class(trace)
        made = []
        for data in arrays:
            made.append(recorder.upload_enqueued(data, data))
            recorder.host_write(1, data[::-1].copy())
            made.append(trace.captures[digests_of(rows_of(recorder.accesses))[-1]])
        for capture_made, data in zip(made[::2], arrays, strict=True):
            assert capture_made.digest == xxh3_128_digest(data).hex()
        blobs = {key: blob.tobytes() for key, blob in trace.blobs.items()}
        assert all(not blob.flags.writeable for blob in trace.blobs.values())
        captured.append((made, blobs, dict(trace.captures)))
    assert all(result == captured[0] for result in captured[1:])


def test_a_hook_that_runs_inside_another_keeps_each_digest_exact(recorder_class):
    """A hook's allocation may start a garbage collection, which may run Python code, and
    with it another thread's hook: here a collection callback reads other bytes in the
    middle of each read. Every access still keeps the digest of its own bytes (the C appender
    hashes a copy that no other hook writes)."""
    first = np.full(4096, 1, np.uint8)
    second = np.full(4096, 2, np.uint8)
    with lnb.trace() as trace:
        recorder = trace.recorder
        inside = []

        def read_other_bytes(phase, info):
            if phase == "start" and not inside:
                inside.append(True)
                recorder.host_read(2, 0, second)
                inside.clear()

        threshold = gc.get_threshold()
        gc.callbacks.append(read_other_bytes)
        gc.set_threshold(1)  # every allocation of a tracked object starts a collection
        try:
            for value in range(3, 12):
                first[0] = value  # new bytes: each read hashes them
                recorder.host_read(1, 0, first)
        finally:
            gc.set_threshold(*threshold)
            gc.callbacks.remove(read_other_bytes)
    rows = rows_of(recorder.accesses)
    digests = digests_of(rows)
    reads = [(int(row[0]), digest) for row, digest in zip(rows, digests, strict=True)]
    assert [command_id for command_id, _ in reads].count(1) == 9
    expected_first = []
    for value in range(3, 12):
        first[0] = value
        expected_first.append(xxh3_128_digest(first))
    assert [digest for command_id, digest in reads if command_id == 1] == expected_first
    assert {digest for command_id, digest in reads if command_id == 2} <= {xxh3_128_digest(second)}
