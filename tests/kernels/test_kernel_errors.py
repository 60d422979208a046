"""Rejected constructs, type errors and argument errors, with their positions."""

from __future__ import annotations

import os
import traceback
from pathlib import Path

import numpy as np
import pytest

from luisa_nb.errors import ConfigurationError, KernelArgumentError, KernelCompileError
from luisa_nb.kernels import BufferType, KernelDefinition, ScalarType, argument_type

from . import sample_kernels
from .helpers import check_golden, load_function

HEADER = """\
import luisa_nb as lnb

CAPTURED_LIST = [1, 2]

def kernel_under_test(out, n, u):
    i = lnb.dispatch_id().x
"""
FIRST_LINE = HEADER.count("\n") + 1  # the line of the first snippet statement
TYPES = (BufferType(ScalarType.INT32), ScalarType.INT32, ScalarType.UINT32)

DEFINITION_ERRORS = [
    ("class A:\n    pass", 0, 5, "a class definition is not supported"),
    ("f = lambda: 1", 0, 9, "a lambda is not supported"),
    ("values = [1, 2]", 0, 14, "a list is not supported"),
    ("values = {1: 2}", 0, 14, "a dict is not supported"),
    ("t = (1, 2)", 0, 9, "a tuple outside an unpacking assignment (a, b = x, y) is not"),
    ("s = [v for v in range(3)]", 0, 9, "a list comprehension is not supported"),
    ("s = {v for v in range(3)}", 0, 9, "a set comprehension is not supported"),
    ("g = (v for v in range(3))", 0, 9, "a generator expression is not supported"),
    ("try:\n    pass\nexcept Exception:\n    pass", 0, 5, "a try statement is not supported"),
    ("with open('f') as handle:\n    pass", 0, 5, "a with statement is not supported"),
    ("global CAPTURED_LIST", 0, 5, "a global statement is not supported"),
    ("yield 1", 0, 5, "yield is not supported"),
    ("assert i > 0", 0, 5, "an assert statement is not supported"),
    ("del i", 0, 5, "a del statement is not supported"),
    ("import math", 0, 5, "an import statement is not supported"),
    ("raise ValueError()", 0, 5, "a raise statement is not supported"),
    ("a, b = 1", 0, 12, "unpacking assignment needs a tuple of values"),
    ("a, b = 1, 2, 3", 0, 12, "unpacking 3 values into 2 targets"),
    ("a, (b, c) = 1, (2, 3)", 0, 8, "nested unpacking is not supported"),
    ("if (m := 3) > 2:\n    pass", 0, 9, "an assignment expression (:=) is not supported"),
    ("m: int = 3", 0, 5, "an annotated assignment is not supported"),
    ("for j in [1, 2]:\n    pass", 0, 14, "a list is not supported in kernels"),
    ("for j in range(3):\n    pass\nelse:\n    pass", 0, 5, "for ... else is not supported"),
    ("while i < 3:\n    i += 1\nelse:\n    pass", 0, 5, "while ... else is not supported"),
    ("v = i is n", 0, 14, "an `is` comparison (use ==) is not supported"),
    ("v = i in n", 0, 14, "an `in` test is not supported"),
    ("v = None", 0, 9, "the constant None is not supported"),
    ("def inner():\n    pass", 0, 5, "a nested function definition is not supported"),
    ("v = out.read(*n)", 0, 18, "star unpacking is not supported"),
    ("match i:\n    case 1:\n        pass", 0, 5, "a match statement is not supported"),
    ("for a, b in range(3):\n    pass", 0, 9, "a for loop variable must be a single name"),
]

SPECIALISATION_ERRORS = [
    ("print(i, end='')", 0, 14, "a kernel's print() takes values only (no sep=, end="),
    ("print(lnb.kernels.float2x2())", 0, 11, "a kernel's print() prints scalars, vectors, structs"),
    ("breakpoint()", 0, 5, "breakpoint() only works in Python mode"),
    ("v = len(out)", 0, 13, "len() takes an array, a vector or a matrix, not a buffer"),
    ("v = hash(i)", 0, 9, "call to unknown function 'hash' (builtin_function_or_method)"),
    ("v = undefined_name + 1", 0, 9, "name 'undefined_name' is not defined"),
    ("v = i.real", 0, 9, "int32 values have no attribute 'real'"),
    ("v = out.size", 0, 9, "buffers have only .read(i), .write(i, value) and atomics"),
    ("v = out.append(1)", 0, 9, "atomics (.atomic_fetch_add(i, v), ...), not .append"),
    ("v = 'abc'", 0, 9, "strings are only allowed as arguments of print(...)"),
    ("v = f'{i}'", 0, 9, "f-strings are only allowed in print(...) in Python mode"),
    ("v = 1\nv = 2.5", 1, 5, "cannot assign a float32 value to 'v', which is int32 (first"),
    ("out.write(i, 1.5)", 0, 18, "cannot write a float32 value into 'out', a buffer of int32"),
    ("v = i + u", 0, 9, "mixing signed int32 and unsigned uint32 is ambiguous"),
    ("v = (i > 0) + 1", 0, 9, "bool values take no part in arithmetic"),
    ("v = i and n", 0, 9, "`and` needs bool operands, got int32"),
    ("for j in range(1.5):\n    pass", 0, 20, "range() needs integer arguments, got float32"),
    ("for j in n:\n    pass", 0, 14, "range(...), an array, a vector or a matrix; got int32"),
    ("for j in range(0, 4, 0):\n    pass", 0, 26, "range() step must not be zero"),
    ("v = w\nw = 1", 0, 9, "local variable 'w' is used before it is assigned"),
    ("v = out.read(1.5)", 0, 18, "buffer index must be an integer, got float32"),
    ("v = out.write(i, 1)", 0, 9, "out.write(...) returns nothing; use it as a statement"),
    ("v = range(3)", 0, 9, "range() can only be used as the iterable of a for loop"),
    ("f = 1\nf()", 1, 5, "'f' is a local variable, not a function"),
    ("v = CAPTURED_LIST", 0, 9, "'CAPTURED_LIST' is a list, which kernels cannot use"),
    ("v = lnb.no_such_function()", 0, 9, "module 'luisa_nb' has no attribute 'no_such_function'"),
    ("v = lnb.sqrt(1.0, 2.0)", 0, 9, "lnb.sqrt() takes 1 arguments, got 2"),
    ("v = min(i, j=2)", 0, 16, "min() takes no keyword arguments in kernels"),
    ("v = 1.5 if n > 0 else True", 0, 9, "the branches of `if ... else` have types float32 and"),
    ("v = ~1.5", 0, 9, "~ needs an integer operand, got float32"),
    ("v = 1.5 & i", 0, 9, "bitwise operators need integer operands"),
    ("v = i == True", 0, 9, "cannot compare int32 with bool"),
    ("v = 1 // 0", 0, 9, "division by zero in 1 // 0"),
    ("v = 2 ** 64", 0, 9, "2 ** 64 = 18446744073709551616 does not fit in 64 bits"),
    ("v = 3 ** 1000000000", 0, 9, "3 ** 1000000000 does not fit in 64 bits"),
    ("v = 1 << 10000000000", 0, 9, "1 << 10000000000 does not fit in 64 bits"),
    ("v = 1 << -1", 0, 9, "1 << -1: negative shift count"),
    ("v = (-8) ** 0.5", 0, 9, "is a complex number"),
    ("return 5", 0, 12, "kernels return nothing"),
    ("out = 3", 0, 5, "cannot assign to buffer parameter 'out'"),
    ("i += out[0]", 0, 10, "buffers are read with buf.read(i) and written with buf.write"),
    ("out[i] = 1", 0, 5, "buffers are written with buf.write(i, value)"),
    ("v = i @ i", 0, 9, "cannot multiply int32 and int32: @ multiplies a matrix by a matrix"),
    ("v = 5000000000\nv = 3000000000 * i", 1, 9, "the literal 3000000000 does not fit int32"),
]


def compiler_frames(error: BaseException) -> list[str]:
    """The kernel compiler's files in the traceback, in order."""
    frames = traceback.extract_tb(error.__traceback__)
    names = [Path(frame.filename).name for frame in frames if "luisa_nb" in frame.filename]
    return list(dict.fromkeys(names))


def snippet_source(statements: str) -> str:
    body = "".join(f"    {line}\n" for line in statements.splitlines())
    return HEADER + body


def compile_error(tmp_path: Path, statements: str, at_definition: bool) -> KernelCompileError:
    function = load_function(tmp_path, snippet_source(statements))
    with pytest.raises(KernelCompileError) as caught:
        definition = KernelDefinition(function, mode="c")
        assert not at_definition, "expected an error when the kernel is defined"
        definition.executable(TYPES)
    return caught.value


@pytest.mark.parametrize(
    ("statements", "line", "column", "message"),
    DEFINITION_ERRORS,
    ids=[case[0].splitlines()[0] for case in DEFINITION_ERRORS],
)
def test_rejected_at_definition(tmp_path, statements, line, column, message) -> None:
    error = compile_error(tmp_path, statements, at_definition=True)
    assert message in error.reason
    assert (error.lineno, error.offset) == (FIRST_LINE + line, column)
    assert f"snippet.py:{FIRST_LINE + line}:{column}: " in str(error)
    assert error.__suppress_context__
    assert compiler_frames(error) == ["definition.py"]


@pytest.mark.parametrize(
    ("statements", "line", "column", "message"),
    SPECIALISATION_ERRORS,
    ids=[case[0].splitlines()[-1] for case in SPECIALISATION_ERRORS],
)
def test_rejected_at_specialisation(tmp_path, statements, line, column, message) -> None:
    error = compile_error(tmp_path, statements, at_definition=False)
    assert message in error.reason
    assert (error.lineno, error.offset) == (FIRST_LINE + line, column)
    caret_line = str(error).splitlines()[-1]
    source_line = str(error).splitlines()[-2]
    assert caret_line.index("^") - 4 == column - 1 - (len(source_line) - len(source_line.lstrip()))


def test_signature_errors(tmp_path) -> None:
    cases = {
        "def kernel_under_test(out, *rest):": (1, 29, "*args and **kwargs"),
        "def kernel_under_test(out, n=3):": (1, 30, "parameter defaults are not supported"),
        "def kernel_under_test(out, *, n):": (1, 31, "keyword-only parameters"),
    }
    for index, (signature, (line, column, message)) in enumerate(cases.items()):
        source = f"{signature}\n    pass\n"
        function = load_function(tmp_path, source, stem=f"signature{index}")
        with pytest.raises(KernelCompileError) as caught:
            KernelDefinition(function)
        assert message in caught.value.reason
        assert (caught.value.lineno, caught.value.offset) == (line, column)


def test_python_mode_accepts_print_but_not_other_constructs(tmp_path) -> None:
    function = load_function(tmp_path, snippet_source("print(f'{i}', 'x', sep='')\nv = hash(i)"))
    definition = KernelDefinition(function, mode="python")
    with pytest.raises(KernelCompileError, match="call to unknown function 'hash'"):
        definition.executable(TYPES)


def test_debug_variable_keeps_the_compiler_traceback(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LUISA_NB_KERNEL_DEBUG", "1")
    error = compile_error(tmp_path, "v = 'abc'", at_definition=False)
    assert "typer.py" in compiler_frames(error)


GOLDEN_ERRORS = {
    "unsupported_lambda": "f = lambda: 1",
    "print_keyword_in_c_mode": "if i > 2:\n    print(i, sep=', ')",
    "type_change": "v = 1\nv = v * 0.5",
    "unknown_function": "v = hash(i)",
    "signed_unsigned": "out.write(i, n + u)",
}


@pytest.mark.parametrize("name", sorted(GOLDEN_ERRORS))
def test_error_message_golden(tmp_path, name) -> None:
    function = load_function(tmp_path, snippet_source(GOLDEN_ERRORS[name]), stem="kernel_source")
    with pytest.raises(KernelCompileError) as caught:
        KernelDefinition(function, mode="c").executable(TYPES)
    message = str(caught.value).replace(str(tmp_path) + os.sep, "")
    check_golden(f"errors/{name}.txt", message + "\n")


@pytest.mark.parametrize(
    ("argument_types", "message"),
    [
        ((ScalarType.FLOAT32,), "kernel 'saxpy' takes 4 argument(s) (a, x, y, out) but 1 were"),
        (
            (ScalarType.FLOAT32, "float32", ScalarType.FLOAT32, ScalarType.FLOAT32),
            "kernel 'saxpy', parameter 'x': expected a ScalarType, VectorType, MatrixType, "
            "StructType, ArrayType or BufferType, got str",
        ),
        (
            (BufferType(ScalarType.FLOAT32),) * 4,
            "kernel 'saxpy': parameter 'a' is used as a scalar value at line",
        ),
        (
            (ScalarType.FLOAT32, ScalarType.FLOAT32, *(BufferType(ScalarType.FLOAT32),) * 2),
            "kernel 'saxpy': parameter 'x' is used as a buffer at line",
        ),
    ],
)
def test_wrong_arguments(argument_types, message) -> None:
    definition = KernelDefinition(sample_kernels.saxpy, mode="python")
    with pytest.raises(KernelArgumentError) as caught:
        definition.executable(argument_types)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1, 2], "got list [1, 2]"),
        ("text", "got str 'text'"),
        (2**40, "does not fit int32; pass np.int64"),
        (np.float16(1), "dtype float16 is not a kernel type"),
    ],
)
def test_argument_type_rejects(value, message) -> None:
    with pytest.raises(KernelArgumentError) as caught:
        argument_type(value)
    assert message in str(caught.value)


def test_unknown_mode() -> None:
    with pytest.raises(ConfigurationError, match="kernel mode 'gpu' is unknown"):
        KernelDefinition(sample_kernels.saxpy, mode="gpu")


def test_source_must_be_available() -> None:
    namespace: dict = {}
    exec("def generated(out):\n    pass\n", namespace)
    with pytest.raises(KernelCompileError, match="cannot read the source of kernel 'generated'"):
        KernelDefinition(namespace["generated"])


@pytest.mark.parametrize(
    "function",
    [lambda out: None, (lambda: lambda out: None)()],
    ids=["lambda", "nested lambda"],
)
def test_lambdas_are_not_kernels(function) -> None:
    with pytest.raises(KernelCompileError, match="must be defined with `def`"):
        KernelDefinition(function)
