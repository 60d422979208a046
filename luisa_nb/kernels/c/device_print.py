"""Device ``print`` in compiled C: each call appends a record to the launch's print log.

A record is ``width`` uint64 words: the print's number, the thread's x, y and z, then the
value components (signed integers sign-extended, floats as the bits of a double, bools as
0 or 1). A slot is claimed with an atomic counter; past ``capacity`` a record is counted
but not written, which is how the host learns how many lines were dropped. Where no log
is set (a library a remote server built from the source alone) prints do nothing. The host
decodes the records (:class:`PrintLog`) and formats them as ``lang.device_print`` says.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang.device_print import PrintCollector, format_scalar
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


def components_of(kind: ScalarType | VectorType) -> int:
    return kind.length if isinstance(kind, VectorType) else 1


def record_width(prints: Sequence[ir.Print]) -> int:
    """Words per record: the header and the most value components of any print."""
    counts = [sum(components_of(v.type) for v in p.arguments) for p in prints]
    return RECORD_HEADER + max(counts, default=0)


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
        for position, value in enumerate(statement.arguments):
            kind = value.type
            if isinstance(kind, VectorType):
                name = f"lnb_printed{position}"
                lines.append(f"{inner}{self.type_name(kind)} {name} = {self.expression(value)};")
                words += [c_word(f"{name}.{axis}", kind.element) for axis in "xyzw"[: kind.length]]
            else:
                words.append(c_word(self.expression(value), kind))
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
        words = record[RECORD_HEADER:]
        values = iter(statement.arguments)
        position = 0
        parts: list[str] = []
        for piece in statement.pieces:
            if piece is not None:
                parts.append(piece)
                continue
            kind = next(values).type
            count = components_of(kind)
            texts = [_decode(w, kind) for w in words[position : position + count]]
            position += count
            parts.append(texts[0] if count == 1 else f"({', '.join(texts)})")
        return thread, " ".join(parts)


def _decode(word: np.uint64, kind: Any) -> str:
    scalar = kind.element if isinstance(kind, VectorType) else kind
    if scalar.is_float:
        return format_scalar(np.array([word], np.uint64).view(np.float64)[0], scalar)
    if scalar.is_signed:
        return format_scalar(np.array([word], np.uint64).view(np.int64)[0], scalar)
    return format_scalar(word, scalar)
