"""Device ``print`` in CUDA: one ``printf`` per call, formatted as luisa-python formats
it (``[DEVICE] `` then the values separated by spaces, floats as ``%g``, bools as
``true``/``false``, vectors as ``(x, y)``). CUDA's printf buffer sends the lines to the
process's stdout after the launch; it is bounded by CUDA's printf FIFO
(``cudaLimitPrintfFifoSize``, 1 MiB by default), and the lines are not in the trace."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.device_print import DEVICE_PREFIX, leaf_kinds, render
from luisa_nb.kernels.type_system import ScalarType

if TYPE_CHECKING:
    from luisa_nb.kernels.cuda.emitter import CudaEmitter

CONVERSIONS = {
    ScalarType.INT32: ("%d", "(int)({})"),
    ScalarType.UINT32: ("%u", "(unsigned int)({})"),
    ScalarType.INT64: ("%lld", "(long long)({})"),
    ScalarType.UINT64: ("%llu", "(unsigned long long)({})"),
    ScalarType.FLOAT32: ("%g", "(double)({})"),
    ScalarType.FLOAT64: ("%g", "(double)({})"),
    ScalarType.BOOL: ("%s", '({}) ? "true" : "false"'),
}


def c_string(text: str) -> str:
    """``text`` as a C string literal (JSON's escapes are C's for these characters)."""
    return json.dumps(text, ensure_ascii=True).replace("\\u00", "\\x")


class CudaPrintEmission:
    """Mixin of :class:`CudaEmitter`: a device print is a ``printf``."""

    print_definitions = ""

    def print_statement(self: CudaEmitter, statement: ir.Print, indent: str) -> list[str]:
        inner = indent + "    "
        lines = [f"{indent}{{"]
        values = [
            CONVERSIONS[leaf.type][1].format(self.expression(leaf))
            for leaf in self.printed_leaves(statement, lines, inner)
        ]
        kinds = [kind for value in statement.arguments for kind in leaf_kinds(value.type)]
        formats = iter(CONVERSIONS[kind][0] for kind in kinds)
        arguments = iter(statement.arguments)
        parts = [
            "".join(
                render(next(arguments).type, formats) if part is None else part.replace("%", "%%")
                for part in piece
            )
            for piece in statement.pieces
        ]
        text = c_string(DEVICE_PREFIX + " ".join(parts) + "\n")
        lines.append(f"{inner}printf({', '.join([text, *values])});")
        lines.append(f"{indent}}}")
        return lines
