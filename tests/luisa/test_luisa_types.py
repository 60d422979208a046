"""luisa-python's types (docs/luisa.md, "Types"): dispatch ids as uint3, conversions in
stores and calls, integer vector division, host vector arithmetic and printing, struct and
array types printed and ``dtype_of``, members of captured values in kernels; in C and in
Python mode, beside real luisa-python where it runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import luisa_nb.luisa as luisa
from luisa_nb.kernels.lang.value_text import float_text
from luisa_nb.kernels.type_system import luisa_types_active
from luisa_nb.luisa.mathtypes import int2
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa

PROGRAM = Path(__file__).parent / "programs" / "luisa_types.py"

# Printed by real luisa-python 0.3.7 on its CPU backend.
EXPECTED = [
    "floats [2.0, 3.0, 3.5, 1.5, 0.43340104818344116, 0.31312859058380127, "
    "-2.6666667461395264, 4.5]",
    "ints [2, -2, 3, -2, 4, 2]",
    "uints [4294967295, 4294967294, 1, 5]",
    "divide int2(1,1) int2(-3,-3) int2(0,1) int2(1,1)",
    "multiply int2(6,6) float2(7.5,7.5) float3(2,2,2) int2(5,5)",
    "float3 float3(0.1,10000000000,0.33333334) float3(123456.79,1e-07,100) float3(-0,-0,-0)",
    "magnitudes float3(1e+16,1e+16,1e+16) "
    "float3(1000000000000000,1000000000000000,1000000000000000) "
    "float2(0.0001,1.5e-05) float2(3e+38,3e+38)",
    "others float4(3,3,3,3) bool2(true,false) int3(-1,0,2147483647)",
    "matrices float2x2([1,2], [3,4]) float3x3([1,0,0], [0,1,0], [0,0,1])",
    "compare bool3(true,true,true) bool2(true,true)",
    "aggregates {a:float3(4,4,4), b:2} [5,32,6]",
    "vector array [float3(1,1,1),float3(2.5,3,4)]",
    "struct types StructType[4](state:int) StructType[16](a:float3, b:int) ArrayType(2,int)",
    "nested StructType[16](a:uint, m:float3x3, f:float, g:bool2, inner:StructType[8](x:long)) "
    "ArrayType(3,int2) ArrayType(2,StructType[4](x:float))",
    "aggregate reprs {a:float3(4,4,4), b:2} [5,32,6] {state:45}",
    "value types <class 'int'> <class 'float'> <class 'bool'> float3 <class 'type'> True",
    "captured members [2.0, 6.0, 0.22050327062606812, 0.8980050086975098] {state:45}",
]


def test_rows_are_luisa_pythons(fresh_session, kernel_mode, capsys) -> None:
    run_on_luisa_nb(PROGRAM)
    assert capsys.readouterr().out.splitlines() == EXPECTED


def test_rows_match_real_luisa_python(fresh_session, capsys) -> None:
    require_real_luisa()
    real = [line for line in run_on_real_luisa(PROGRAM).splitlines() if line[:1] != "["]
    run_on_luisa_nb(PROGRAM)
    assert capsys.readouterr().out.splitlines() == real


def test_host_vectors_divide_as_integers_only_in_a_session(fresh_session) -> None:
    assert repr(int2(3) / int2(2)) == "float2(1.5,1.5)"
    luisa.init("cpu")
    assert luisa_types_active()
    assert repr(int2(3) / int2(2)) == "int2(1,1)"
    luisa.del_device()
    assert not luisa_types_active()


@pytest.mark.parametrize(
    ("value", "text"),
    [(float("-inf"), "-inf"), (1e-05, "1e-05"), (1234.5, "1234.5"), (2.0**60, "1.1529215e+18")],
)
def test_float_components_print_shortest(value, text) -> None:
    assert float_text(np.float32(value)) == text
