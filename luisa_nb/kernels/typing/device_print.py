"""Typing of a device ``print(...)``: string constants, f-strings and scalar, vector,
struct or array values, as luisa-python's kernels take them (see ``lang.device_print``
for the formatting)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.aggregates import ArrayType, StructType
from luisa_nb.kernels.type_system import ScalarType, VectorType

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

PRINTABLE = (ScalarType, VectorType, StructType, ArrayType)


def device_print(typer: KernelTyper, node: ast.Call) -> ir.Print:
    """``print(a, "text", f"x={x}")``: a line of the arguments separated by spaces."""
    if node.keywords:
        typer.fail(
            node.keywords[0],
            "a kernel's print() takes values only (no sep=, end= or file=); it writes "
            "them separated by spaces, one line per call",
        )
    pieces: list[tuple[str | None, ...]] = []
    values: list[ir.Expression] = []
    for argument in node.args:
        if isinstance(argument, ast.Starred):
            typer.fail(argument, "a kernel's print() takes its values one by one, not *args")
        parts = argument.values if isinstance(argument, ast.JoinedStr) else [argument]
        piece: list[str | None] = []
        for part in parts:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                piece.append(part.value)
                continue
            if isinstance(part, ast.FormattedValue):
                if part.conversion != -1 or part.format_spec is not None:
                    typer.fail(part, "a kernel's f-string takes plain {value} fields")
                part = part.value
            values.append(printable(typer, part))
            piece.append(None)
        pieces.append(tuple(piece))
    return ir.Print(tuple(values), tuple(pieces) or (("",),))


def printable(typer: KernelTyper, node: ast.expr) -> ir.Expression:
    value = typer.visit(node)
    if not isinstance(value.type, PRINTABLE):
        typer.fail(
            node,
            f"a kernel's print() prints scalars, vectors, structs and arrays, not "
            f"{value.type}; print its columns",
        )
    return value
