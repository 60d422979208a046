"""Servers start, connect, die and stop: errors are clear and no process is left."""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import numpy as np
import pytest

pytest.importorskip("zmq")

from kernels.checked_kernels import spin_forever

import luisa_nb as lnb
from luisa_nb.errors import CommandFailedError, ConfigurationError, LuisaNbError, RemoteError
from luisa_nb.kernels import compiler_available
from luisa_nb.recording.records import Status
from luisa_nb.remote.launcher import LocalServer

from .helpers import TOKEN, cpu_seconds, running, server_helpers, wait_gone

pytestmark = pytest.mark.timeout(300)  # a regression fails here, with stacks, not hangs


@pytest.fixture
def served():
    """``luisa-nb serve`` on a free port with a known token: (process, address, token)."""
    token = "cli-token-42"
    process = subprocess.Popen(
        [sys.executable, "-m", "luisa_nb.cli", "serve", "--port", "0", "--token", token],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines = [process.stdout.readline() for _ in range(3)]
    address = lines[2].split("create_device(")[1].split(",")[0].strip("'")
    yield process, address, token, lines
    process.terminate()
    process.wait(5)
    process.stdout.close()


@pytest.mark.skipif(not compiler_available(), reason="no C compiler")
def test_a_server_killed_during_an_endless_kernel_leaves_no_process_behind(served):
    # the worker runs the kernel on its main thread and reads no message meanwhile; its
    # fork server and multiprocessing's resource tracker must end with the server too
    process, address, token, _ = served
    device = lnb.create_device(address, token=token, timeout=10.0)
    spin = lnb.kernel(mode="c")(spin_forever)
    device.default_stream.submit([spin.dispatch_async(4, device.create_buffer(4, np.int32))])
    worker = device.info["server_worker_pid"]
    helpers = server_helpers(process.pid)
    assert len(helpers) == 2 and running(worker)
    started = cpu_seconds(worker)
    assert wait_until(lambda: cpu_seconds(worker) - started > 0.2), "the kernel did not spin"
    process.kill()
    process.wait()
    for pid in [worker, *helpers]:
        assert wait_gone(pid), f"process {pid} outlived the server it belonged to"
    with pytest.raises(CommandFailedError, match="dropped"):
        device.close()


def wait_until(condition, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_serve_prints_where_and_with_what_token(served):
    process, address, token, lines = served
    assert lines[0].startswith("serving backend 'cpu' on tcp://127.0.0.1:")
    assert lines[1] == f"token: {token}\n"
    assert address == "remote://" + lines[0].split("tcp://")[1].strip()
    device = lnb.create_device(address, token=token)
    buffer = device.create_buffer(5, np.float64)
    buffer.copy_from(np.arange(5.0))
    assert np.array_equal(buffer.numpy(), np.arange(5.0))
    assert device.info["started_server"] is False
    assert device.info["server_pid"] == process.pid
    device.backend.close()


def test_a_wrong_or_missing_token_is_a_clear_error(served):
    _, address, token, _ = served
    started = time.monotonic()
    with pytest.raises(RemoteError, match=r"refused the token \(authentication failed\)"):
        lnb.create_device(address, token=token + "x")
    assert time.monotonic() - started < 2.0  # told by the handshake, not by a timeout
    with pytest.raises(ConfigurationError, match="needs token="):
        lnb.create_device(address)


@pytest.mark.parametrize("direct", [False, True], ids=["relayed", "direct"])
def test_a_server_that_stops_answering_fails_at_synchronize(served, direct):
    process, address, token, _ = served
    device = lnb.create_device(address, token=token, timeout=1.0, direct=direct)
    assert device.info["direct"] is direct
    buffer = device.create_buffer(4, np.float32)
    buffer.fill(1.0)
    device.synchronize()
    stopped = device.info["server_worker_pid"] if direct else process.pid
    os.kill(stopped, signal.SIGSTOP)
    try:
        with lnb.trace() as trace:
            buffer.fill(2.0)
            with pytest.raises(CommandFailedError, match="stopped answering: no reply within 1 s"):
                device.synchronize()
    finally:
        os.kill(stopped, signal.SIGCONT)
    assert [r.status for r in trace.commands] == [Status.FAILED]
    assert "ServerLostError" in trace.commands[0].error
    with pytest.raises(RemoteError, match="stopped answering"):
        device.create_buffer(4, np.float32)
    device.backend.close()


def test_a_dead_server_fails_at_synchronize_and_the_trace_keeps_every_record():
    device = lnb.create_device("remote", staging="execute")
    x = device.create_buffer(64, np.float32)
    out = np.zeros(64, np.float32)
    with lnb.trace() as trace:
        x.fill(1.0)
        x.copy_to(out)
        os.kill(device.info["server_pid"], signal.SIGKILL)
        assert wait_gone(device.info["server_worker_pid"])  # else it may still answer
        stream = device.default_stream
        stream.submit([x.fill_async(2.0), x.copy_to_async(out), x.fill_async(3.0)])
        with pytest.raises(CommandFailedError, match=r"exited with code -9") as caught:
            stream.synchronize()
    assert np.all(out == 1.0)
    statuses = [r.status for r in trace.commands]
    assert statuses == [Status.OK, Status.OK, Status.FAILED, Status.SKIPPED, Status.SKIPPED]
    assert len(trace.syncs) == 2 and "ServerLostError" in trace.commands[2].error
    assert isinstance(caught.value.__cause__, RemoteError)
    device.backend.close()


def test_the_server_stops_when_its_device_is_collected():
    device = lnb.create_device("remote")
    pid = device.info["server_pid"]
    assert running(pid)
    device.create_buffer(8, np.int32).fill(1)
    device.synchronize()
    del device
    gc.collect()
    assert wait_gone(pid)


def run_client(code: str) -> subprocess.Popen:
    script = textwrap.dedent(
        """
        import sys, time, numpy as np, luisa_nb as lnb
        device = lnb.create_device("remote")
        device.create_buffer(8, np.float32).fill(1.0)
        device.synchronize()
        print(device.info["server_pid"], flush=True)
        """
    )
    return subprocess.Popen([sys.executable, "-c", script + code], stdout=subprocess.PIPE)


def test_the_server_stops_when_its_client_exits():
    client = run_client("")
    pid = int(client.stdout.readline())
    assert client.wait(10) == 0
    client.stdout.close()
    assert wait_gone(pid)


def test_the_server_stops_when_its_client_is_killed():
    client = run_client("time.sleep(60)")
    pid = int(client.stdout.readline())
    assert running(pid)
    client.kill()
    client.wait()
    client.stdout.close()
    assert wait_gone(pid)


def test_every_call_after_close_says_the_device_was_closed(thread_server):
    device = lnb.create_device(thread_server.address, token=thread_server.token)
    buffer = device.create_buffer(16, np.float32)
    buffer.fill(1.0)
    device.synchronize()
    backend = device.backend
    allocation = backend.allocate(16)
    bytes_ = np.zeros(16, np.uint8)
    backend.close()
    calls = {
        "allocate": lambda: backend.allocate(8),
        "upload": lambda: backend.upload(allocation, 0, bytes_),
        "download": lambda: backend.download(allocation, 0, bytes_),
        "copy": lambda: backend.copy(allocation, 0, allocation, 8, 8),
        "fill": lambda: backend.fill(allocation, 0, 16, np.zeros(1, np.float32)),
        "flush": backend.flush,
    }
    closed = r"this remote device \(tcp://127\.0\.0\.1:\d+\) was closed; create a new one"
    for call in calls.values():
        with pytest.raises(RemoteError, match=closed):
            call()
    with pytest.raises(LuisaNbError, match="was closed"):
        device.create_buffer(4, np.float32)
    buffer.fill(2.0)
    with pytest.raises(LuisaNbError, match="was closed"):
        device.synchronize()
    with pytest.raises(LuisaNbError, match="was closed"):
        buffer.numpy()
    backend.close()  # again: nothing to do


def test_a_server_killed_mid_session_fails_the_next_synchronize_at_once():
    server = LocalServer("cpu", timeout=30.0)
    try:
        address = "remote://" + server.endpoint.removeprefix("tcp://")
        device = lnb.create_device(address, token=server.token)  # 60 s timeout
        buffer = device.create_buffer(64, np.float32)
        buffer.fill(1.0)
        device.synchronize()
        worker = device.info["server_worker_pid"]
        server.process.kill()
        server.process.wait()
        assert wait_gone(worker)  # a server's workers do not outlive it (nor answer)
        started = time.monotonic()
        buffer.fill(2.0)
        with pytest.raises(CommandFailedError) as caught:
            device.synchronize()
        assert time.monotonic() - started < 5.0  # the dropped connection tells, not a timeout
        cause = caught.value.__cause__
        assert isinstance(cause, RemoteError)
        assert "the connection to the server at tcp://127.0.0.1:" in str(cause)
        assert "dropped: the server exited, was killed or restarted" in str(cause)
        with pytest.raises(RemoteError, match="dropped"):
            device.create_buffer(4, np.float32)
        device.backend.close()
    finally:
        server.stop()


class _Collected:
    """An object whose weakref callback runs SIGTERM's handler, as when the signal
    arrives while Python runs that callback."""


def test_a_sigterm_whose_interrupt_python_dropped_still_stops_serving(monkeypatch):
    """The interrupt is lost, not raised, and Python's report of it is dropped (a client
    shares its stderr with the server it started); other lost exceptions are reported."""
    from luisa_nb.remote.options import stop_on_terminate
    from luisa_nb.remote.server import Server

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)  # put back after the test
    server = Server("cpu", port=0, token=TOKEN)
    before = signal.getsignal(signal.SIGTERM)
    terminated = stop_on_terminate()
    handler = signal.getsignal(signal.SIGTERM)
    serving = threading.Thread(target=server.serve, args=(terminated,))
    try:
        serving.start()
        collected = _Collected()
        reference = weakref.ref(collected, lambda _: handler(signal.SIGTERM, None))
        del collected  # the KeyboardInterrupt is lost, not raised
        assert reference() is None
        serving.join(10.0)
        assert not serving.is_alive(), "SIGTERM was lost: the server kept serving"
        assert not reported
        other = _Collected()
        failing = weakref.ref(other, lambda _: 1 / 0)
        del other
        assert failing() is None
        assert [type(unraisable.exc_value) for unraisable in reported] == [ZeroDivisionError]
    finally:
        signal.signal(signal.SIGTERM, before)
        terminated.set()
        serving.join()
        server.close()
