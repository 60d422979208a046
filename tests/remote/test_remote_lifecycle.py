"""Servers start, connect, die and stop: errors are clear and no process is left."""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

pytest.importorskip("zmq")

import luisa_nb as lnb
from luisa_nb.errors import CommandFailedError, ConfigurationError, RemoteError
from luisa_nb.trace.records import Status


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return "State:\tZ" not in status.read()
    except FileNotFoundError:
        return False


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not running(pid)


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
    with pytest.raises(RemoteError, match="refused hello: authentication failed: wrong token"):
        lnb.create_device(address, token=token + "x")
    with pytest.raises(ConfigurationError, match="needs token="):
        lnb.create_device(address)


def test_a_server_that_stops_answering_fails_at_synchronize(served):
    process, address, token, _ = served
    device = lnb.create_device(address, token=token, timeout=1.0)
    buffer = device.create_buffer(4, np.float32)
    buffer.fill(1.0)
    device.synchronize()
    process.send_signal(signal.SIGSTOP)
    try:
        with lnb.trace() as trace:
            buffer.fill(2.0)
            with pytest.raises(CommandFailedError, match="stopped answering: no reply within 1 s"):
                device.synchronize()
    finally:
        process.send_signal(signal.SIGCONT)
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
