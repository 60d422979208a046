"""Typing of indirect dispatch in kernels: ``buffer.set_dispatch_count(count)`` and
``buffer.set_kernel(offset, block_size, size, kernel_id)`` on an indirect dispatch
buffer, and the ``kernel_id()`` builtin.

The methods become plain stores of uint32 words (``kernels/indirect.py`` has the
layout), so every emitter runs them as buffer writes and a checked kernel checks them as
it checks buffer indices: an offset outside the buffer stops the dispatch, and the
executable names the entry (``indirect.entry_offset_error``). Each argument is held in a
hidden local first, so it is evaluated once, left to right, as in Python.

``kernel_id()`` reads a hidden uint32 scalar of the kernel (``KernelIR.kernel_id_scalar``):
the runtime passes 0 for a direct dispatch and each entry's kernel id for an indirect one.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.indirect import (
    BLOCK_SIZE_WORD,
    COUNT_WORD,
    DISPATCH_SIZE_WORD,
    ENTRY_WORDS,
    HEADER_WORDS,
    KERNEL_ID_WORD,
    PADDING_WORD,
)
from luisa_nb.kernels.type_system import INT3, ScalarType, VectorType, article, fits
from luisa_nb.kernels.typing.expressions import is_weak

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

UINT3 = VectorType(ScalarType.UINT32, 3)
INDIRECT_METHODS = {
    "set_dispatch_count": "set_dispatch_count(count)",
    "set_kernel": "set_kernel(offset, block_size, size, kernel_id)",
}
KERNEL_ID_NAME = "lnb_kernel_id"


def word(value: int) -> ir.Constant:
    """A uint64 word index."""
    return ir.Constant(ScalarType.UINT64, value)


class IndirectTyping:
    """Mixin of :class:`KernelTyper` for indirect dispatch buffers and ``kernel_id()``."""

    kernel_id_slot: int | None = None

    def indirect_method(
        self: KernelTyper, node: ast.Call, slot: int, statement: bool
    ) -> list[ir.Statement]:
        """The stores of ``set_dispatch_count`` or ``set_kernel`` on indirect buffer
        ``slot``."""
        method = node.func.attr
        name = self.buffers[slot].name
        if method not in INDIRECT_METHODS:
            self.fail(
                node.func,
                f"indirect dispatch buffers have only .set_dispatch_count(count) and "
                f".set_kernel(offset, block_size, size, kernel_id) in kernels, not .{method}",
            )
        usage = f"{name}.{INDIRECT_METHODS[method]}"
        if node.keywords:
            self.fail(node.keywords[0], f"{usage} takes no keyword arguments")
        expected = 1 if method == "set_dispatch_count" else 4
        if len(node.args) != expected:
            self.fail(node, f"{usage} takes {expected} argument(s), got {len(node.args)}")
        if not statement:
            self.fail(node, f"{usage} returns nothing; call it as a statement")
        if method == "set_dispatch_count":
            count = self.indirect_uint(node.args[0], usage, "count")
            return [ir.BufferWrite(slot, word(COUNT_WORD), count, node.lineno)]
        offset_node, block_node, size_node, kernel_id_node = node.args
        statements: list[ir.Statement] = []

        def held(value: ir.Expression) -> ir.Local:
            local = self.temporary(value.type)
            statements.append(ir.Assign(local, value))
            return ir.Local(value.type, local)

        offset = held(self.indirect_uint(offset_node, usage, "offset"))
        block_size = held(self.indirect_uint3(block_node, usage, "block_size"))
        size = held(self.indirect_uint3(size_node, usage, "size"))
        kernel_id = held(self.indirect_uint(kernel_id_node, usage, "kernel_id"))
        offset_words = ir.Cast(ScalarType.UINT64, offset)
        entry = ir.Binary(ScalarType.UINT64, "mul", offset_words, word(ENTRY_WORDS))
        base = held(ir.Binary(ScalarType.UINT64, "add", word(HEADER_WORDS), entry))
        values = [
            *(
                (BLOCK_SIZE_WORD + axis, ir.Member(ScalarType.UINT32, block_size, field))
                for axis, field in enumerate("xyz")
            ),
            (PADDING_WORD, ir.Constant(ScalarType.UINT32, 0)),
            *(
                (DISPATCH_SIZE_WORD + axis, ir.Member(ScalarType.UINT32, size, field))
                for axis, field in enumerate("xyz")
            ),
            (KERNEL_ID_WORD, kernel_id),
        ]
        for position, value in values:
            index = ir.Binary(ScalarType.UINT64, "add", base, word(position)) if position else base
            statements.append(ir.BufferWrite(slot, index, value, node.lineno))
        return statements

    def indirect_uint(self: KernelTyper, node: ast.expr, usage: str, what: str) -> ir.Expression:
        """An integer argument as a uint32 (converted as ``uint(...)`` converts)."""
        value = self.scalar(self.visit(node), node)
        if is_weak(value):
            literal = value.value
            if isinstance(literal, bool) or not isinstance(literal, int):
                self.fail(node, f"{usage}: {what} must be a uint, got {literal!r}")
            if not fits(literal, ScalarType.UINT32):
                self.fail(node, f"{usage}: {what} {literal} does not fit a uint")
            return ir.Constant(ScalarType.UINT32, literal)
        if not value.type.is_integer:
            self.fail(
                node,
                f"{usage}: {what} must be a uint, got {article(value.type.value)} value; "
                f"convert it with uint(...)",
            )
        return value if value.type is ScalarType.UINT32 else ir.Cast(ScalarType.UINT32, value)

    def indirect_uint3(self: KernelTyper, node: ast.expr, usage: str, what: str) -> ir.Expression:
        """A ``uint3`` (or ``int3``, converted) argument."""
        value = self.visit(node)
        if value.type not in (UINT3, INT3):
            self.fail(
                node, f"{usage}: {what} must be a uint3, got {article(str(value.type))} value"
            )
        return value if value.type == UINT3 else ir.Cast(UINT3, value)

    def kernel_id_value(self: KernelTyper, node: ast.Call) -> ir.Local:
        """``kernel_id()``: the kernel's hidden kernel-id scalar, added on first use."""
        if self.is_callable:
            self.fail(
                node,
                "kernel_id() works in a kernel's body, not in a callable; pass kernel_id() "
                "to the callable as an argument",
            )
        if self.kernel_id_slot is None:
            name = KERNEL_ID_NAME
            while name in self.local_names:
                name += "_"
            self.kernel_id_slot = len(self.scalars)
            self.scalars.append(ir.ScalarSlot(name, ScalarType.UINT32))
        return ir.Local(ScalarType.UINT32, self.scalars[self.kernel_id_slot].name)
