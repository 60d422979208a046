"""The recorder logs one entry per submission (one flat tuple for a single command): the
table built from it has a row per command, in order, with its submission and index."""

from __future__ import annotations

import numpy as np

import luisa_nb as lnb
from luisa_nb.recording.records import CommandKind, Status


@lnb.kernel
def bump(target):
    i = lnb.dispatch_id().x
    target.write(i, target.read(i) + 1.0)


def test_single_and_listed_submissions_give_rows_in_order():
    device = lnb.create_device("cpu")
    stream = device.default_stream
    buffer = device.create_buffer(4, np.float32)
    host = np.zeros(4, np.float32)
    with lnb.trace() as trace:
        buffer.copy_from(host)  # one command
        stream.submit([bump.dispatch_async(4, buffer) for _ in range(3)])  # three
        bump(buffer, dispatch_size=4)  # one
        stream.submit([bump.dispatch_async(2, buffer), buffer.copy_to_async(host)])  # two
        stream.synchronize()
    records = trace.commands
    assert [record.kind for record in records] == [
        CommandKind.UPLOAD,
        *[CommandKind.DISPATCH] * 4,
        CommandKind.DISPATCH,
        CommandKind.DOWNLOAD,
    ]
    assert [record.index for record in records] == [0, 0, 1, 2, 0, 0, 1]
    submissions = [record.submission for record in records]
    assert submissions == sorted(submissions) and len(set(submissions)) == 4
    assert [record.label for record in records[1:6]] == ["bump [4]"] * 4 + ["bump [2]"]
    seqs = [record.seq for record in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(record.status is Status.OK for record in records)
    assert records[0].host is not None and records[0].host_read is not None
    assert records[-1].host_write is not None
    np.testing.assert_array_equal(host, [5.0, 5.0, 4.0, 4.0])
    assert trace.host_ranges() == [records[0].host]
