"""Saving a trace while commands are still running: every save is a consistent snapshot
that loads, and a save never changes what the trace records afterwards."""

from __future__ import annotations

import threading

import numpy as np

import luisa_nb as lnb
from luisa_nb.recording import Trace

SUBMISSIONS = 2000


def test_saves_while_recording_are_consistent_snapshots(tmp_path):
    device = lnb.create_device("dx")
    buffer = device.create_buffer(1024, np.float32)
    stop = threading.Event()
    submitted = []

    def keep_submitting() -> None:
        stream = device.create_stream("busy")
        for value in range(SUBMISSIONS):
            if stop.is_set():
                break
            host = np.full(1024, float(value), np.float32)  # new bytes: a new blob each time
            out = np.empty(1024, np.float32)
            stream.submit([buffer.copy_from_async(host), buffer.copy_to_async(out)])
            submitted.append(value)
        stream.synchronize()

    with lnb.trace(capture="full") as trace:
        worker = threading.Thread(target=keep_submitting)
        worker.start()
        try:
            sizes = []
            for attempt in range(5):
                path = trace.save(tmp_path / f"live-{attempt}.lnbtrace")
                loaded = Trace.load(path)
                commands = loaded.commands
                sizes.append(len(commands))
                for command in commands:
                    for capture in (command.enqueue_capture, command.data_capture):
                        if capture is not None and capture.blob is not None:
                            assert capture.blob in loaded.blobs
        finally:
            stop.set()
            worker.join()
        device.synchronize()
    assert sizes == sorted(sizes) and sizes[-1] > 0
    final = Trace.load(trace.save(tmp_path / "final.lnbtrace"))
    assert len(final.commands) == 2 * len(submitted)
    assert [path.name for path in tmp_path.iterdir() if path.suffix == ".tmp"] == []
