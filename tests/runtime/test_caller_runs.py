"""A synchronous call runs its stream's queued quick work on the caller's thread; the
worker takes quick runs nobody waits for after a short delay, and everything else at
once (docs/runtime.md, "Who runs a stream's work")."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb import errors
from luisa_nb.recording import Status
from luisa_nb.runtime import execution
from luisa_nb.runtime import stream as stream_module
from luisa_nb.runtime.execution import Executor
from luisa_nb.runtime.staging import Transfers

SIZE = 256


@lnb.kernel
def double(values):
    index = lnb.dispatch_id().x
    values.write(index, values.read(index) * 2.0)


class RunThreads:
    """Which thread ran each run of the executors, and how often a worker was woken."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.threads: list[str] = []
        self.wakes = 0
        execute_runs = Executor.execute_runs

        def noted(executor, runs):
            self.threads += [threading.current_thread().name] * len(runs)
            return execute_runs(executor, runs)

        monkeypatch.setattr(Executor, "execute_runs", noted)
        push = stream_module.WorkQueue.push

        def counted(work, item):
            before = work.wakes.qsize()
            push(work, item)
            self.wakes += work.wakes.qsize() > before

        monkeypatch.setattr(stream_module.WorkQueue, "push", counted)


def step(buffer, host, out):
    buffer.copy_from(host)
    double(buffer, dispatch_size=SIZE)
    buffer.copy_to(out)


def timed_buffer(device):
    """A buffer and an output array after two steps: the kernel's first launch is timed,
    so from the second on its launches are quick runs."""
    buffer = device.create_buffer(SIZE, np.float32)
    out = np.empty(SIZE, np.float32)
    step(buffer, np.ones(SIZE, np.float32), out)
    step(buffer, np.ones(SIZE, np.float32), out)
    return buffer, out


@pytest.fixture
def patient(monkeypatch):
    """Timing left out: every timed launch counts as quick, and a worker with quick runs
    queued keeps looking at its queue (a loaded machine may stall a step for longer)."""
    monkeypatch.setattr(execution, "QUICK_DISPATCH_NANOSECONDS", 10**12)
    monkeypatch.setattr(stream_module, "LINGERING_DELAYS", 10**9)


def test_a_loop_of_synchronous_steps_runs_on_the_callers_thread(monkeypatch, device, patient):
    buffer, out = timed_buffer(device)
    probe = RunThreads(monkeypatch)
    for value in range(20):
        step(buffer, np.full(SIZE, float(value), np.float32), out)
        np.testing.assert_array_equal(out, 2.0 * value)
    assert set(probe.threads) == {threading.main_thread().name}
    assert len(probe.threads) == 60
    assert probe.wakes <= 1  # at most the first push, if the worker had gone to sleep


def test_a_kernel_never_timed_runs_on_the_worker(monkeypatch, device):
    @lnb.kernel
    def triple(values):
        index = lnb.dispatch_id().x
        values.write(index, values.read(index) * 3.0)

    buffer = device.create_buffer(SIZE, np.float32)
    out = np.empty(SIZE, np.float32)
    probe = RunThreads(monkeypatch)
    buffer.copy_from(np.ones(SIZE, np.float32))
    triple(buffer, dispatch_size=SIZE)
    buffer.copy_to(out)
    np.testing.assert_array_equal(out, 3.0)
    assert probe.threads[0] == f"luisa_nb {device.default_stream.name}"
    assert probe.wakes >= 1


def test_quick_work_nobody_waits_for_still_runs(device):
    buffer = device.create_buffer(SIZE, np.float32)
    out = np.zeros(SIZE, np.float32)
    buffer.copy_from(np.full(SIZE, 4.0, np.float32))
    buffer.copy_to(out, sync=False)
    work = device.default_stream._work_queue
    deadline = time.monotonic() + 30  # a guard against a hang, not a measure
    while work.items and time.monotonic() < deadline:
        time.sleep(0.001)
    assert not work.items
    with work.running:  # the worker has finished the runs it took
        np.testing.assert_array_equal(out, 4.0)


class TimedLooks:
    """The waits of a stream's worker between looks at its queue (its timed ``get``s of
    the wake queue), in seconds."""

    def __init__(self, work: stream_module.WorkQueue) -> None:
        self.wakes, self.waits = work.wakes, []
        work.wakes = self

    def put(self, item: object) -> None:
        self.wakes.put(item)

    def qsize(self) -> int:
        return self.wakes.qsize()

    def get(self, block: bool = True, timeout: float | None = None) -> object:
        if timeout is not None:
            self.waits.append(timeout)
        return self.wakes.get(block, timeout)


def test_the_worker_looks_less_often_while_callers_run_the_work(device, patient):
    """While a loop of synchronous steps runs its quick work itself, each look of the
    worker at its empty queue doubles the wait to the next, up to 64 ms; a quick run left
    to it brings the wait back to 1 ms. (A look needs the GIL, which the loop holds.)"""
    buffer, out = timed_buffer(device)
    work = device.default_stream._work_queue
    looks = TimedLooks(work)
    longest = stream_module.LONGEST_LOOK_NANOSECONDS / 1e9
    deadline = time.monotonic() + 30  # a guard against a hang, not a measure
    while longest not in looks.waits and time.monotonic() < deadline:
        step(buffer, np.ones(SIZE, np.float32), out)
    first = stream_module.QUICK_RUN_DELAY_NANOSECONDS
    lingering = [wait for wait in looks.waits if wait >= first / 1e9]
    resets = [place for place, wait in enumerate(lingering) if wait == first / 1e9]
    since_reset = lingering[resets[-1] :] if resets else lingering  # it may have begun before
    doubling = [(first << k) / 1e9 for k in range(7)]  # 1, 2, 4 ... 64 ms
    assert since_reset == doubling[-len(since_reset) :]
    seen = len(looks.waits)
    buffer.copy_to(out, sync=False)  # nobody waits for it: the worker runs it
    while work.items and time.monotonic() < deadline:
        time.sleep(0.001)
    while len(looks.waits) <= seen + 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert not work.items
    assert first / 1e9 in looks.waits[seen:]


def test_work_behind_a_callback_is_left_to_the_worker(monkeypatch, device, patient):
    buffer, out = timed_buffer(device)
    stream = device.default_stream
    seen = []
    opened = threading.Event()
    stream.add_callback(lambda: opened.wait(30))
    probe = RunThreads(monkeypatch)
    buffer.copy_from(np.full(SIZE, 5.0, np.float32))
    stream.add_callback(lambda: seen.append(threading.current_thread().name))
    threading.Timer(0.05, opened.set).start()
    buffer.copy_to(out)
    np.testing.assert_array_equal(out, 5.0)
    assert seen == [f"luisa_nb {stream.name}"]
    assert probe.threads[0] == f"luisa_nb {stream.name}"


def test_threads_sharing_a_stream_keep_their_order(device):
    stream = device.default_stream
    buffers = [device.create_buffer(SIZE, np.float32) for _ in range(3)]
    failures = []

    def loop(buffer, offset):
        out = np.empty(SIZE, np.float32)
        try:
            for value in range(40):
                buffer.copy_from(np.full(SIZE, float(value + offset), np.float32))
                double(buffer, dispatch_size=SIZE)
                buffer.copy_to(out)
                if not (out == 2.0 * (value + offset)).all():
                    failures.append((offset, value, float(out[0])))
        except BaseException as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=loop, args=(b, 100 * i)) for i, b in enumerate(buffers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stream.synchronize()
    assert failures == []


def test_ctrl_c_in_work_run_by_the_caller_raises_keyboard_interrupt(monkeypatch, device, patient):
    buffer, out = timed_buffer(device)
    download = Transfers.download
    interrupted = []

    def interrupt_once(transfers, command):
        if not interrupted and threading.current_thread() is threading.main_thread():
            interrupted.append(command.id)
            raise KeyboardInterrupt
        return download(transfers, command)

    monkeypatch.setattr(Transfers, "download", interrupt_once)
    with lnb.trace() as trace, pytest.raises(KeyboardInterrupt):
        step(buffer, np.full(SIZE, 3.0, np.float32), out)
    assert interrupted
    (number,) = trace.numbers_of(interrupted)
    assert trace.command(number).status is Status.FAILED
    step(buffer, np.full(SIZE, 6.0, np.float32), out)  # no failure is left to raise
    np.testing.assert_array_equal(out, 12.0)


def test_a_failure_in_work_run_by_the_caller_is_raised_by_synchronize(monkeypatch, device, patient):
    buffer, out = timed_buffer(device)
    download = Transfers.download

    def broken(transfers, command):
        if threading.current_thread() is threading.main_thread():
            raise OSError("the host array went away")
        return download(transfers, command)

    monkeypatch.setattr(Transfers, "download", broken)
    with pytest.raises(errors.CommandFailedError, match="the host array went away"):
        step(buffer, np.ones(SIZE, np.float32), out)
    monkeypatch.undo()
    step(buffer, np.full(SIZE, 2.0, np.float32), out)
    np.testing.assert_array_equal(out, 4.0)
