"""Buffer atomics in the emitted C: one ``static inline`` helper per (operation, element
type), on GCC's ``__atomic`` builtins, sequentially consistent. Integer add, sub, and,
or, xor and exchange are single builtins; float add and sub, and min and max of any
type, are compare-exchange loops (min and max with the ``min``/``max`` builtins'
semantics: float NaN propagates). A float compare-exchange compares bits, as GPUs do.
A mixin of :class:`~luisa_nb.kernels.c.emitter.CEmitter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.type_system import ScalarType

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter

ORDER = "__ATOMIC_SEQ_CST"
SYMBOLS = {"fetch_add": "+", "fetch_sub": "-"}

EXCHANGE = """\
{prefix} {T} {name}({T} *address, {T} desired) {{
    {T} old;
    __atomic_exchange(address, &desired, &old, {order});
    return old;
}}"""

COMPARE_EXCHANGE = """\
{prefix} {T} {name}({T} *address, {T} expected, {T} desired) {{
    {T} old = expected;
    __atomic_compare_exchange(address, &old, &desired, 0, {order}, {order});
    return old;
}}"""

FETCH = """\
{prefix} {T} {name}({T} *address, {T} value) {{
    return __atomic_{operation}(address, value, {order});
}}"""

LOOP = """\
{prefix} {T} {name}({T} *address, {T} value) {{
    {T} old;
    __atomic_load(address, &old, __ATOMIC_RELAXED);
    {T} next;
    do {{
        next = {update};
    }} while (!__atomic_compare_exchange(address, &old, &next, 1, {order}, __ATOMIC_RELAXED));
    return old;
}}"""


def atomic_helper_name(operation: str, element: ScalarType) -> str:
    """The unchecked helper: ``T name(T *address, values...)`` giving the old value."""
    return f"lnb_atomic_{operation}_{element.value}"


class AtomicEmission:
    """Mixin of :class:`CEmitter` for :class:`ir.AtomicCall`."""

    def atomic_helper(self: CEmitter, operation: str, element: ScalarType) -> str:
        """The unchecked helper of ``operation`` on ``element``, defined on first use."""
        name = atomic_helper_name(operation, element)
        fields = {"prefix": self.function_prefix, "T": self.type_name(element), "name": name}
        fields["order"] = ORDER
        if operation == "exchange":
            template = EXCHANGE
        elif operation == "compare_exchange":
            template = COMPARE_EXCHANGE
        elif element.is_integer and operation not in ("fetch_min", "fetch_max"):
            template = FETCH
            fields["operation"] = operation
        else:
            template = LOOP
            if operation in SYMBOLS:
                fields["update"] = f"old {SYMBOLS[operation]} value"
            else:
                helper = self.use_helper(operation.removeprefix("fetch_"), element)
                fields["update"] = f"{helper}(old, value)"
        return self.define_helper(name, lambda: template.format(**fields))

    def expression_atomiccall(self: CEmitter, expression: ir.AtomicCall) -> str:
        buffer = self.buffer_name(expression.buffer)
        index = self.expression(expression.index)
        values = [self.expression(value) for value in expression.arguments]
        helper = self.atomic_helper(expression.operation, expression.type)
        if not self.checks.bounds:
            return f"{helper}(&{buffer}[{index}], {', '.join(values)})"
        element = self.kernel.buffers[expression.buffer].element
        access = f"atomic_{expression.operation}"
        function = self.use_access_helper(access, element, expression.index.type)
        count = self.count_name(expression.buffer)
        site = f"{expression.line}, {expression.buffer}"
        return f"{function}({buffer}, {count}, {index}, {', '.join(values)}, {site}, lnb_state)"
