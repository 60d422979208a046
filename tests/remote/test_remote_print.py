"""Device ``print`` on ``remote``: a kernel's lines come back with its dispatch's reply and
go to stdout and into the trace as on the local cpu backend, with the same per-dispatch
limit and count of dropped lines, failed launches included."""

import json

import numpy as np
import pytest
from helpers.printing_kernels import bad_index, squares

zmq = pytest.importorskip("zmq")

import luisa_nb as lnb  # noqa: E402
from luisa_nb.errors import CommandFailedError, KernelIndexError  # noqa: E402
from luisa_nb.kernels import compiler_available  # noqa: E402
from luisa_nb.kernels.lang.device_print import PRINT_LIMIT_VARIABLE  # noqa: E402
from luisa_nb.remote.channel import Channel  # noqa: E402
from luisa_nb.remote.protocol import MAX_PRINT_BYTES, PROTOCOL_VERSION, encode  # noqa: E402

from .helpers import TOKEN, StreamSocket  # noqa: E402

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C compiler")


SQUARES = lnb.kernel(squares, mode="c")
BAD_INDEX = lnb.kernel(bad_index, mode="c")


def printed_run(device, capsys, kernel, sizes, fails=False):
    """What dispatches of ``kernel`` of ``sizes`` print on ``device``: stdout's lines,
    each dispatch's (lines, dropped) in the trace, the failure's cause, the results."""
    out = device.create_buffer(max(sizes), np.int32)
    out.copy_from(np.zeros(max(sizes), np.int32))
    capsys.readouterr()
    cause = None
    with lnb.trace() as trace:
        for size in sizes:
            kernel(out, dispatch_size=size)
        if fails:
            with pytest.raises(CommandFailedError) as caught:
                device.synchronize()
            cause = type(caught.value.__cause__)
        device.synchronize()
    logs = [
        ([(line.thread, line.text) for line in trace.printed(c).lines], trace.printed(c).dropped)
        for c in trace.commands
        if c.kind.name == "DISPATCH"
    ]
    return capsys.readouterr().out.splitlines(), logs, cause, out.numpy().tolist()


@pytest.fixture(scope="module")
def on_cpu():
    """The same runs on the local cpu backend, by (kernel, sizes)."""
    return {}


def cpu_run(on_cpu, capsys, kernel, sizes, fails=False):
    key = (kernel.__name__, tuple(sizes))
    if key not in on_cpu:
        on_cpu[key] = printed_run(lnb.create_device("cpu"), capsys, kernel, sizes, fails)
    return on_cpu[key]


def test_lines_go_to_stdout_and_the_trace_as_on_cpu(device, capsys, on_cpu):
    remote = printed_run(device, capsys, SQUARES, [3, 2])
    assert remote == cpu_run(on_cpu, capsys, SQUARES, [3, 2])
    assert remote[0][2] == "[DEVICE] square of 2 is 4 0.5 (2, 0.5) true"
    assert remote[1][1] == (
        [
            ((0, 0, 0), "square of 0 is 0 0 (0, 0.5) false"),
            ((1, 0, 0), "square of 1 is 1 0.25 (1, 0.5) false"),
        ],
        0,
    )


def test_the_limit_and_the_dropped_lines_are_as_on_cpu(device, capsys, monkeypatch):
    monkeypatch.setenv(PRINT_LIMIT_VARIABLE, "5")
    remote = printed_run(device, capsys, SQUARES, [100])
    local = printed_run(lnb.create_device("cpu"), capsys, SQUARES, [100])
    assert remote == local
    assert remote[0][-1] == f"[DEVICE] ... 95 more lines dropped ({PRINT_LIMIT_VARIABLE})"
    assert [len(lines) for lines, _ in remote[1]] == [5] and remote[1][0][1] == 95


def test_lines_printed_before_a_failure_are_kept_as_on_cpu(device, capsys, on_cpu):
    remote = printed_run(device, capsys, BAD_INDEX, [4, 1], fails=True)
    assert remote == cpu_run(on_cpu, capsys, BAD_INDEX, [4, 1], fails=True)
    assert remote[2] is KernelIndexError
    assert "[DEVICE] before 0" in remote[0]
    assert remote[1][1] == ([((0, 0, 0), "before 0")], 0)  # a submission of its own: it ran
    assert printed_run(device, capsys, SQUARES, [2])[3] == [0, 1]  # the device works on


def test_a_limit_past_the_servers_bound_keeps_what_fits_and_counts_the_rest(
    thread_server, capsys, monkeypatch
):
    monkeypatch.setenv(PRINT_LIMIT_VARIABLE, str(1 << 20))
    device = lnb.create_device(thread_server.address, token=TOKEN)
    threads = 1 << 16
    [(lines, dropped)] = printed_run(device, capsys, SQUARES, [threads])[1]
    assert len(lines) == MAX_PRINT_BYTES // (8 * 10)  # records of 4 + 6 words
    assert len(lines) + dropped == threads
    device.backend.close()


@pytest.mark.parametrize(
    ("print_log", "reason"),
    [
        ([3, 10], "records under 4 words"),
        ([10, MAX_PRINT_BYTES], f"exceeds {MAX_PRINT_BYTES} bytes"),
        ([10], "must be [record width, capacity]"),
        ([10, -1], "print log field must be an integer"),
    ],
)
def test_a_bad_print_log_fails_its_dispatch(thread_server, monkeypatch, print_log, reason):
    sent = []
    add = Channel.add
    monkeypatch.setattr(
        Channel, "add", lambda self, op, *a, **k: add(self, sent.append(op) or op, *a, **k)
    )
    device = lnb.create_device(thread_server.address, token=TOKEN)
    out = device.create_buffer(4, np.int32)
    out.copy_from(np.zeros(4, np.int32))
    SQUARES(out, dispatch_size=1)  # the worker knows the kernel now
    device.synchronize()
    [dispatch] = [op for op in sent if op[0] == "dispatch_printing"]
    dispatch[-2:] = [None, print_log]  # no definition: the worker has it
    raw = StreamSocket(device.backend._connection.worker_path)
    session = device.backend._connection.session
    envelope = encode({"v": PROTOCOL_VERSION, "id": 5, "session": session, "op": "batch"})
    raw.send_multipart([envelope, encode({"group": 1, "ops": [dispatch], "frees": []})])
    reply = json.loads(raw.recv_multipart()[0])
    raw.close()
    assert reply["done"] == 0 and reason in reply["error"], reply
    assert "printed" not in reply
    device.backend.close()


def test_commands_after_a_failed_printing_dispatch_are_skipped_as_on_cpu(device, capsys):
    def run(on):
        out = on.create_buffer(4, np.int32)
        out.copy_from(np.zeros(4, np.int32))
        back = np.full(4, -1, np.int32)
        capsys.readouterr()
        with lnb.trace() as trace:
            on.default_stream.submit(
                [
                    BAD_INDEX.dispatch_async(4, out),
                    SQUARES.dispatch_async(4, out),
                    out.copy_to_async(back),
                ]
            )
            with pytest.raises(CommandFailedError) as caught:
                on.default_stream.synchronize()
        printed = [
            [line.text for line in trace.printed(c).lines]
            for c in trace.commands
            if c.kind.name == "DISPATCH"
        ]
        statuses = [c.status.name for c in trace.commands if c.kind.name != "SYNC"]
        return capsys.readouterr().out, printed, statuses, type(caught.value.__cause__), back

    remote, local = run(device), run(lnb.create_device("cpu"))
    assert remote[:4] == local[:4]
    assert local[2] == ["FAILED", "SKIPPED", "SKIPPED"] and local[1][1] == []
    assert "square of" not in remote[0] and list(remote[4]) == [-1, -1, -1, -1]
