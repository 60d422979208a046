"""The worker's wait for its next request: it keeps looking, without sleeping, only
while requests come soon after the replies before them."""

import time

import numpy as np
import pytest

pytest.importorskip("zmq")

import luisa_nb as lnb
from luisa_nb.remote.worker import LINGER_NANOSECONDS, Waiting

from .helpers import cpu_seconds, server_children, worker_processes

READY = [(5, 1)]


class ScriptedPoller:
    """A poller whose looks (``poll(0)``) find nothing ``empty_looks`` times, each look
    moving the clock on by ``look_nanoseconds``, and whose sleep (``poll()``) lasts
    ``sleep_nanoseconds``."""

    def __init__(self, clock, empty_looks, look_nanoseconds, sleep_nanoseconds):
        self.clock, self.empty_looks = clock, empty_looks
        self.look_nanoseconds, self.sleep_nanoseconds = look_nanoseconds, sleep_nanoseconds
        self.looks = self.sleeps = 0

    def poll(self, timeout=None):
        if timeout is None:
            self.sleeps += 1
            self.clock.now += self.sleep_nanoseconds
            return READY
        assert timeout == 0
        self.looks += 1
        self.clock.now += self.look_nanoseconds
        if self.looks > self.empty_looks:
            return READY
        return []


class Clock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def waiting(empty_looks=0, look_nanoseconds=1_000, sleep_nanoseconds=10_000):
    clock = Clock()
    poller = ScriptedPoller(clock, empty_looks, look_nanoseconds, sleep_nanoseconds)
    return Waiting(poller, clock), poller


def test_a_worker_sleeps_until_a_request_comes_soon_after_its_reply():
    wait, poller = waiting(sleep_nanoseconds=LINGER_NANOSECONDS // 4)
    assert not wait.lingers
    assert wait.next_events() == READY
    assert (poller.looks, poller.sleeps) == (0, 1)
    assert wait.lingers


def test_a_lingering_worker_takes_a_request_that_comes_within_the_linger_awake():
    wait, poller = waiting(empty_looks=20, look_nanoseconds=LINGER_NANOSECONDS // 100)
    wait.lingers = True
    assert wait.next_events() == READY
    assert (poller.looks, poller.sleeps) == (21, 0)
    assert wait.lingers


def test_a_request_after_the_linger_puts_the_worker_back_to_sleeping_at_once():
    wait, poller = waiting(empty_looks=10**6, look_nanoseconds=LINGER_NANOSECONDS // 10)
    wait.lingers = True
    assert wait.next_events() == READY
    assert (poller.looks, poller.sleeps) == (10, 1)
    assert not wait.lingers
    poller.looks = 0
    wait.next_events()
    assert poller.looks == 0


@pytest.mark.timeout(60)
def test_an_idle_worker_after_a_loop_of_round_trips_uses_no_cpu():
    @lnb.kernel(mode="c")
    def mark(target):
        target.write(lnb.dispatch_id().x, 3.0)

    servers = set(server_children())
    device = lnb.create_device("remote")
    try:
        [server] = set(server_children()) - servers
        [worker] = worker_processes(server)
        buffer = device.create_buffer(4, np.float32)
        out = np.zeros(4, np.float32)
        for _ in range(300):  # round trips close together: the worker lingers
            mark(buffer, dispatch_size=4)
            buffer.copy_to(out)
        np.testing.assert_array_equal(out, 3.0)
        before = cpu_seconds(worker)
        time.sleep(1.0)
        assert cpu_seconds(worker) - before < 0.2  # looking without end would take 1 s
    finally:
        device.close()
