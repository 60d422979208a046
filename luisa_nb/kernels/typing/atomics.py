"""Typing of buffer atomics: ``buf.atomic_fetch_add(i, v)`` and the others, with
luisa-python's names and argument order. Each gives the element's old value."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.type_system import ScalarType, article, assignable
from luisa_nb.kernels.typing.expressions import is_weak

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

ATOMIC_OPERATIONS = {  # operation: its value parameters after the index
    "exchange": ("desired",),
    "compare_exchange": ("expected", "desired"),
    "fetch_add": ("value",),
    "fetch_sub": ("value",),
    "fetch_and": ("value",),
    "fetch_or": ("value",),
    "fetch_xor": ("value",),
    "fetch_min": ("value",),
    "fetch_max": ("value",),
}
BITWISE_ATOMICS = ("fetch_and", "fetch_or", "fetch_xor")


class AtomicTyping:
    """Mixin of :class:`KernelTyper` that types atomic buffer methods."""

    def atomic_call(self: KernelTyper, node: ast.Call, slot: int) -> ir.AtomicCall:
        """``buf.atomic_<operation>(index, *values)`` on buffer ``slot``."""
        method = node.func.attr
        operation = method.removeprefix("atomic_")
        name = self.buffers[slot].name
        element = self.buffers[slot].element
        parameters = ATOMIC_OPERATIONS[operation]
        usage = f"{name}.{method}(index, {', '.join(parameters)})"
        if not isinstance(element, ScalarType) or element is ScalarType.BOOL:
            self.fail(
                node.func,
                f"{usage} needs a buffer of int, uint or float elements, but {name!r} is a "
                f"buffer of {element}; atomics work on whole scalar elements",
            )
        if operation in BITWISE_ATOMICS and not element.is_integer:
            self.fail(
                node.func,
                f"{usage} needs a buffer of integers, but {name!r} is a buffer of "
                f"{element.value}; float buffers have exchange, compare_exchange, "
                f"fetch_add, fetch_sub, fetch_min and fetch_max",
            )
        if node.keywords:
            self.fail(node.keywords[0], f"{usage} takes no keyword arguments")
        if len(node.args) != 1 + len(parameters):
            count = len(node.args)
            self.fail(node, f"{usage} takes {1 + len(parameters)} arguments, got {count}")
        index = self.scalar(self.visit(node.args[0]), node.args[0])
        if not index.type.is_integer:
            self.fail(node.args[0], f"buffer index must be an integer, got {index.type.value}")
        values = []
        for parameter, argument in zip(parameters, node.args[1:], strict=True):
            value = self.scalar(self.visit(argument), argument)
            # luisa-python's rules convert integers as C does: its dispatch_size() is a
            # uint3 where luisa_nb's is an int3, so programs add int32 values to uint buffers
            c_conversion = self.rules.c_sign_mixing and element.is_integer and value.type.is_integer
            if not c_conversion and not assignable(element, value.type, is_weak(value)):
                self.fail(
                    argument,
                    f"{usage}: {parameter} is {article(value.type.value)} value but {name!r} is a "
                    f"buffer of {element.value}; convert it explicitly (int(...), float(...))",
                )
            values.append(self.convert(value, element, argument))
        return ir.AtomicCall(element, slot, operation, index, tuple(values), node.lineno)
