"""What luisa_nb accepts and real luisa-python 0.3.7 rejects warns once per place, naming
the program's line: ``Buffer.zeros`` (0.3.7 has no such method) and vector or matrix type
names used in a kernel without an import (0.3.7: "undeclared identifier")."""

from __future__ import annotations

import inspect
import warnings

import pytest

import luisa_nb.luisa as luisa
from luisa_nb.errors import LuisaNbWarning
from luisa_nb.luisa.mathtypes import float2 as imported_float2

LINE_OF_ZEROS = 0


def make_zeros():
    global LINE_OF_ZEROS
    LINE_OF_ZEROS = make_zeros.__code__.co_firstlineno + 3
    return luisa.Buffer.zeros(4, float)


def test_buffer_zeros_warns_once_naming_the_line(fresh_session) -> None:
    luisa.init("cpu")
    with pytest.warns(LuisaNbWarning, match="Buffer.zeros works here but not on real") as caught:
        make_zeros()
    [warning] = caught.list
    assert (warning.filename, warning.lineno) == (__file__, LINE_OF_ZEROS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert make_zeros().numpy().tolist() == [0.0] * 4  # the same line: no second warning


def test_a_type_name_without_an_import_warns(fresh_session) -> None:
    luisa.init("cpu")
    out = luisa.Buffer(1, float)
    body_line = inspect.currentframe().f_lineno + 4

    @luisa.func
    def unimported(out):
        out.write(0, float2(1.0, 2.0).y)  # noqa: F821 - the name the warning is about

    with pytest.warns(LuisaNbWarning, match=r"float2 in a kernel without an import") as caught:
        unimported(out, dispatch_size=1)
    assert (caught.list[0].filename, caught.list[0].lineno) == (__file__, body_line)
    assert out.numpy().tolist() == [2.0]


def test_imported_names_and_kernel_functions_do_not_warn(fresh_session) -> None:
    luisa.init("cpu")
    out = luisa.Buffer(1, float)
    float2 = imported_float2

    @luisa.func
    def imported(out):
        out.write(0, length(float2(3.0, 4.0)))  # noqa: F821 - length needs no import there

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imported(out, dispatch_size=1)
    assert out.numpy().tolist() == [5.0]
