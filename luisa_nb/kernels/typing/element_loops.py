"""``for x in a:`` over an array, a vector or a matrix, as luisa-python allows: the
iterable is evaluated once into a hidden local and the loop runs over its indices, ``x``
taking each element (a matrix's columns) in turn. After the loop ``x`` holds the last
element, as in luisa-python and in Python."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.aggregates import ArrayType
from luisa_nb.kernels.type_system import MatrixType, ScalarType, VectorType

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper


def element_count(kind: object) -> int | None:
    """How many elements a loop over a value of ``kind`` visits; None if it cannot."""
    if isinstance(kind, VectorType):
        return kind.length
    if isinstance(kind, MatrixType):
        return kind.size
    if isinstance(kind, ArrayType):
        return kind.size
    return None


def element_loop(typer: KernelTyper, node: ast.For) -> list[ir.Statement]:
    """The statements of ``for target in <array, vector or matrix>: body``."""
    iterable = typer.visit(node.iter)
    count = element_count(iterable.type)
    if count is None:
        typer.fail(
            node.iter,
            f"for loops iterate over range(...), an array, a vector or a matrix; got "
            f"{iterable.type}",
        )
    holder = typer.temporary(iterable.type)
    index = typer.temporary(ScalarType.INT32)
    typer.local_names.add(index)  # read by name below
    where = {"lineno": node.iter.lineno, "col_offset": node.iter.col_offset}
    index_name = ast.Name(index, ast.Load(), **where)
    element = typer.element(ir.Local(iterable.type, holder), index_name, node.iter)
    first = typer.assign(node.target.id, element, node.target)
    body = (first, *typer.block(node.body))
    zero, stop, one = (ir.Constant(ScalarType.INT32, value) for value in (0, count, 1))
    loop = ir.ForRange(index, zero, stop, one, body, typer.rules.loop_end_values)
    return [ir.Assign(holder, iterable), loop]
