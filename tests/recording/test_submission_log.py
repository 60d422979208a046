"""The recorder logs a row per command, with its submission's number: the table built
from the log has a row per command, in order, with its submission and index."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.recording.records import CommandKind, Status
from luisa_nb.recording.trace import digest_bytes


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
    assert [record.submission for record in records] == [1, 2, 2, 2, 3, 4, 4]
    assert [record.label for record in records[1:6]] == ["bump [4]"] * 4 + ["bump [2]"]
    seqs = [record.seq for record in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(record.status is Status.OK for record in records)
    assert records[0].host is not None and records[0].host_read is not None
    assert records[-1].host_write is not None
    np.testing.assert_array_equal(host, [5.0, 5.0, 4.0, 4.0])
    assert trace.host_ranges() == [records[0].host]


def test_a_list_notes_every_buffer_and_labels_each_size():
    """Commands of one list that share views are checked for new buffers once; sizes that
    alternate keep their own labels."""
    device = lnb.create_device("cpu")
    stream = device.default_stream
    first = device.create_buffer(4, np.float32)
    second = device.create_buffer(4, np.float32)
    with lnb.trace() as trace:
        stream.submit(
            [
                bump.dispatch_async(4, first),
                bump.dispatch_async(2, first),
                bump.dispatch_async(4, second),
                bump.dispatch_async(4, first),
            ]
        )
        bump(second, dispatch_size=2)
        bump(second, dispatch_size=4)
        stream.synchronize()
    assert sorted(trace.buffers) == sorted([first.id, second.id])
    assert [record.label for record in trace.commands] == [
        "bump [4]",
        "bump [2]",
        "bump [4]",
        "bump [4]",
        "bump [2]",
        "bump [4]",
    ]
    buffers = [record.device_ranges[0].buffer for record in trace.commands]
    assert buffers == [first.id, first.id, second.id, first.id, second.id, second.id]


def test_bytes_captured_again_give_the_same_capture():
    trace = lnb.trace()
    data = np.arange(64, dtype=np.uint8)
    first = trace.capture(data)
    again = trace.capture(data.copy())
    other = trace.capture(data[::-1].copy())
    assert again is first
    assert first.digest == digest_bytes(data) and first.nbytes == 64
    assert other is not first and other.digest == digest_bytes(data[::-1].copy())
    np.testing.assert_array_equal(trace.captured_bytes(first), data)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy >= 2.5: shape/dtype set in place
def test_uploads_of_one_array_share_fields_until_it_changes():
    """A loop's uploads of one unchanged array share their trace fields; changed bytes, an
    array reshaped in place or another array get their own."""
    device = lnb.create_device("cpu")
    buffer = device.create_buffer(4, np.float32)
    host = np.zeros(4, np.float32)
    other = np.zeros(4, np.float32)
    with lnb.trace() as trace:
        buffer.copy_from(host)
        buffer.copy_from(host)
        host[0] = 1.0
        buffer.copy_from(host)
        host.shape = (2, 2)
        buffer.copy_from(host)
        buffer.copy_from(other)
        buffer.copy_to(host)
        buffer.copy_to(host)
        host.shape = (4,)
        buffer.copy_to(host)
    records = trace.commands
    hosts = [record.host for record in records]
    assert hosts[0] is hosts[1] and hosts[2] is hosts[1]
    assert records[0].enqueue_capture is records[1].enqueue_capture
    assert records[2].enqueue_capture is not records[1].enqueue_capture
    assert hosts[3].shape == (2, 2) and hosts[2].shape == (4,)
    assert hosts[4].address != hosts[3].address
    assert hosts[5] is hosts[6] and hosts[5].shape == (2, 2) and hosts[7].shape == (4,)
    assert [h.address for h in hosts[5:]] == [hosts[0].address] * 3


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy >= 2.5: shape/dtype set in place
def test_a_host_range_is_kept_for_record_arrays_and_renewed_when_its_array_changes():
    """An array's range is looked up once while its shape and dtype stay (a float3 array's
    range has an axis more than the array); a dtype set in place makes a new one."""
    from luisa_nb.runtime.host import host_range

    float3 = np.dtype([("x", np.float32), ("y", np.float32), ("z", np.float32)])
    points = np.zeros(4, float3)
    first = host_range(points)
    assert first.shape == (4, 3) and first.dtype == np.dtype(np.float32).str
    assert host_range(points) is first
    values = np.zeros(4, np.float32)
    as_floats = host_range(values)
    values.dtype = np.int32
    as_ints = host_range(values)
    assert as_ints is not as_floats and as_ints.dtype == np.dtype(np.int32).str
    assert host_range(values) is as_ints
