"""``set_block_size(x, y, z)``: luisa-python's statement, checked by its rules and then
ignored (the C backend picks its own blocks)."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import KernelCompileError
from luisa_nb.kernels import KernelDefinition, argument_type, compiler_available, set_block_size

from .helpers import FakeBuffer, load_function, run

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
MODES = [pytest.param("c", marks=needs_compiler), "python"]
INT_BUFFER = argument_type(FakeBuffer(np.zeros(1, np.int32)))

ACCEPTED = """
from luisa_nb.kernels import set_block_size as imported_block_size

WIDTH = 16


def kernel_under_test(out):
    set_block_size(256, 1, 1)
    HEIGHT = 2 * 2
    imported_block_size(WIDTH, HEIGHT, 1024 // (WIDTH * HEIGHT))
    i = dispatch_id().x
    out.write(i, i + 1)
"""


def kernel_with(statement: str) -> str:
    return (
        "def kernel_under_test(out):\n"
        "    i = dispatch_id().x\n"
        f"    {statement}\n"
        "    out.write(i, i)\n"
    )


@pytest.mark.parametrize("mode", MODES)
def test_set_block_size_is_accepted_and_emits_nothing(tmp_path, mode: str) -> None:
    function = load_function(tmp_path, ACCEPTED)
    out = FakeBuffer(np.zeros(5, np.int32))
    executable = run(KernelDefinition(function, mode=mode), 5, out)
    assert out.array.tolist() == [1, 2, 3, 4, 5]
    if mode == "c":
        assert "block_size" not in executable.source


def test_set_block_size_does_nothing_on_the_host() -> None:
    assert set_block_size(8, 8, 1) is None


def test_luisa_builtin_exports_set_block_size() -> None:
    from luisa_nb.luisa import builtin

    assert builtin.set_block_size is set_block_size


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("set_block_size(i, 1, 1)", "needs constant positive integers"),
        ("set_block_size(0, 1, 1)", "needs constant positive integers"),
        ("set_block_size(-4, 1, 1)", "needs constant positive integers"),
        ("set_block_size(2.0, 1, 1)", "needs constant positive integers"),
        ("set_block_size(True, 1, 1)", "needs constant positive integers"),
        ("set_block_size(undefined, 1, 1)", "name 'undefined' is not defined"),
        ("set_block_size(32, 32, 2)", r"asks for 2048 threads per block; make x \* y \* z"),
        ("set_block_size(64, 1)", "takes three positional arguments"),
        ("set_block_size(x=64, y=1, z=1)", "takes three positional arguments"),
        ("n = set_block_size(64, 1, 1)", "is a statement; it returns no value"),
    ],
)
def test_set_block_size_errors(tmp_path, statement: str, message: str) -> None:
    function = load_function(tmp_path, kernel_with(statement))
    with pytest.raises(KernelCompileError, match=message) as caught:
        KernelDefinition(function, mode="python").executable((INT_BUFFER,))
    assert caught.value.lineno == 3
