"""Which buffers a kernel's blocks may write with non-temporal (streaming) stores.

A large dispatch that writes each element of its output once, and never reads it, gains
nothing from the output's cache lines: an ordinary store first reads each line from memory
("read for ownership"), then evicts it again. Non-temporal stores skip that read, so a
bandwidth-bound kernel such as vecadd moves a quarter fewer bytes.

A block of a simd-loop kernel can stream a buffer when it knows, at compile time, that it
writes every element of the buffer in its range: this module finds the buffers written
only as ``buffer.write(x, value)``, with ``x`` the thread's ``dispatch_id().x``, by
statements every thread runs, and never read. The block writes those elements into a tile
on its stack and streams the tile out (see :mod:`luisa_nb.kernels.c.launch`).
"""

from __future__ import annotations

from luisa_nb.kernels import ir
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.type_system import INTEGER_TYPES

LARGEST_STREAMED_ELEMENT = 16
"""Bytes: a block's tile of larger elements would take too much of a thread's stack."""


def streamed_buffers(kernel: ir.KernelIR, checks: KernelChecks) -> tuple[int, ...]:
    """The buffer slots of ``kernel`` written only by top-level
    ``buffer.write(dispatch_id().x, value)`` statements and never read, whose elements
    take at most :data:`LARGEST_STREAMED_ELEMENT` bytes.

    None where a block's threads do not run as one simd loop, and none with checks:
    checked vecadd ran slower with streaming stores on one thread and beside a busy
    process (see "Streaming stores" in docs/kernels.md).
    """
    if kernel.has_control_flow or checks.bounds:
        return ()
    at_thread_x = writes_at_thread_x(kernel.body)
    written = {statement.buffer for statement in at_thread_x}
    streamable = {id(statement) for statement in at_thread_x}
    excluded: set[int] = set()
    for statement in kernel.all_statements():
        if isinstance(statement, ir.ImageWrite) or (
            isinstance(statement, ir.BufferWrite) and id(statement) not in streamable
        ):
            excluded.add(statement.buffer)
        for expression in ir.statement_expressions(statement):
            for node in ir.walk_expression(expression):
                if isinstance(node, (ir.BufferRead, ir.ImageRead, ir.AtomicCall)):
                    excluded.add(node.buffer)
    return tuple(
        sorted(
            index
            for index in written - excluded
            if kernel.buffers[index].heap is None
            and kernel.buffers[index].element.dtype.itemsize <= LARGEST_STREAMED_ELEMENT
        )
    )


def writes_at_thread_x(body: tuple[ir.Statement, ...]) -> list[ir.BufferWrite]:
    """The top-level buffer writes of ``body`` indexed by the thread's x position: the
    position itself, or a local assigned it once, at the top level, before the write."""
    assignments: dict[str, int] = {}
    for statement in ir.walk_statements(body):
        if isinstance(statement, ir.Assign):
            assignments[statement.name] = assignments.get(statement.name, 0) + 1
        elif isinstance(statement, ir.ForRange):
            assignments[statement.variable] = 2
    holding_x: set[str] = set()
    writes = []
    for statement in body:
        if isinstance(statement, ir.Assign) and assignments[statement.name] == 1:
            if is_thread_x(statement.value, holding_x):
                holding_x.add(statement.name)
        elif isinstance(statement, ir.BufferWrite) and is_thread_x(statement.index, holding_x):
            writes.append(statement)
    return writes


def is_thread_x(index: ir.Expression, holding_x: set[str]) -> bool:
    """Whether ``index`` is ``dispatch_id().x``, one of the locals ``holding_x``, or either
    converted to another integer type (a 32-bit position keeps its value in all)."""
    while isinstance(index, ir.Cast) and index.type in INTEGER_TYPES:
        index = index.operand
    if isinstance(index, ir.Local):
        return index.name in holding_x
    return (
        isinstance(index, ir.Member)
        and index.field == "x"
        and isinstance(index.operand, ir.DispatchValue)
        and index.operand.which == "id"
    )
