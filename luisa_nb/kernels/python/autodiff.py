"""Python mode's form of a differentiated autodiff block: the plain IR the autodiff stage
made (the same the C and CUDA emitters compile) written back as Python statements, which
replace the ``with autodiff():`` statement in the copy of the function Python mode runs.
The statements call the helpers below through one global, ``__lnb_autodiff__``, so each
IR operation keeps its typed meaning (float32 stays float32, C's integer division)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from luisa_nb.errors import UnsupportedFeatureError
from luisa_nb.kernels import ir
from luisa_nb.kernels.lang import builtins as kernel_builtins
from luisa_nb.kernels.lang import math_builtins, matrices
from luisa_nb.kernels.lang.matrices import composite_class
from luisa_nb.kernels.lang.scalar_names import convert_scalar
from luisa_nb.kernels.lang.vectors import vector_class
from luisa_nb.kernels.type_system import KernelType, MatrixType, ScalarType, VectorType
from luisa_nb.kernels.typing.matrices import MATRIX_FUNCTIONS

HELPERS_NAME = "__lnb_autodiff__"
OPERATORS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "bitand": "&", "bitor": "|",
    "bitxor": "^", "lshift": "<<", "rshift": ">>", "eq": "==", "ne": "!=", "lt": "<",
    "le": "<=", "gt": ">", "ge": ">=",
}  # fmt: skip
DISPATCH_FUNCTIONS = {
    "id": "dispatch_id",
    "size": "dispatch_size",
    "thread": "thread_id",
    "block": "block_id",
}
Position = tuple[int, int]


class AutodiffHelpers:
    """What the written-back statements call: typed constants, constructors, casts and the
    IR operators whose Python spelling differs."""

    def __init__(self, kinds: Mapping[str, KernelType]) -> None:
        self.kinds = dict(kinds)

    def number(self, value: Any, kind: str) -> Any:
        return convert_scalar(value, ScalarType(kind))

    def make(self, kind: str, *parts: Any) -> Any:
        return composite_class(self.kinds[kind])(*parts)

    def cast(self, kind: str, value: Any) -> Any:
        target = self.kinds[kind]
        if isinstance(target, VectorType):
            return vector_class(target)(value)
        return convert_scalar(value, target)

    def call(self, function: str, *arguments: Any) -> Any:
        module = matrices if function in MATRIX_FUNCTIONS else math_builtins
        return getattr(module, function)(*arguments)

    def dispatch(self, which: str) -> Any:
        return getattr(kernel_builtins, DISPATCH_FUNCTIONS[which])()

    def select(self, if_false: Any, if_true: Any, condition: Any) -> Any:
        return math_builtins.select(if_false, if_true, condition)

    def logical(self, operator: str, left: Any, right: Any) -> Any:
        if operator == "and":
            return np.logical_and(left, right)
        return np.logical_or(left, right)

    def negation(self, value: Any) -> Any:
        return np.logical_not(value) if not isinstance(value, (bool, np.bool_)) else not value

    def divide(self, operator: str, left: Any, right: Any) -> Any:
        """``div``/``rem`` (C's truncating), ``floordiv``/``mod`` (floored), ``pow``."""
        if operator == "pow":
            return math_builtins.pow(left, right)
        if isinstance(left, np.floating):
            quotient = np.floor(left / right)
            return quotient if operator == "floordiv" else left - right * quotient
        if operator in ("floordiv", "mod"):
            return left // right if operator == "floordiv" else left % right
        dividend, divisor = int(left), int(right)
        magnitude = abs(dividend) // abs(divisor)
        quotient = magnitude if (dividend < 0) == (divisor < 0) else -magnitude
        result = quotient if operator == "div" else dividend - divisor * quotient
        return type(left)(result)


class PythonBlockWriter:
    """Writes the statements of differentiated blocks as Python source."""

    def __init__(self, kernel: ir.KernelIR) -> None:
        self.buffers = kernel.buffers
        self.kinds: dict[str, KernelType] = {}

    def statements(self, body: tuple[ir.Statement, ...], depth: int) -> list[str]:
        lines: list[str] = []
        for statement in body:
            lines += self.statement(statement, depth)
        return lines or ["    " * depth + "pass"]

    def statement(self, statement: ir.Statement, depth: int) -> list[str]:
        indent = "    " * depth
        if isinstance(statement, ir.Assign):
            return [f"{indent}{statement.name} = {self.expression(statement.value)}"]
        if isinstance(statement, ir.If):
            lines = [f"{indent}if {self.expression(statement.condition)}:"]
            lines += self.statements(statement.body, depth + 1)
            if statement.orelse:
                lines += [f"{indent}else:", *self.statements(statement.orelse, depth + 1)]
            return lines
        if isinstance(statement, (ir.BufferWrite, ir.ImageWrite)):
            name = self.buffers[statement.buffer].name
            where = statement.index if isinstance(statement, ir.BufferWrite) else statement.coord
            index, value = self.expression(where), self.expression(statement.value)
            return [f"{indent}{name}.write({index}, {value})"]
        if isinstance(statement, ir.Evaluate):
            return [f"{indent}{self.expression(statement.value)}"]
        raise _unsupported(type(statement).__name__)

    def kind(self, kind: KernelType) -> str:
        self.kinds[str(kind)] = kind
        return repr(str(kind))

    def expression(self, node: ir.Expression) -> str:
        helper = HELPERS_NAME
        if isinstance(node, ir.Constant):
            if node.type is ScalarType.BOOL:
                return repr(bool(node.value))
            return f"{helper}.number({node.value!r}, {self.kind(node.type)})"
        if isinstance(node, ir.Local):
            return node.name
        if isinstance(node, ir.Field):
            return f"{self.expression(node.operand)}.{node.name}"
        if isinstance(node, ir.Member):
            return f"{self.expression(node.operand)}.{node.field}"
        if isinstance(node, ir.Element):
            return f"{self.expression(node.operand)}[{self.expression(node.index)}]"
        if isinstance(node, ir.Construct) and isinstance(node.type, (VectorType, MatrixType)):
            parts = "".join(f", {self.expression(a)}" for a in node.arguments)
            return f"{helper}.make({self.kind(node.type)}{parts})"
        if isinstance(node, ir.Cast):
            return f"{helper}.cast({self.kind(node.type)}, {self.expression(node.operand)})"
        if isinstance(node, ir.Unary):
            operand = self.expression(node.operand)
            if node.operator == "not":
                return f"{helper}.negation({operand})"
            return f"({'-' if node.operator == 'neg' else '~'}{operand})"
        if isinstance(node, ir.Binary):
            return self.binary(node)
        if isinstance(node, ir.Select):
            condition = self.expression(node.condition)
            if_true, if_false = self.expression(node.if_true), self.expression(node.if_false)
            if isinstance(node.condition.type, VectorType):
                return f"{helper}.select({if_false}, {if_true}, {condition})"
            return f"({if_true} if {condition} else {if_false})"
        if isinstance(node, ir.Call):
            arguments = "".join(f", {self.expression(a)}" for a in node.arguments)
            return f"{helper}.call({node.function!r}{arguments})"
        if isinstance(node, (ir.BufferRead, ir.ImageRead)):
            name = self.buffers[node.buffer].name
            where = node.index if isinstance(node, ir.BufferRead) else node.coord
            return f"{name}.read({self.expression(where)})"
        if isinstance(node, ir.DispatchValue):
            return f"{helper}.dispatch({node.which!r})"
        raise _unsupported(type(node).__name__)

    def binary(self, node: ir.Binary) -> str:
        left, right = self.expression(node.left), self.expression(node.right)
        symbol = OPERATORS.get(node.operator)
        if symbol is not None:
            return f"({left} {symbol} {right})"
        if node.operator in ("and", "or"):
            return f"{HELPERS_NAME}.logical({node.operator!r}, {left}, {right})"
        return f"{HELPERS_NAME}.divide({node.operator!r}, {left}, {right})"


def _unsupported(construct: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"Python mode cannot run {construct} inside an autodiff block; run the kernel in C "
        f"mode (mode='c') for it"
    )


def written_blocks(
    kernel: ir.KernelIR, blocks: Mapping[Position, tuple[ir.Statement, ...]]
) -> tuple[dict[Position, list[ast.stmt]], AutodiffHelpers]:
    """Each block's Python statements, by the ``with`` statement's position, and the
    helpers they call."""
    writer = PythonBlockWriter(kernel)
    written = {}
    for (line, column), statements in blocks.items():
        text = "\n".join(writer.statements(statements, 0))
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if hasattr(node, "lineno"):
                node.lineno = node.end_lineno = line
                node.col_offset, node.end_col_offset = column, column
        written[(line, column)] = tree.body
    return written, AutodiffHelpers(writer.kinds)


class BlockReplacer(ast.NodeTransformer):
    """Puts the written statements in place of each ``with autodiff():``."""

    def __init__(self, written: Mapping[Position, list[ast.stmt]]) -> None:
        self.written = written

    def visit_With(self, node: ast.With) -> Any:
        replacement = self.written.get((node.lineno, node.col_offset))
        return node if replacement is None else replacement


def replacing(
    written: Mapping[Position, list[ast.stmt]],
) -> Callable[[ast.FunctionDef], ast.FunctionDef]:
    """A rewrite of a function tree that swaps its blocks for ``written``."""

    def rewrite(tree: ast.FunctionDef) -> ast.FunctionDef:
        return BlockReplacer(written).visit(tree)

    return rewrite


def autodiff_rewrite(
    kernel: ir.KernelIR, definition: Any = None
) -> tuple[Callable[[ast.FunctionDef], ast.FunctionDef] | None, dict[str, Any]]:
    """The rewrite and globals that give the kernel (or, with ``definition``, that
    callable) its differentiated blocks in Python mode; ``(None, {})`` without blocks.

    Python mode runs one function per callable, so a callable whose blocks differ between
    its specialisations (say, called with a float and with a float3) cannot run here."""
    if definition is None:
        choices = [kernel.autodiff_blocks] if kernel.autodiff_blocks else []
    else:
        choices = [
            function.autodiff_blocks
            for function in kernel.functions
            if function.definition is definition and function.autodiff_blocks
        ]
    if not choices:
        return None, {}
    versions = [written_blocks(kernel, blocks) for blocks in choices]
    texts = {
        tuple(ast.dump(ast.Module(body=body, type_ignores=[])) for body in written.values())
        for written, _ in versions
    }
    if len(texts) > 1:
        raise UnsupportedFeatureError(
            f"callable {getattr(definition, 'name', definition)!r} differentiates with "
            f"different argument types in one kernel, which Python mode cannot run (it has "
            f"one function per callable); use C mode, or one argument type per kernel"
        )
    written, helpers = versions[0]
    return replacing(written), {HELPERS_NAME: helpers}
