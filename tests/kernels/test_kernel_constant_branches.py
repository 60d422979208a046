"""A branch whose condition folds to a constant is dropped before it is typed, as in
luisa-python: it may name anything. Other conditions are typed as usual."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.errors import KernelCompileError
from luisa_nb.kernels import KernelDefinition, ScalarType, argument_type, compiler_available

from .helpers import FakeBuffer, load_function, run

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
MODES = [pytest.param("c", marks=needs_compiler), "python"]
INT_BUFFER = argument_type(FakeBuffer(np.zeros(1, np.int32)))

TEST_BUFFER_KERNEL = """
def kernel_under_test(out):
    index = dispatch_id().x
    out.write(index, index * 2)
    ConstantFlag = ((1 + 1) == 3)
    if ConstantFlag:
        ridiculous.wtf_is_this(nothing)
"""

ELIF_CHAIN = """
def kernel_under_test(out):
    i = dispatch_id().x
    MODE = 2
    LIMIT = MODE * 2
    if MODE == 1:
        unknown_function(i)
    elif MODE == 2 and LIMIT > 3:
        out.write(i, 20)
    elif undefined_flag:
        also_unknown()
    else:
        out.write(i, nonsense)
    if i < 2:
        out.write(i, 1)
    elif -LIMIT < -5:
        out.write(i, undefined_value)
"""

CAPTURED = """
DEBUG = False
SCALE = 3


def kernel_under_test(out):
    i = dispatch_id().x
    if DEBUG:
        log_everything(i)
    elif not DEBUG and SCALE // 2 == 1:
        out.write(i, i * SCALE)
    if SCALE > 3:
        out.write(i, missing_buffer.read(i))
"""

DEAD_WHILE = """
def kernel_under_test(out):
    i = dispatch_id().x
    RUNNING = 1 > 2
    while False:
        spin(forever)
    while RUNNING:
        out.write(i, undefined_value)
    n = 0
    while 2 > 1:
        n += 1
        if n == 3:
            break
    out.write(i, i + 7 + n)
"""


@pytest.mark.parametrize("mode", MODES)
def test_luisa_test_buffer_kernel_compiles_and_runs(tmp_path, mode: str) -> None:
    function = load_function(tmp_path, TEST_BUFFER_KERNEL)
    out = FakeBuffer(np.zeros(32, np.int32))
    run(KernelDefinition(function, mode=mode), 32, out)
    assert out.array.tolist() == [2 * i for i in range(32)]


@pytest.mark.parametrize("mode", MODES)
def test_elif_chains_keep_only_the_live_branch(tmp_path, mode: str) -> None:
    function = load_function(tmp_path, ELIF_CHAIN)
    out = FakeBuffer(np.zeros(4, np.int32))
    run(KernelDefinition(function, mode=mode), 4, out)
    assert out.array.tolist() == [1, 1, 20, 20]


@pytest.mark.parametrize("mode", MODES)
def test_captured_constants_decide_branches(tmp_path, mode: str) -> None:
    function = load_function(tmp_path, CAPTURED)
    out = FakeBuffer(np.zeros(4, np.int32))
    executable = run(KernelDefinition(function, mode=mode), 4, out)
    assert out.array.tolist() == [0, 3, 6, 9]
    assert [p.name for p in executable.buffer_parameters] == ["out"]


@pytest.mark.parametrize("mode", MODES)
def test_constant_while_conditions(tmp_path, mode: str) -> None:
    function = load_function(tmp_path, DEAD_WHILE)
    out = FakeBuffer(np.zeros(3, np.int32))
    executable = run(KernelDefinition(function, mode=mode), 3, out)
    assert out.array.tolist() == [10, 11, 12]
    if mode == "c":
        assert executable.source.count("while (") == 1


@pytest.mark.parametrize(
    "setup",
    [
        "flag = False\n    flag = True",  # reassigned
        "flag = 0\n    flag += 1",  # augmented
        "flag = 0\n    for flag in range(2):\n        pass",  # a loop variable
        "if i > 0:\n        flag = False",  # not at the top level
        "flag = i > 100",  # not a constant
        "flag = np.False_",  # a numpy scalar, not a Python bool
    ],
)
def test_other_conditions_are_typed_as_usual(tmp_path, setup: str) -> None:
    source = (
        "import numpy as np\n\n\n"
        "def kernel_under_test(out):\n"
        "    i = dispatch_id().x\n"
        f"    {setup}\n"
        "    if flag:\n"
        "        undefined_name()\n"
    )
    function = load_function(tmp_path, source)
    with pytest.raises(KernelCompileError, match="name 'undefined_name' is not defined") as caught:
        KernelDefinition(function, mode="python").executable((INT_BUFFER,))
    assert caught.value.lineno == source.splitlines().index("        undefined_name()") + 1


def test_parameters_are_not_constants(tmp_path) -> None:
    source = "def kernel_under_test(out, flag):\n    if flag:\n        undefined_name()\n"
    function = load_function(tmp_path, source)
    with pytest.raises(KernelCompileError, match="name 'undefined_name' is not defined"):
        KernelDefinition(function, mode="python").executable((INT_BUFFER, ScalarType.BOOL))


def test_a_constant_assigned_after_the_condition_is_used_before_assignment(tmp_path) -> None:
    source = (
        "def kernel_under_test(out):\n    if flag:\n        undefined_name()\n    flag = False\n"
    )
    function = load_function(tmp_path, source)
    with pytest.raises(KernelCompileError, match="'flag' is used before it is assigned"):
        KernelDefinition(function, mode="python").executable((INT_BUFFER,))
