import threading

import numpy as np

from luisa_nb.runtime.staging import StagingHeap


def test_blocks_are_first_fit_and_reused():
    heap = StagingHeap(100)
    a = heap.try_reserve(40)
    b = heap.try_reserve(40)
    assert (a.start, b.start) == (0, 40)
    assert heap.try_reserve(30) is None and heap.free == 20
    heap.release([a])
    c = heap.try_reserve(30)
    assert c.start == 0 and c.memory.nbytes == 30
    c.memory[:] = 7
    assert np.shares_memory(c.memory, heap.try_reserve(10).memory) is False
    assert heap.free == 100 - 40 - 30 - 10


def test_reserve_waits_for_a_release():
    heap = StagingHeap(64)
    held = heap.try_reserve(64)
    got = []
    waiter = threading.Thread(target=lambda: got.append(heap.reserve(32)))
    waiter.start()
    waiter.join(0.05)
    assert got == [] and waiter.is_alive()
    heap.release([held])
    waiter.join(5)
    assert got[0].start == 0 and heap.free == 32
