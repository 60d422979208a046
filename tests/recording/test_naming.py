"""How the recorder names host arrays: the address helper it reads views with, and the
name a command's array gets from the user's variables (itself, else the array it views)."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.recording import naming
from luisa_nb.recording.naming import array_name, data_address, python_data_address
from luisa_nb.recording.row_appender import UNNAMED_LIMIT


def arrays() -> list[np.ndarray]:
    base = np.arange(64, dtype=np.float32)
    return [
        base,
        base[8:24],
        base.reshape(8, 8)[2],
        base.view(np.uint8)[4:],
        np.empty(0, np.float64),
        np.zeros((3, 4), np.int16).T,
        np.float32(2.5) * np.ones(1, np.float32),
    ]


@pytest.mark.parametrize("array", arrays(), ids=lambda a: f"{a.dtype}{a.shape}")
def test_data_address_is_the_address_numpy_gives(array):
    assert data_address(array) == python_data_address(array) == array.ctypes.data


def test_data_address_refuses_what_is_not_an_array():
    if data_address is python_data_address:
        pytest.skip("the C helper is not built")
    with pytest.raises(TypeError, match="numpy array"):
        data_address(b"bytes")


def test_an_array_is_named_after_its_variable_else_after_the_array_it_views():
    whole = np.arange(32, dtype=np.float32)
    part = whole[8:16]
    alias = part
    fresh = np.ones(4, np.float32)
    namespace = {"whole": whole, "_hidden": fresh}
    assert array_name(whole, [namespace]) == "whole"
    assert array_name(part, [namespace]) == "whole[8:16]"
    assert array_name(part, [{"alias": alias, **namespace}]) == "alias"
    assert array_name(whole[:], [namespace]) == "whole"
    assert array_name(fresh, [namespace]) is None  # private names do not count
    assert array_name(np.frombuffer(b"abcd", np.uint8), [namespace]) is None
    naming.give_name(fresh, "given")
    assert array_name(fresh, [{"other": fresh}]) == "given"


GLOBAL_ARRAY = np.arange(4, dtype=np.float32)
public_global = GLOBAL_ARRAY


def uploads_named_by(recorder_class) -> list[str | None]:
    """The names a recorder of ``recorder_class`` gives the host arrays of uploads made
    from this frame: by variable (local before global, public only), given name, the
    array a view views, none; and a line that makes unnamed arrays is looked at only
    ``UNNAMED_LIMIT`` times."""
    from luisa_nb.recording import trace as trace_module

    trace = trace_module.Trace()
    trace.recorder = recorder = recorder_class(trace)
    _private = np.ones(3)
    local = np.zeros(5)
    alias = local
    given = np.ones(2)
    naming.give_name(given, "the given one")
    whole = np.arange(16, dtype=np.int32)
    kept = [np.full(6, 1.0)]
    arrays = [local, alias, _private, given, GLOBAL_ARRAY, whole[4:8], kept[0], whole]
    for _array in arrays:  # private: the loop's variable names nothing
        recorder.upload_enqueued(_array, _array.view(np.uint8).reshape(-1))
    unnamed = []
    for step in range(UNNAMED_LIMIT + 3):
        unnamed.append(np.full(3, float(step)))
        recorder.upload_enqueued(unnamed[-1], unnamed[-1].view(np.uint8))
    names = []
    for array in arrays + unnamed:
        known = recorder._array_names.get(id(array))
        names.append(known[1] if known is not None and known[0]() is array else "not looked at")
    return names


def test_the_c_hooks_name_a_new_array_as_the_python_ones_do():
    from luisa_nb.recording import row_appender
    from luisa_nb.recording.recorder import PythonTraceRecorder, TraceRecorder

    python_names = uploads_named_by(PythonTraceRecorder)
    assert python_names == (
        ["local", "local", None, "the given one", "GLOBAL_ARRAY", "whole[4:8]", None, "whole"]
        + [None] * UNNAMED_LIMIT
        + ["not looked at"] * 3
    )
    if not row_appender.NATIVE:
        pytest.skip("the C row appender is not built")
    from luisa_nb.recording import _row_appender

    assert _row_appender.UNNAMED_LIMIT == UNNAMED_LIMIT
    assert uploads_named_by(TraceRecorder) == python_names
