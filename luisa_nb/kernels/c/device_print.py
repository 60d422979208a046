"""Device ``print`` in compiled C: each call appends a record to the launch's print log.

A record is ``width`` uint64 words: the print's number, the thread's x, y and z, then the
value components (signed integers sign-extended, floats as the bits of a double, bools as
0 or 1). A slot is claimed with an atomic counter; past ``capacity`` a record is counted
but not written, which is how the host learns how many lines were dropped. Where no log
is set (a launch nobody collects prints of) prints do nothing. The host
decodes the records (:class:`PrintLog`) and formats them as ``lang.device_print`` says.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.aggregates import StructType
from luisa_nb.kernels.lang.device_print import PrintCollector, format_scalar, leaf_kinds, render
from luisa_nb.kernels.type_system import ScalarType, VectorType

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter

RECORD_HEADER = 4  # print number, x, y, z
PRINT_TARGET = "lnb_print_target"

PRINT_DEFINITIONS = f"""typedef struct {{
    uint64_t count, capacity, width;
    uint64_t *records;
}} lnb_print_log;
lnb_print_log *{PRINT_TARGET};  /* set by the host before each launch */
static inline uint64_t lnb_print_double(double value) {{
    union {{ double value; uint64_t bits; }} both;
    both.value = value;
    return both.bits;
}}"""


def record_width(prints: Sequence[ir.Print]) -> int:
    """Words per record: the header and the most leaf values of any print."""
    counts = [sum(len(leaf_kinds(v.type)) for v in p.arguments) for p in prints]
    return RECORD_HEADER + max(counts, default=0)


def leaves(value: ir.Expression) -> list[ir.Expression]:
    """The scalar leaves of ``value`` (see ``lang.device_print.leaf_kinds``) as IR."""
    kind = value.type
    if isinstance(kind, ScalarType):
        return [value]
    if isinstance(kind, VectorType):
        return [ir.Member(kind.element, value, axis) for axis in "xyzw"[: kind.length]]
    if isinstance(kind, StructType):
        fields = [ir.Field(t, value, name) for name, t in kind.fields.items()]
        return [leaf for field in fields for leaf in leaves(field)]
    indices = [ir.Constant(ScalarType.INT32, i) for i in range(kind.size)]
    elements = [ir.Element(kind.element, value, index) for index in indices]
    return [leaf for element in elements for leaf in leaves(element)]


def c_word(value: str, kind: ScalarType) -> str:
    """C for one component as a uint64 record word."""
    if kind.is_float:
        return f"lnb_print_double((double)({value}))"
    if kind is ScalarType.BOOL:
        return f"(uint64_t)(({value}) ? 1 : 0)"
    if kind.is_signed:
        return f"(uint64_t)(int64_t)({value})"
    return f"(uint64_t)({value})"


class PrintEmission:
    """Mixin of :class:`CEmitter`: device prints as records of the print log."""

    print_definitions = PRINT_DEFINITIONS

    def print_numbers(self: CEmitter) -> dict[int, int]:
        """Each device print's number, by the id of its statement."""
        return {id(statement): n for n, statement in enumerate(self.kernel.prints)}

    def print_statement(self: CEmitter, statement: ir.Print, indent: str) -> list[str]:
        number = self.print_numbers()[id(statement)]
        width = record_width(self.kernel.prints)
        inner = indent + "    "
        lines = [f"{indent}{{"]
        words: list[str] = []
        for value in self.printed_leaves(statement, lines, inner):
            words.append(c_word(self.expression(value), value.type))
        lines += [
            f"{inner}lnb_print_log *lnb_log = {PRINT_TARGET};",
            f"{inner}uint64_t lnb_slot = lnb_log ? __atomic_fetch_add(&lnb_log->count, 1, "
            "__ATOMIC_RELAXED) : 0;",
            f"{inner}if (lnb_log && lnb_slot < lnb_log->capacity) {{",
            f"{inner}    uint64_t *lnb_record = lnb_log->records + lnb_slot * {width};",
            f"{inner}    lnb_record[0] = {number};",
            *(
                f"{inner}    lnb_record[{1 + axis}] = (uint64_t)(uint32_t)dispatch_id.{name};"
                for axis, name in enumerate("xyz")
            ),
            *(
                f"{inner}    lnb_record[{RECORD_HEADER + index}] = {word};"
                for index, word in enumerate(words)
            ),
            f"{inner}}}",
            f"{indent}}}",
        ]
        return lines

    def printed_leaves(
        self: CEmitter, statement: ir.Print, lines: list[str], indent: str
    ) -> list[ir.Expression]:
        """The leaves of a print's values; each value is evaluated once, in order, into a
        local declared in ``lines`` (so a callable that prints, called in an argument,
        prints its line first, as in luisa-python)."""
        found: list[ir.Expression] = []
        for position, value in enumerate(statement.arguments):
            name = f"lnb_printed{position}"
            declared = f"{self.type_name(value.type)} {self.variable_name(name)}"
            lines.append(f"{indent}{declared} = {self.expression(value)};")
            found += leaves(ir.Local(value.type, name))
        return found


class PrintLogStruct(ctypes.Structure):
    _fields_ = [
        ("count", ctypes.c_uint64),
        ("capacity", ctypes.c_uint64),
        ("width", ctypes.c_uint64),
        ("records", ctypes.c_void_p),
    ]


class PrintLog:
    """The records of one launch of a kernel with device prints, and their decoding."""

    def __init__(self, prints: Sequence[ir.Print], capacity: int) -> None:
        self.prints = prints
        self.width = record_width(prints)
        self.records = np.zeros((max(capacity, 1), self.width), np.uint64)
        self.struct = PrintLogStruct(0, capacity, self.width, self.records.ctypes.data)

    @property
    def address(self) -> int:
        return ctypes.addressof(self.struct)

    def collect(self, collector: PrintCollector) -> None:
        """Hand the lines to ``collector``, ordered by thread (x fastest), each thread's
        in the order it printed them."""
        count = int(self.struct.count)
        kept = self.records[: min(count, int(self.struct.capacity))]
        order = np.lexsort((kept[:, 1], kept[:, 2], kept[:, 3]))  # stable: z, y, x
        lines = [self._line(kept[row]) for row in order.tolist()]
        collector.extend(lines, count - len(kept))

    def _line(self, record: np.ndarray) -> tuple[tuple[int, int, int], str]:
        statement = self.prints[int(record[0])]
        thread = (int(record[1]), int(record[2]), int(record[3]))
        kinds = [leaf for value in statement.arguments for leaf in leaf_kinds(value.type)]
        texts = iter(map(_decode, record[RECORD_HEADER:].tolist(), kinds))
        values = iter(statement.arguments)
        parts = [
            "".join(render(next(values).type, texts) if part is None else part for part in piece)
            for piece in statement.pieces
        ]
        return thread, " ".join(parts)


def _decode(word: int, scalar: ScalarType) -> str:
    if scalar.is_float:
        return format_scalar(np.array([word], np.uint64).view(np.float64)[0], scalar)
    if scalar.is_signed:
        return format_scalar(np.array([word], np.uint64).view(np.int64)[0], scalar)
    return format_scalar(word, scalar)
