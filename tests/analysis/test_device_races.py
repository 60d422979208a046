"""DEVICE_RACE: commands on different streams touching the same device bytes, unordered."""

import pytest

from luisa_nb.analysis import HazardKind, find_hazards
from luisa_nb.recording import Access, CommandKind, DeviceRange, SyncKind


@pytest.fixture
def two_streams(builder):
    x = builder.buffer("x")
    builder.stream("compute")
    builder.stream("copy")
    return builder, x


def write(builder, buffer, stream, offset=0, nbytes=4096):
    device = DeviceRange(buffer, offset, nbytes, Access.WRITE)
    return builder.command(CommandKind.FILL, [device], stream=stream)


def read(builder, buffer, stream):
    return builder.command(
        CommandKind.DISPATCH, [builder.whole(buffer, Access.READ)], stream=stream
    )


def test_two_streams_writing_one_buffer_race(two_streams):
    builder, x = two_streams
    first = write(builder, x, 0)
    second = builder.command(
        CommandKind.DISPATCH, [builder.whole(x, Access.READ_WRITE)], stream=1, label="scale"
    )
    [hazard] = find_hazards(builder.finish())
    assert hazard.kind is HazardKind.DEVICE_RACE
    assert hazard.command_ids == (first.id, second.id)
    assert hazard.device == DeviceRange(x, 0, 4096, Access.READ_WRITE)
    assert hazard.host is None
    assert hazard.message == (
        "#1 fill x on compute and #2 dispatch scale(x) on copy touch x[0:1024] (both write) "
        "with no event ordering them; a replay of this trace shows the order they ran in, "
        "one of those possible"
    )
    assert hazard.fix == (
        "signal an event on compute after #1 and wait for it on copy before #2 (or synchronize "
        "compute before submitting #2)"
    )
    assert sorted(hazard.times) == [
        "first_finished",
        "first_started",
        "second_finished",
        "second_started",
    ]


def test_signal_and_wait_order_the_streams(two_streams):
    builder, x = two_streams
    write(builder, x, 0)
    builder.sync(SyncKind.SIGNAL, 0, event=1)
    builder.sync(SyncKind.WAIT, 1, event=1)
    write(builder, x, 1)
    assert find_hazards(builder.finish()) == []


def test_a_wait_issued_before_the_signal_does_not_order(two_streams):
    builder, x = two_streams
    builder.sync(SyncKind.WAIT, 1, event=1)
    first = write(builder, x, 0)
    builder.sync(SyncKind.SIGNAL, 0, event=1)
    second = write(builder, x, 1)
    assert [h.command_ids for h in find_hazards(builder.finish())] == [(first.id, second.id)]


def test_the_latest_signal_before_the_wait_counts(two_streams):
    builder, x = two_streams
    builder.sync(SyncKind.SIGNAL, 0, event=1)
    first = write(builder, x, 0)
    builder.sync(SyncKind.WAIT, 1, event=1)
    builder.sync(SyncKind.SIGNAL, 0, event=1)
    second = write(builder, x, 1)
    assert [h.command_ids for h in find_hazards(builder.finish())] == [(first.id, second.id)]


def test_host_synchronize_orders_later_submissions(two_streams):
    builder, x = two_streams
    first = write(builder, x, 0)
    builder.sync(SyncKind.SYNCHRONIZE, 0, covers=first.seq)
    write(builder, x, 1)
    assert find_hazards(builder.finish()) == []


def test_ordering_is_transitive_across_three_streams(two_streams):
    builder, x = two_streams
    builder.stream("third")
    write(builder, x, 0)
    builder.sync(SyncKind.SIGNAL, 0, event=1)
    builder.sync(SyncKind.WAIT, 1, event=1)
    builder.sync(SyncKind.SIGNAL, 1, event=2)
    builder.sync(SyncKind.WAIT, 2, event=2)
    write(builder, x, 2)
    assert find_hazards(builder.finish()) == []


def test_reads_do_not_race(two_streams):
    builder, x = two_streams
    read(builder, x, 0)
    read(builder, x, 1)
    assert find_hazards(builder.finish()) == []


def test_writes_to_disjoint_bytes_do_not_race(two_streams):
    builder, x = two_streams
    write(builder, x, 0, offset=0, nbytes=2048)
    write(builder, x, 1, offset=2048, nbytes=2048)
    assert find_hazards(builder.finish()) == []


def test_read_against_write_races_once_per_pair(two_streams):
    builder, x = two_streams
    first = write(builder, x, 0)
    second = read(builder, x, 1)
    third = read(builder, x, 1)
    hazards = find_hazards(builder.finish())
    assert [h.command_ids for h in hazards] == [(first.id, second.id), (first.id, third.id)]
    assert "(#1 writes)" in hazards[0].message


def test_same_stream_never_races(two_streams):
    builder, x = two_streams
    write(builder, x, 0)
    write(builder, x, 0)
    assert find_hazards(builder.finish()) == []
