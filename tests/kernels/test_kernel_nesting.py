"""Long expressions: a thousand terms compile in both modes; deeper ones get advice."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from luisa_nb.errors import KernelCompileError
from luisa_nb.kernels import KernelDefinition, compiler_available
from luisa_nb.kernels.frontend.nesting import MAX_EXPRESSION_DEPTH

from .helpers import FakeBuffer, load_function, run

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
MODES = [pytest.param("c", marks=needs_compiler), "python"]


def long_sum_source(terms: int, parenthesised: bool = False) -> str:
    expression = " + ".join(["a"] * terms)
    if parenthesised:
        expression = "a"
        for _ in range(terms - 1):
            expression = f"({expression} + a)"
    return (
        "def kernel_under_test(out):\n"
        "    a = out.read(0)\n"
        f"    total = {expression}\n"
        "    out.write(1, total)\n"
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("terms", [200, 1000, 2500])
def test_long_sums_compile_and_run(tmp_path, mode: str, terms: int) -> None:
    function = load_function(tmp_path, long_sum_source(terms))
    out = FakeBuffer(np.array([1, 0], np.int64))
    run(KernelDefinition(function, mode=mode), 1, out)
    assert out.array[1] == terms
    assert sys.getrecursionlimit() < 5000  # raised only while compiling


@pytest.mark.parametrize("mode", MODES)
def test_deeply_parenthesised_expression(tmp_path, mode: str) -> None:
    function = load_function(tmp_path, long_sum_source(180, parenthesised=True))
    out = FakeBuffer(np.array([2, 0], np.int64))
    run(KernelDefinition(function, mode=mode), 1, out)
    assert out.array[1] == 360


def test_deeper_than_supported_says_to_split(tmp_path) -> None:
    terms = MAX_EXPRESSION_DEPTH + 100
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20 * terms)  # only so that Python itself can define the function
    try:
        function = load_function(tmp_path, long_sum_source(terms))
        with pytest.raises(KernelCompileError) as raised:
            KernelDefinition(function)
    finally:
        sys.setrecursionlimit(limit)
    error = raised.value
    assert (error.lineno, error.offset) == (3, 13)
    assert f"snippet.py:3:13: this expression nests {terms} levels deep" in str(error)
    assert "Split it into several statements" in str(error)
