"""``for x in a:`` over captured and local arrays, vectors and matrices, in C and in
Python mode, beside real luisa-python where it runs; host structs and arrays with vector
fields, as ``luisa.struct`` and ``luisa.array`` make them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import luisa_nb.luisa as luisa
from luisa_nb.errors import KernelCompileError
from luisa_nb.luisa.mathtypes import float3, float3x3
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa

PROGRAM = Path(__file__).parent / "programs" / "element_loops.py"
EXPECTED = "[43.0, 7.5, 21.0, 1234.0, 7.0, 5.0, 6.0, 4.0]"  # real luisa-python 0.3.7's


def test_loops_give_luisa_pythons_values(fresh_session, kernel_mode, capsys) -> None:
    run_on_luisa_nb(PROGRAM)
    assert capsys.readouterr().out.strip() == EXPECTED


def test_loops_match_real_luisa_python(fresh_session, capsys) -> None:
    require_real_luisa()
    real = run_on_real_luisa(PROGRAM).splitlines()[-1]
    run_on_luisa_nb(PROGRAM)
    assert capsys.readouterr().out.strip() == real == EXPECTED


def test_a_loop_over_a_scalar_names_what_loops_take(fresh_session) -> None:
    luisa.init("cpu")
    out = luisa.Buffer(1, float)

    @luisa.func
    def over_scalar(out):
        for x in 3.0:
            out.write(0, x)

    with pytest.raises(KernelCompileError, match="an array, a vector or a matrix; got float32"):
        over_scalar(out, dispatch_size=1)


def test_host_structs_and_arrays_hold_vectors_and_matrices(fresh_session) -> None:
    luisa.init("cpu")
    value = luisa.struct(a=float3(4), b=2, m=float3x3(1, 2, 3, 4, 5, 6, 7, 8, 9))
    assert repr(value.a) == "float3(4,4,4)" and value.b == 2
    assert np.asarray(value.m)[0].tolist() == [1, 4, 7]
    vectors = luisa.array([float3(1), float3(2, 3, 4)])
    assert repr(vectors[1]) == "float3(2,3,4)" and len(vectors) == 2
    buffer = luisa.Buffer(2, type(value).__lnb_type__)
    buffer.copy_from([value, value])
    out = luisa.Buffer(2, float)

    @luisa.func
    def fields(out):
        s = buffer.read(dispatch_id().x)  # noqa: F821 - a kernel name, found without an import
        total = 0.0
        for v in vectors:
            total += v.z
        out.write(dispatch_id().x, s.a.y + float(s.b) + s.m[1].x + total)  # noqa: F821

    fields(out, dispatch_size=2)
    assert out.numpy().tolist() == [4 + 2 + 4 + 5] * 2  # a.y, b, column 1 x, the z sum
