"""Typing of a device ``print(...)``: string constants and scalar or vector values, as
luisa-python's kernels take them (see ``lang.device_print`` for the formatting)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.type_system import ScalarType, VectorType

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper


def device_print(typer: KernelTyper, node: ast.Call) -> ir.Print:
    """``print(a, "text", v)``: a line of the arguments separated by spaces."""
    if node.keywords:
        typer.fail(
            node.keywords[0],
            "a kernel's print() takes values only (no sep=, end= or file=); it writes "
            "them separated by spaces, one line per call",
        )
    pieces: list[str | None] = []
    values: list[ir.Expression] = []
    for argument in node.args:
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            pieces.append(argument.value)
            continue
        if isinstance(argument, (ast.JoinedStr, ast.Starred)):
            typer.fail(
                argument,
                "a kernel's print() takes string constants and values separated by "
                'commas, e.g. print("x =", x)',
            )
        value = typer.visit(argument)
        if not isinstance(value.type, (ScalarType, VectorType)):
            typer.fail(
                argument,
                f"a kernel's print() prints scalars and vectors, not {value.type}; print "
                "its fields or components",
            )
        pieces.append(None)
        values.append(value)
    if not pieces:
        pieces.append("")
    return ir.Print(tuple(values), tuple(pieces))
