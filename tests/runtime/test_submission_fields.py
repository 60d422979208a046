"""The runtime's report of a submission (``commands.report_submitted``): the C extension
``_submission_fields`` and its Python twin hand the recorder's ``submitted`` hook the same
values, with each command's trace fields from its memo where the memo holds them (the
same object) and worked out again where it does not."""

from __future__ import annotations

import os
import pickle
from typing import Any

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.kernels import dispatch_id, kernel_id, set_block_size, uint3
from luisa_nb.kernels.lang.scalar_names import uint
from luisa_nb.kernels.lang.vectors import dtype_of, float3
from luisa_nb.recording.naming import dispatch_label
from luisa_nb.recording.records import CommandKind
from luisa_nb.runtime import commands as commands_module
from luisa_nb.runtime.commands import (
    Command,
    DispatchCommand,
    DownloadCommand,
    UploadCommand,
    python_report_submitted,
    python_start_run,
)
from luisa_nb.runtime.host import host_range
from luisa_nb.runtime.real_luisa import LuisaCommand

NATIVE_MISSING = "the C submission report is not in use (not built, or LUISA_NB_PYTHON_RECORDER)"
needs_native = pytest.mark.skipif(not commands_module.NATIVE, reason=NATIVE_MISSING)


@lnb.kernel
def bump(target):
    i = dispatch_id().x
    target.write(i, target.read(i) + 1.0)


@lnb.kernel
def scale(target, factor: float):
    i = dispatch_id().x
    target.write(i, target.read(i) * factor)


@lnb.kernel
def record_entry(indirect):
    indirect.set_dispatch_count(1)
    indirect.set_kernel(0, uint3(4, 1, 1), uint3(4, 1, 1), uint(7))


@lnb.kernel
def add_kernel_id(out):
    set_block_size(4, 1, 1)
    out.atomic_fetch_add(dispatch_id().x, kernel_id())


class Hook:
    """A recorder stand-in that keeps what its ``submitted`` and ``submitted_one`` hooks
    were given, the latter as lists of one and the command in a tuple; its ``run_timer``
    returns the ids it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.hooks: list[str] = []

    def submitted(self, stream_id, ids, enqueued, fields, stream, commands) -> None:
        self.hooks.append("submitted")
        self.calls.append((stream_id, list(ids), list(enqueued), list(fields), stream, commands))

    def submitted_one(self, stream_id, command_id, enqueued, fields, stream, command) -> None:
        self.hooks.append("submitted_one")
        self.calls.append((stream_id, [command_id], [enqueued], [fields], stream, (command,)))

    def run_timer(self, ids) -> tuple[str, tuple[int, ...]]:
        return ("timer", ids)


def reported(report, stream, commands) -> tuple[Any, ...]:
    """What ``report`` hands the hook for ``commands`` submitted to ``stream``."""
    hook = Hook()
    report(hook, stream, commands)
    (call,) = hook.calls
    assert hook.hooks == ["submitted_one" if len(commands) == 1 else "submitted"]
    return call


def worked_out(command) -> tuple[Any, ...]:
    """``command``'s trace fields made afresh, no memo read."""
    if isinstance(command, DispatchCommand):
        arguments = command.arguments
        label = dispatch_label(command.name, arguments.named_scalars(), command.dims)
        return (CommandKind.DISPATCH, label, arguments.device_ranges(), None, None)
    if isinstance(command, UploadCommand | DownloadCommand):
        return Command.trace_fields(command)
    return command.trace_fields()


def check_both_agree(stream, commands, c_first: bool, one_each: bool = True) -> None:
    """Both reports of ``commands``, the C one first or second, hand the same values, and
    the fields are the command's as it is now. With ``one_each`` (no two commands share a
    memo) the second report finds the first one's fields in the memos: the same objects."""
    reports = [commands_module.report_submitted, python_report_submitted]
    first, second = reports if c_first else reports[::-1]
    one, other = reported(first, stream, commands), reported(second, stream, commands)
    assert one[0] == other[0] == stream.id
    assert one[1] == other[1] == [command.id for command in commands]
    assert one[2] == other[2] == [command.enqueued for command in commands]
    assert one[4] is other[4] is stream
    if len(commands) == 1:
        assert one[5][0] is other[5][0] is commands[0]
    else:
        assert one[5] is other[5] is commands
    for command, fields, again in zip(commands, one[3], other[3], strict=True):
        if one_each and isinstance(command, UploadCommand | DownloadCommand | DispatchCommand):
            assert fields is again, command  # a memo's: the same object
        assert fields == again, command
        assert fields == worked_out(command), command
        if one_each and isinstance(command, UploadCommand | DownloadCommand):
            memo = command.target.upload_fields if isinstance(command, UploadCommand) else (
                command.source.download_fields)  # fmt: skip
            assert memo[0]() is command.host and memo[1] == command.host.shape
            assert memo[2] is command.host.dtype and memo[3] is fields


def test_the_c_report_is_built_where_ci_asks_for_it():
    """CI sets LUISA_NB_REQUIRE_NATIVE: a build that silently fell back to Python fails it."""
    if not os.environ.get("LUISA_NB_REQUIRE_NATIVE"):
        pytest.skip("LUISA_NB_REQUIRE_NATIVE is not set")
    assert commands_module.NATIVE, NATIVE_MISSING


@needs_native
@pytest.mark.parametrize("c_first", [True, False], ids=["c-first", "python-first"])
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy >= 2.5: shape/dtype set in place
def test_c_and_python_hand_the_same_values(c_first):
    """Through every change that makes a memo stale (new bytes, so another capture; an
    array reshaped or given another dtype object in place; another array; another size
    or kernel name) and every memo hit, one command at a time and in one list; and the
    ids of a run."""
    point = dtype_of(float3)
    device = lnb.create_device("cpu")
    stream = device.default_stream
    buffer = device.create_buffer(8, np.float32)
    points = device.create_buffer(2, point)
    host, other = np.ones(8, np.float32), np.ones(8, np.float32)
    records = np.zeros(2, point)
    indirect = device.create_indirect_dispatch_buffer(1)
    counts = device.create_buffer(4, np.uint32)
    made = []

    def check(command):
        made.append(command)
        check_both_agree(stream, [command], c_first)

    with lnb.trace():
        for _ in range(2):
            check(buffer.copy_from_async(host))
        host[0] = 2.0
        check(buffer.copy_from_async(host))
        host.shape = (2, 4)
        check(buffer.copy_from_async(host))
        host.shape = (4, 2)
        check(buffer.copy_from_async(host))
        check(buffer.copy_from_async(other))
        check(buffer.copy_to_async(host))
        check(buffer.copy_to_async(host))
        host.shape = (8,)
        check(buffer.copy_to_async(host))
        check(buffer.copy_to_async(other))
        check(points.copy_from_async(records))
        check(points.copy_to_async(records))
        records.dtype = pickle.loads(pickle.dumps(point))  # equal, another object
        check(points.copy_from_async(records))
        check(points.copy_to_async(records))
        for size in (8, 8, 4):
            check(bump.dispatch_async(size, buffer))
        check(scale.dispatch_async(4, buffer, 2.0))
        check(bump.dispatch_async(4, buffer))
        check(DispatchCommand("renamed", (4, 1, 1), made[-1].arguments))
        check(buffer.copy_to_buffer_async(device.create_buffer(8, np.float32)))
        check(buffer.fill_async(1.0))
        record_entry.dispatch(1, indirect)
        check(add_kernel_id.dispatch_indirect_async(indirect, counts))
        luisa_fields = (CommandKind.UPLOAD, "luisa upload", (), host_range(other), None)
        check(LuisaCommand(luisa_fields, (), other))
        check_both_agree(stream, made, c_first, one_each=False)
        check_both_agree(stream, tuple(made), c_first, one_each=False)
        check_both_agree(stream, [], c_first)
        for listed in (made, tuple(made), []):
            timers = [start(Hook(), listed) for start in (commands_module.start_run,
                                                          python_start_run)]  # fmt: skip
            assert timers[0] == timers[1] == ("timer", tuple(command.id for command in listed))
        stream.synchronize()


@needs_native
def test_an_error_of_trace_fields_is_raised_from_both():
    class Failing(LuisaCommand):
        def trace_fields(self):
            raise ValueError("no fields")

    stream = lnb.create_device("cpu").default_stream
    command = Failing((CommandKind.DISPATCH, "failing", (), None, None), ())
    for report in (commands_module.report_submitted, python_report_submitted):
        with pytest.raises(ValueError, match="no fields"):
            report(Hook(), stream, [command])
