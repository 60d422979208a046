"""Operations on two literals fold with Python arithmetic, so C and Python mode agree."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.kernels import BufferType, KernelDefinition, ScalarType, compiler_available

from .helpers import FakeBuffer, load_function, run

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
MODES = [pytest.param("c", marks=needs_compiler), "python"]

FOLDED_INTEGERS = {
    "2**31": 2**31,
    "-2**31": -(2**31),
    "2**62 - 1 + 2**62": 2**63 - 1,
    "1 << 40": 1 << 40,
    "(1 << 62) >> 30": 1 << 32,
    "0xFFFFFFFF & 0xFF00": 0xFF00,
    "~5": -6,
    "-7 // 2": -4,
    "-7 % 3": 2,
    "3 * 1000000000": 3_000_000_000,
    "int(2 < 3) + 10": 11,
}
FOLDED_FLOATS = {"7 / 2": 3.5, "2 ** -1": 0.5, "2.0 ** 0.5": 2.0**0.5, "1e30 * 1e30": 1e30 * 1e30}


def kernel_writing(values: list[str]) -> str:
    lines = ["def kernel_under_test(out):"]
    lines += [f"    out.write({index}, {value})" for index, value in enumerate(values)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("mode", MODES)
def test_folded_integers_match_python(tmp_path, mode: str) -> None:
    function = load_function(tmp_path, kernel_writing(list(FOLDED_INTEGERS)))
    out = FakeBuffer(np.zeros(len(FOLDED_INTEGERS), np.int64))
    run(KernelDefinition(function, mode=mode), 1, out)
    assert out.array.tolist() == list(FOLDED_INTEGERS.values())


@pytest.mark.parametrize("mode", MODES)
def test_folded_floats_match_python(tmp_path, mode: str) -> None:
    function = load_function(tmp_path, kernel_writing(list(FOLDED_FLOATS)))
    out = FakeBuffer(np.zeros(len(FOLDED_FLOATS), np.float64))
    run(KernelDefinition(function, mode=mode), 1, out)
    assert out.array.tolist() == list(FOLDED_FLOATS.values())


@needs_compiler
def test_folded_literal_beyond_int32_is_an_int64_literal(tmp_path) -> None:
    function = load_function(tmp_path, "def kernel_under_test(out):\n    out.write(0, 2**31)\n")
    executable = KernelDefinition(function, mode="c").executable((BufferType(ScalarType.INT64),))
    assert "2147483648LL" in executable.source
    assert "lnb_pow" not in executable.source
