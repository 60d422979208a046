"""Host arrays are named after the array object, never after an address a freed array
left behind: the name given with lnb.name, else the variable holding the array where the
command was made, else one holding it when the trace stops, else after the memory it lies
in (``host#2``)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.errors import InvalidArgumentError

N = 4096


def host_names(trace) -> list[str | None]:
    return [command.host.name for command in trace.commands if command.host is not None]


def upload_a_temporary(buffer) -> None:
    buffer.copy_from(np.full(N, 5.0, np.float32))


def test_a_freed_temporary_never_takes_a_later_arrays_name(device):
    buffer = device.create_buffer(N, np.float32)
    for _ in range(5):
        with lnb.trace() as trace:
            upload_a_temporary(buffer)
            device.default_stream.synchronize()
            gc.collect()
            z_data = np.zeros(N, np.float32)  # often at the temporary's address
            buffer.copy_to(z_data)
        assert host_names(trace) == ["host#1", "z_data"]


def test_the_name_is_the_one_the_variable_had_when_the_command_was_made(device):
    buffer = device.create_buffer(N, np.float32)
    with lnb.trace() as trace:
        source = np.ones(N, np.float32)
        buffer.copy_from(source)
        kept = source  # noqa: F841 - the first array stays alive, under another name
        source = np.zeros(N, np.float32)
        buffer.copy_from(source)
        device.default_stream.synchronize()
    assert host_names(trace) == ["source", "source"]
    first, second = (command.host for command in trace.commands)
    assert first.address != second.address


def test_views_are_named_by_their_element_range(device):
    buffer = device.create_buffer(N // 2, np.float32)
    z_data = np.arange(N, dtype=np.float32)
    with lnb.trace() as trace:
        buffer.copy_from(z_data[N // 2 :])
        buffer.copy_to(z_data[: N // 2])
        device.default_stream.synchronize()
    assert host_names(trace) == [f"z_data[{N // 2}:{N}]", f"z_data[0:{N // 2}]"]


def test_arrays_in_containers_are_named_by_lnb_name(device):
    buffer = device.create_buffer(N, np.float32)
    frames = {"left": np.ones(N, np.float32), "right": np.zeros(N, np.float32)}
    lnb.name(frames["left"], "frames[left]")
    assert lnb.name(buffer, "canvas") is buffer
    with lnb.trace() as trace:
        buffer.copy_from(frames["left"])
        buffer.copy_from(frames["right"])
        device.default_stream.synchronize()
    assert host_names(trace) == ["frames[left]", "host#2"]
    assert trace.buffers[buffer.id].name == "canvas"
    with pytest.raises(InvalidArgumentError, match="numpy arrays and buffers"):
        lnb.name([1, 2], "values")
    with pytest.raises(InvalidArgumentError, match="non-empty str"):
        lnb.name(frames["right"], "")


def test_an_array_made_after_the_command_is_named_when_the_trace_stops(device):
    buffer = device.create_buffer(N, np.float32)
    holder = [np.ones(N, np.float32)]
    with lnb.trace() as trace:
        buffer.copy_from(holder[0])
        device.default_stream.synchronize()
        late_name = holder[0]  # noqa: F841 - a variable only when the trace stops
    assert host_names(trace) == ["late_name"]


def test_a_loop_of_temporaries_leaves_other_lines_named_at_enqueue(device):
    buffer = device.create_buffer(N, np.float32)
    with lnb.trace() as trace:
        for _ in range(20):  # one line making unnamed arrays: looked at 8 times, then not
            buffer.copy_from(np.zeros(N, np.float32))
        later = np.ones(N, np.float32)
        buffer.copy_from(later)
        kept = later  # noqa: F841 - at the end only this name holds the array
        later = None
        device.default_stream.synchronize()
    *temporaries, last = host_names(trace)
    assert len(temporaries) == 20 and all(name.startswith("host#") for name in temporaries)
    assert last == "later"
