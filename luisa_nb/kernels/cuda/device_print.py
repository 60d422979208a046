"""Device ``print`` in CUDA: one ``printf`` per call, formatted as luisa-python formats
it (``[DEVICE] `` then the values separated by spaces, floats as ``%g``, bools as
``true``/``false``, vectors as ``(x, y)``). CUDA's printf buffer sends the lines to the
process's stdout after the launch; it is bounded by CUDA's printf FIFO
(``cudaLimitPrintfFifoSize``, 1 MiB by default), and the lines are not in the trace."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.device_print import DEVICE_PREFIX
from luisa_nb.kernels.type_system import ScalarType, VectorType

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
        formats: list[str] = []
        values: list[str] = []
        arguments = iter(statement.arguments)
        for position, piece in enumerate(statement.pieces):
            if piece is not None:
                formats.append(piece.replace("%", "%%"))
                continue
            value = next(arguments)
            kind = value.type
            if isinstance(kind, VectorType):
                name = f"lnb_printed{position}"
                lines.append(f"{inner}{self.type_name(kind)} {name} = {self.expression(value)};")
                conversion, cast = CONVERSIONS[kind.element]
                formats.append("(" + ", ".join([conversion] * kind.length) + ")")
                values += [cast.format(f"{name}.{axis}") for axis in "xyzw"[: kind.length]]
            else:
                conversion, cast = CONVERSIONS[kind]
                formats.append(conversion)
                values.append(cast.format(self.expression(value)))
        text = c_string(DEVICE_PREFIX + " ".join(formats) + "\n")
        lines.append(f"{inner}printf({', '.join([text, *values])});")
        lines.append(f"{indent}}}")
        return lines
