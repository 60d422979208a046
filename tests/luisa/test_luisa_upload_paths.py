"""Traced uploads into real luisa-python buffers record the same bytes whether the C upload
(``_luisa_uploads.TracedUpload``) or the Python wrapper makes them: an array written
between its uploads, arrays that are not contiguous or not in C order, other dtypes and
shapes, a read-only array, two streams, a stream given by keyword (programs/upload_bytes.py,
run once each way, each in its own process as luisa-python initializes once)."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

from luisa_nb.recording.row_appender import PYTHON_HOOKS_VARIABLE
from tests.luisa.running import require_real_luisa, run_python

PROGRAM = Path(__file__).parent / "programs" / "upload_bytes.py"


@functools.cache
def recorded(python_hooks: bool) -> dict:
    """What the program prints, with the C upload (where built) or with the Python hooks."""
    require_real_luisa()
    saved = os.environ.get(PYTHON_HOOKS_VARIABLE)
    os.environ[PYTHON_HOOKS_VARIABLE] = "1" if python_hooks else ""
    try:
        output = run_python(str(PROGRAM))
    finally:
        if saved is None:
            del os.environ[PYTHON_HOOKS_VARIABLE]
        else:
            os.environ[PYTHON_HOOKS_VARIABLE] = saved
    return json.loads(output.splitlines()[-1])


def test_the_c_upload_records_what_the_python_upload_records():
    native, python = recorded(False), recorded(True)
    if not native["native"]:
        assert not os.environ.get("LUISA_NB_REQUIRE_NATIVE"), "the C upload was not built"
        pytest.skip("the C upload was not built (no C compiler or Python headers at install)")
    assert not python["native"]
    assert python["python_uploads"] == len(python["uploads"]) == 21
    # out of C: a buffer's first upload, the arrays not C-contiguous, stream= and sync=True
    assert 1 <= native["python_uploads"] <= 8
    for in_c, in_python in zip(native["uploads"], python["uploads"], strict=True):
        assert in_c == in_python
    assert native["held"] == python["held"]
    assert native["hazards"] == python["hazards"]


@pytest.mark.parametrize("python_hooks", [False, True], ids=["c", "python"])
def test_each_upload_records_the_bytes_of_its_array_when_made_and_when_sent(python_hooks):
    """Enqueue captures hold each array's bytes at its copy_from; the bytes sent are what
    the device got at the list's submission (its shadow readback)."""
    result = recorded(python_hooks)
    uploads = result["uploads"]
    h, g = [0.0, 9.0, 11.0, 3.0, 3.0], [2.0] * 4
    enqueued = [upload["enqueued"] for upload in uploads]
    assert enqueued[:8] == [[0.0] * 4, [1.0] * 4, [1.0] * 4, [3.0] * 4, [9.0, 3.0, 3.0, 3.0], g,
                            g, [9.0, 3.0, 3.0, 3.0]]  # fmt: skip
    assert [upload["host"][0] for upload in uploads[:8]] == ["h"] * 5 + ["g", "g", "h"]
    # h's uploads into a, made in one list, all sent h as the submission found it
    assert [upload["sent"] for upload in uploads[:5]] == [h[1:]] * 5
    assert enqueued[10:12] == [[0.0, 1.0, 62.0, 63.0], [0.0, 1.0, 62.0, 100.0]]  # square
    assert uploads[10]["host"] == ["square", "<f4", [8, 8]]
    assert enqueued[13:15] == [[0, 1, 62, 63], [0, 1, 62, -7]]  # int32 counts
    assert [upload["sent"] for upload in uploads[13:15]] == [[0, 1, 62, -7]] * 2
    assert [upload["same_bytes"] for upload in uploads[15:17]] == [True, True]  # read-only
    assert [upload["stream"] for upload in uploads[17:]] == [1, 1, 1, 0]
    assert enqueued[17:19] == [[9.0, 3.0, 3.0, 3.0], [9.0, 11.0, 3.0, 3.0]]
    assert result["held"] == {"a": h[1:], "b": [5.0] * 4, "ints": [62, -7]}


@pytest.mark.parametrize("python_hooks", [False, True], ids=["c", "python"])
def test_arrays_not_in_c_order_are_captured_in_c_order_and_sent_as_luisa_reads_them(
    python_hooks,
):
    """luisa-python 0.3.7 uploads the bytes at an array's data pointer: a strided view's
    first elements of its base, a Fortran-ordered array column by column. The enqueue
    capture holds the array's values in C order (docs/luisa.md); the bytes sent show what
    luisa read."""
    uploads = recorded(python_hooks)["uploads"]
    assert [upload["enqueued"] for upload in uploads[8:10]] == [
        [0.0, 2.0, 124.0, 126.0],
        [-1.0, 2.0, 124.0, 126.0],
    ]
    assert uploads[9]["sent"] == [-1.0, 1.0, 62.0, 63.0]
    assert uploads[12]["enqueued"] == [0.0, 1.0, 62.0, 100.0]
    assert uploads[12]["sent"] == [0.0, 8.0, 55.0, 100.0]


def test_the_c_upload_is_built_where_ci_asks_for_it():
    """CI sets LUISA_NB_REQUIRE_NATIVE: a build that silently fell back to Python fails it."""
    if not os.environ.get("LUISA_NB_REQUIRE_NATIVE"):
        pytest.skip("LUISA_NB_REQUIRE_NATIVE is not set")
    from luisa_nb.runtime import real_luisa

    assert real_luisa.NATIVE, "the C upload (_luisa_uploads) is not in use"
