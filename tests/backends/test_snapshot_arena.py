"""The host memory uploads are read into at submit() (slices of shared blocks), and the
host copy the CPU transfers use."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.backends.base import CACHE_LINE, SMALL_COPY_BYTES, SnapshotArena, copy_bytes


def test_slices_start_on_cache_lines_and_never_overlap():
    arena = SnapshotArena()
    sizes = [1, 63, 64, 65, 4096, 0, 100_000, 7]
    slices = [arena.take(size) for size in sizes]
    for index, piece in enumerate(slices):
        assert piece.dtype == np.uint8 and piece.nbytes == sizes[index]
        assert piece.ctypes.data % CACHE_LINE == 0 or not piece.nbytes
        piece[:] = index
    for index, piece in enumerate(slices):
        assert (piece == index).all()


def test_a_full_block_is_followed_by_a_new_one_and_large_requests_get_their_own():
    arena = SnapshotArena()
    eighth = arena.BLOCK_BYTES // 8
    first = arena.take(eighth)
    pieces = [first]
    while (piece := arena.take(eighth)).base is first.base:
        pieces.append(piece)
    assert len(pieces) == 8  # a block is cache-line aligned: eight eighths fill it
    assert piece.base is not None and piece.ctypes.data - piece.base.ctypes.data < CACHE_LINE
    large = arena.take(eighth + 1)
    assert large.base is None and large.nbytes == eighth + 1


def test_uploads_read_at_submit_keep_their_own_bytes():
    device = lnb.create_device("cpu", staging="submit")
    buffers = [device.create_buffer(300, np.float32) for _ in range(4)]
    host = np.zeros(300, np.float32)
    commands = []
    for value, buffer in enumerate(buffers):
        host[:] = value + 0.5
        commands.append(buffer.copy_from_async(host))
        device.default_stream.submit([commands[-1]])
    host[:] = -1
    device.synchronize()
    for value, buffer in enumerate(buffers):
        assert (buffer.numpy() == value + 0.5).all()


@pytest.mark.parametrize("nbytes", [0, 1, SMALL_COPY_BYTES, SMALL_COPY_BYTES + 1, 3 << 20])
def test_copy_bytes_copies_into_arrays_and_memoryviews_below_and_above_the_small_limit(nbytes):
    source = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    into_array = np.zeros(nbytes, np.uint8)
    copy_bytes(into_array, source)
    into_view = np.zeros(nbytes + 8, np.uint8)
    copy_bytes(memoryview(into_view)[4 : 4 + nbytes], memoryview(source))
    np.testing.assert_array_equal(into_array, source)
    np.testing.assert_array_equal(into_view[4 : 4 + nbytes], source)
    assert not into_view[:4].any() and not into_view[4 + nbytes :].any()
