"""The typed IR as C source with the thread loop inside (OpenMP across threads).

Dialect details — type names, the prelude, function prefixes, the entry point with its
thread loop — are attributes and methods, so a CUDA emitter can subclass this one.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from luisa_nb.kernels import ir
from luisa_nb.kernels.c.aggregates import AggregateEmission
from luisa_nb.kernels.c.atomics import AtomicEmission
from luisa_nb.kernels.c.bindless import BindlessEmission
from luisa_nb.kernels.c.blocks import BlockEmission
from luisa_nb.kernels.c.checks import (
    LAUNCH_PRELUDE,
    NOTE_FUNCTION,
    access_function,
    access_function_name,
)
from luisa_nb.kernels.c.device_print import PrintEmission
from luisa_nb.kernels.c.helpers import helper_template, needs_math
from luisa_nb.kernels.c.images import STORAGE_TYPES, ImageEmission
from luisa_nb.kernels.c.lanes import LaneEmission
from luisa_nb.kernels.c.launch import LaunchEmission
from luisa_nb.kernels.c.matrices import MatrixEmission
from luisa_nb.kernels.c.prelude import c_prelude
from luisa_nb.kernels.c.rays import RayEmission
from luisa_nb.kernels.c.toolchain import SIMD_LOOPS, THREAD_BY_THREAD, TRACING_RAYS
from luisa_nb.kernels.c.vectors import VectorEmission
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.type_system import (
    INT3,
    ImageType,
    KernelType,
    MatrixType,
    ScalarType,
    element_of,
    is_aggregate_type,
    is_composite,
)

ARITHMETIC_SYMBOLS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "bitand": "&", "bitor": "|",
    "bitxor": "^", "lshift": "<<", "rshift": ">>", "eq": "==", "ne": "!=", "lt": "<",
    "le": "<=", "gt": ">", "ge": ">=", "and": "&&", "or": "||",
}  # fmt: skip
UNARY_SYMBOLS = {"neg": "-", "not": "!", "invert": "~"}
HELPER_OPERATIONS = ("floordiv", "mod", "min", "max", "abs")
FLOAT_HELPERS = {  # builtins with a C helper (luisa.util's mod is `lnb_floormod_*`)
    "rsqrt": "rsqrt", "fract": "fract", "exp10": "exp10", "sign": "sign", "fmod": "fmod",
    "mod": "floormod", "step": "step", "lerp": "lerp", "smoothstep": "smoothstep",
}  # fmt: skip
STRUCT_CODES = {
    ScalarType.BOOL: "?",
    ScalarType.INT32: "i",
    ScalarType.UINT32: "I",
    ScalarType.INT64: "q",
    ScalarType.UINT64: "Q",
    ScalarType.FLOAT32: "f",
    ScalarType.FLOAT64: "d",
}


def argument_struct(kernel: ir.KernelIR, checks: KernelChecks) -> struct.Struct:
    """Packs (dims x3, buffer addresses, scalars, and with checks one int64 element count
    per buffer) exactly like the C argument struct. A vector scalar takes its components,
    padded as the C struct pads it; a matrix, struct or array its bytes."""
    layout = f"@3q{'P' * len(kernel.buffers)}"
    for slot in kernel.scalars:
        kind = slot.type
        if is_aggregate_type(kind) or isinstance(kind, MatrixType):
            layout += "x" * (-struct.calcsize(layout) % kind.alignment)
            layout += f"{kind.dtype.itemsize}s"
            continue
        if not is_composite(kind):
            layout += STRUCT_CODES[kind]
            continue
        layout += "x" * (-struct.calcsize(layout) % kind.alignment)
        padding = "x" * (kind.alignment - kind.length * kind.element.dtype.itemsize)
        layout += STRUCT_CODES[kind.element] * kind.length + padding
    counts = "q" * len(kernel.buffers) if checks.bounds else ""
    return struct.Struct(f"{layout}{counts}0q")


def c_identifier(name: str) -> str:
    """``name`` made safe for C (Python allows non-ASCII identifiers)."""
    return "".join(c if c.isascii() else f"_u{ord(c):x}_" for c in name)


class CEmitter(
    VectorEmission,
    MatrixEmission,
    AggregateEmission,
    AtomicEmission,
    ImageEmission,
    BindlessEmission,
    BlockEmission,
    LaneEmission,
    LaunchEmission,
    PrintEmission,
    RayEmission,
):
    """Emits one kernel as C11 for the host compiler.

    ``checks`` decides whether buffer accesses are checked (``checks.bounds``) and whether
    values written to float buffers must be finite (``checks.finite_writes``); see
    ``c.checks`` for how checks stay branch-free.
    """

    type_names = {
        ScalarType.BOOL: "_Bool",
        ScalarType.INT32: "int32_t",
        ScalarType.UINT32: "uint32_t",
        ScalarType.INT64: "int64_t",
        ScalarType.UINT64: "uint64_t",
        ScalarType.FLOAT32: "float",
        ScalarType.FLOAT64: "double",
    }
    kernel_prefix = ""
    function_prefix = "static inline"
    launch_prelude = LAUNCH_PRELUDE
    note_function = NOTE_FUNCTION
    # The parallel and the serial launch loop both call the block function: inlined, the
    # whole kernel would be optimized twice (about 10% of a cold compile).
    block_function_prefix = "static __attribute__((noinline))"
    # Threads run in blocks along x; each OpenMP thread claims blocks from a shared
    # counter, so a thread that shares its core with another process takes fewer. See
    # "OpenMP" in docs/kernels.md for the measurements behind these numbers.
    block_size = 2048  # bodies without loops: one simd loop of this many threads
    claim = 8  # blocks a claim: 16384 threads, few claims, still balanced
    parallel_threshold = 1 << 18  # below this, waking a sleeping thread costs more
    block_size_with_loops = 64  # bodies with loops: smaller blocks, one a claim
    claim_with_loops = 1
    parallel_threshold_with_loops = 256
    # A dispatch writing this many bytes of a buffer streams it (see kernels/c/streaming.py),
    # through tiles of this many threads' elements (see "Streaming stores" in kernels.md).
    streaming_bytes = 8 << 20
    tile_threads = 128

    def __init__(self, kernel: ir.KernelIR, checks: KernelChecks = KernelChecks.BOUNDS) -> None:
        self.kernel = kernel
        self.checks = checks
        self.access = kernel.buffer_access()
        self.aggregate_names: dict[object, str] = {}
        self.aggregate_definitions: list[str] = []  # members' types first
        self.references: set[str] = set()  # parameters of the callable being emitted
        self.return_type: object = None  # its return type
        self.sequence_counter = 0
        names = [  # a bindless array's resources are named heap[slot]
            c_identifier(slot.name.replace("[", "_").replace("]", "")) for slot in kernel.buffers
        ]
        self.buffer_names = [
            name if names.count(name) == 1 else f"{name}_{index}"
            for index, name in enumerate(names)
        ]
        self.helper_names: set[str] = set()
        self.helper_texts: list[str] = []  # in dependency order
        self.composite_types: set[KernelType] = set()
        self.access_helpers: dict[tuple[str, KernelType, ScalarType], None] = {}
        self.image_helper_texts: list[str] = []  # after the checked accesses
        self.bindless_sites: list[ir.BindlessCall] = []  # see c.bindless
        self.notes_checks = False  # a check outside the access helpers notes failures
        self.in_kernel_body = False  # emitting the body of a kernel whose threads run as blocks
        self.emitting_lanes = False  # emitting <entry>_lanes (see c.lanes)
        self.uses_math = False
        self.loop_counter = 0
        self.barrier_lines = [0]  # the source line of each barrier, by number (see c.blocks)
        self.block_loop_fields: list[tuple[str, str]] = []  # (C type, name), see c_blocks

    @property
    def entry_name(self) -> str:
        return f"lnb_{c_identifier(self.kernel.name)}"

    @property
    def optimization(self) -> tuple[str, ...]:
        """The compiler's optimization flags: ``SIMD_LOOPS`` where a block's threads run as
        a simd loop (threads with control flow too, where they run as lanes),
        ``THREAD_BY_THREAD`` where they run one by one, ``TRACING_RAYS`` where they trace
        rays."""
        if any(self.is_traversal(function) for function in self.kernel.functions):
            return TRACING_RAYS
        if self.kernel.has_control_flow and not self.in_lanes:
            return THREAD_BY_THREAD
        return SIMD_LOOPS

    @property
    def launch_name(self) -> str:
        """The entry that takes a launch record: ``void name(const void *, lnb_launch *)``."""
        return f"{self.entry_name}_launch"

    identifier = staticmethod(c_identifier)

    def emit(self) -> str:
        """The complete C translation unit."""
        functions = [self.function_definition(i) for i in range(len(self.kernel.functions))]
        blocks = self.kernel.uses_blocks
        body = self.block_body_function() if blocks else self.body_function()
        images = self.image_helper_texts
        launch = self.launch_functions()
        arguments = self.argument_struct()
        structs = (self.block_structs(),) if blocks else ()
        accesses = [
            self.access_definition(access, element, index)
            for access, element, index in self.access_helpers
        ]
        checks = {
            KernelChecks.BOUNDS: "indices",
            KernelChecks.OFF: "off",
            KernelChecks.BOUNDS_AND_FINITE: "indices and finite writes",
        }
        rules = "" if self.kernel.rules == "python" else f"; {self.kernel.rules} rules"
        parts = [
            f"/* luisa_nb kernel {self.kernel.name!r}: generated code; checks: "
            f"{checks[self.checks]}{rules}. */",
            self.prelude(),
            "\n".join(self.type_definitions()),
            self.launch_prelude,
            *((self.print_definitions,) if self.kernel.prints else ()),
            arguments,
            *structs,
            *self.helper_texts,
            *(
                (self.note_function,)
                if self.access_helpers or (self.checks.bounds and images) or self.notes_checks
                else ()
            ),
            *accesses,
            *images,
            *functions,
            body,
            *launch,
        ]
        return "\n\n".join(parts) + "\n"

    def prelude(self) -> str:
        """What the C library would declare (``c.prelude``): math once a math function
        is used, allocation for kernels whose threads run as blocks."""
        return c_prelude(math=self.uses_math, allocation=self.kernel.uses_blocks)

    def launch_functions(self) -> list[str]:
        """What runs the threads: the one-thread runner of simd loops, and the entries."""
        if self.kernel.uses_blocks:
            return [self.block_entry()]
        if self.in_lanes:
            return [self.lanes_definitions(), self.entry()]
        if self.kernel.has_control_flow:
            return [self.entry()]
        return [*self.streaming_functions(), self.run_function(), self.entry()]

    def access_definition(self, access: str, element: KernelType, index: ScalarType) -> str:
        """The definition of one checked access helper (see ``c.checks``)."""
        components = (
            self.components(element, "value")
            if is_composite(element) or is_aggregate_type(element)
            else None
        )
        return access_function(
            access, element, index, self.type_name, self.function_prefix, components, self.compound
        )

    def compound(self, type_text: str, initializer: str) -> str:
        """A value of the C type ``type_text`` from the items of a brace initializer."""
        return f"({type_text}){{{initializer}}}"

    def alignment(self, alignment: int) -> str:
        """The specifier aligning a struct's first member to ``alignment`` bytes."""
        return f"_Alignas({alignment})"

    def temporary_reference(self, type_text: str, value: str) -> str:
        """A pointer to a temporary holding ``value``, alive until the end of the call."""
        return f"({type_text}[1]){{{value}}}"

    def statement_expression(self, statements: list[str], value: str) -> str:
        """An expression running ``statements`` in order, then giving ``value``."""
        return f"({{ {' '.join(statements)} {value}; }})"

    def type_name(self, kernel_type: KernelType | ImageType) -> str:
        """The C type of ``kernel_type``; of an image, that of one stored channel."""
        if isinstance(kernel_type, ImageType):
            return STORAGE_TYPES[kernel_type.storage]
        if is_composite(kernel_type):
            return self.composite_name(kernel_type)
        if is_aggregate_type(kernel_type):
            return self.aggregate_name(kernel_type)
        return self.type_names[kernel_type]

    def buffer_name(self, index: int) -> str:
        return f"b_{self.buffer_names[index]}"

    def variable_name(self, name: str) -> str:
        """A local or scalar parameter of the kernel, as a C variable (a callable's struct
        and array parameters are pointers: the name dereferences them)."""
        if name in self.references:
            return f"(*v_{c_identifier(name)})"
        return self.lane_variable(name) or self.block_variable(name) or f"v_{c_identifier(name)}"

    def scalar_field_name(self, name: str) -> str:
        """A scalar parameter, as a field of the argument struct."""
        return f"s_{c_identifier(name)}"

    def count_name(self, index: int) -> str:
        """The element count of buffer ``index`` (only with checks)."""
        return f"n_{self.buffer_names[index]}"

    def buffer_declaration(self, index: int) -> str:
        slot = self.kernel.buffers[index]
        const = "const " if self.access[index] == "read" else ""
        return f"{const}{self.type_name(slot.element)} *{self.buffer_name(index)}"

    def argument_struct(self) -> str:
        buffers = range(len(self.kernel.buffers))
        fields = ["    int64_t size[3];"]
        fields += [f"    {self.buffer_declaration(i)};" for i in buffers]
        fields += [
            f"    {self.type_name(slot.type)} {self.scalar_field_name(slot.name)};"
            for slot in self.kernel.scalars
        ]
        if self.checks.bounds:
            fields += [f"    int64_t {self.count_name(i)};" for i in buffers]
        return "typedef struct {\n" + "\n".join(fields) + f"\n}} {self.entry_name}_arguments;"

    def helper(self, operation: str, scalar_type: ScalarType) -> str:
        suffix = "f" if scalar_type is ScalarType.FLOAT32 else ""
        return helper_template(operation, scalar_type).format(
            prefix=self.function_prefix,
            T=self.type_name(scalar_type),
            name=scalar_type.value,
            f=suffix,
        )

    def use_helper(self, operation: str, scalar_type: ScalarType) -> str:
        self.uses_math |= needs_math(operation, scalar_type)
        name = f"lnb_{operation}_{scalar_type.value}"
        return self.define_helper(name, lambda: self.helper(operation, scalar_type))

    def use_access_helper(self, access: str, element: KernelType, index: ScalarType) -> str:
        self.access_helpers[(access, element, index)] = None
        return access_function_name(access, element, index)

    def body_parameters(self) -> list[str]:
        buffers = range(len(self.kernel.buffers))
        parameters = ["lnb_int3 dispatch_id", "lnb_int3 dispatch_size"]
        parameters += [self.buffer_declaration(i) for i in buffers]
        if self.checks.bounds:
            parameters += [f"uint64_t {self.count_name(i)}" for i in buffers]
        parameters += [
            f"{self.type_name(slot.type)} {self.variable_name(slot.name)}"
            for slot in self.kernel.scalars
        ]
        return [*parameters, "lnb_thread *lnb_state"]

    def body_argument_names(self) -> list[str]:
        """The thread function's parameters after id and size, by name (without state)."""
        buffers = range(len(self.kernel.buffers))
        names = [self.buffer_name(i) for i in buffers]
        if self.checks.bounds:
            names += [self.count_name(i) for i in buffers]
        return names + [self.variable_name(slot.name) for slot in self.kernel.scalars]

    def body_function(self) -> str:
        """The kernel body for one thread; a bare ``return`` ends the thread."""
        parameters = ", ".join(self.body_parameters())
        lines = [f"{self.function_prefix} void {self.entry_name}_thread({parameters}) {{"]
        for name, kernel_type in self.kernel.locals.items():
            zero = "0" if isinstance(kernel_type, ScalarType) else "{0}"
            lines.append(f"    {self.type_name(kernel_type)} {self.variable_name(name)} = {zero};")
        lines += self.statements(self.kernel.body, 1)
        lines.append("}")
        return "\n".join(lines)

    def statements(self, body: tuple[ir.Statement, ...], depth: int) -> list[str]:
        lines: list[str] = []
        for statement in body:
            lines += self.statement(statement, depth)
        return lines

    def statement(self, statement: ir.Statement, depth: int) -> list[str]:
        indent = "    " * depth
        if isinstance(statement, ir.Assign):
            if isinstance(statement.value, ir.SharedArray):
                return []  # the block function holds the block's shared arrays
            value = self.expression(statement.value)
            return [f"{indent}{self.variable_name(statement.name)} = {value};"]
        if isinstance(statement, ir.BufferWrite):
            return [f"{indent}{self.buffer_write(statement)};"]
        if isinstance(statement, ir.ImageWrite):
            return [f"{indent}{self.image_write(statement)};"]
        if isinstance(statement, ir.Store):
            return self.store(statement, indent)
        if isinstance(statement, ir.Evaluate):
            return [f"{indent}(void){self.expression(statement.value)};"]
        if isinstance(statement, ir.If):
            return self.if_statement(statement, depth)
        if isinstance(statement, ir.While):
            condition = self.condition(statement.condition)
            body = [self.stop_check(depth + 1), *self.statements(statement.body, depth + 1)]
            return [f"{indent}while ({condition}) {{", *body, f"{indent}}}"]
        if isinstance(statement, ir.ForRange):
            return self.for_range(statement, depth)
        if isinstance(statement, ir.Barrier):
            return self.barrier(statement, indent)
        if isinstance(statement, ir.Print):
            return self.print_statement(statement, indent)
        if isinstance(statement, ir.Return):
            if self.in_kernel_body:  # a thread of a block: it takes no part in later rounds
                return [f"{indent}lnb_l->lnb_finished = 1;", f"{indent}return;"]
            return [f"{indent}{self.return_statement(statement)}"]
        keyword = {ir.Break: "break", ir.Continue: "continue"}
        return [f"{indent}{keyword[type(statement)]};"]

    def if_statement(self, statement: ir.If, depth: int, keyword: str = "if") -> list[str]:
        indent = "    " * depth
        lines = [f"{indent}{keyword} ({self.condition(statement.condition)}) {{"]
        lines += self.statements(statement.body, depth + 1)
        orelse = statement.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ir.If):
            return lines + self.if_statement(orelse[0], depth, "} else if")
        if orelse:
            lines += [f"{indent}}} else {{", *self.statements(orelse, depth + 1)]
        return [*lines, f"{indent}}}"]

    def condition(self, expression: ir.Expression) -> str:
        """An expression for ``if``/``while``, without the outer parentheses of a binary."""
        text = self.expression(expression)
        bracketed = text[0] == "(" and not text.startswith("({")  # not a statement expression
        return text[1:-1] if isinstance(expression, ir.Binary) and bracketed else text

    def for_range(self, statement: ir.ForRange, depth: int) -> list[str]:
        indent = "    " * depth
        number = self.loop_counter
        self.loop_counter += 1
        loop_type = self.type_name(statement.start.type)
        held = self.in_kernel_body and ir.contains_barrier(statement.body)  # see c.blocks

        def place(name: str) -> str:
            return self.loop_field(name, loop_type) if held else name

        counter, stop = place(f"lnb_i{number}"), place(f"lnb_stop{number}")
        declared = "" if held else f"{loop_type} "
        constant = "" if held else "const "
        lines = [
            f"{indent}{{",
            f"{indent}    {constant}{declared}{stop} = {self.expression(statement.stop)};",
        ]
        if isinstance(statement.step, ir.Constant):
            step_value = self.expression(statement.step)
            condition = f"{counter} {'<' if statement.step.value > 0 else '>'} {stop}"
        else:
            step = place(f"lnb_step{number}")
            lines.append(
                f"{indent}    {constant}{declared}{step} = {self.expression(statement.step)};"
            )
            step_value = step
            condition = f"({step} > 0 ? {counter} < {stop} : {counter} > {stop})"
        variable = self.variable_name(statement.variable)
        start = self.expression(statement.start)
        if statement.end_value or held:  # the counter is set before the loop
            lines.append(f"{indent}    {declared}{counter} = {start};")
            header = ""
        else:
            header = f"{loop_type} {counter} = {start}"
        lines.append(f"{indent}    for ({header}; {condition}; {counter} += {step_value}) {{")
        lines.append(self.stop_check(depth + 2))
        lines.append(f"{indent}        {variable} = {counter};")
        lines += self.statements(statement.body, depth + 2)
        lines.append(f"{indent}    }}")
        if statement.end_value:  # a break leaves the condition true and the variable as is
            lines.append(f"{indent}    if (!({condition})) {variable} = {counter};")
        lines.append(f"{indent}}}")
        return lines

    def stop_check(self, depth: int) -> str:
        """First statement of every loop iteration: end the thread once a check failed or
        the launch was cancelled (so even ``while True`` loops can be stopped)."""
        return f"{'    ' * depth}if (lnb_thread_stopped(lnb_state)) {self.stopped_return()}"

    def buffer_write(self, statement: ir.BufferWrite) -> str:
        slot = self.kernel.buffers[statement.buffer]
        buffer = self.buffer_name(statement.buffer)
        index, value = self.expression(statement.index), self.expression(statement.value)
        if not self.checks.bounds:
            return f"{buffer}[{index}] = {value}"
        finite = not is_aggregate_type(slot.element) and element_of(slot.element).is_float
        access = "write_finite" if self.checks.finite_writes and finite else "write"
        function = self.use_access_helper(access, slot.element, statement.index.type)
        count = self.count_name(statement.buffer)
        site = f"{statement.line}, {statement.buffer}"
        return f"{function}({buffer}, {count}, {index}, {value}, {site}, lnb_state)"

    def expression(self, expression: ir.Expression) -> str:
        sequenced = self.sequenced(expression)
        if sequenced is not None:
            return sequenced
        method = getattr(self, f"expression_{type(expression).__name__.lower()}")
        return method(expression)

    def expression_constant(self, expression: ir.Constant) -> str:
        scalar_type, value = expression.type, expression.value
        if scalar_type is ScalarType.BOOL:
            return "1" if value else "0"
        if scalar_type.is_float:
            return self.float_literal(float(value), scalar_type)
        return self.integer_literal(int(value), scalar_type)

    def integer_literal(self, value: int, scalar_type: ScalarType) -> str:
        suffix = {ScalarType.UINT32: "u", ScalarType.INT64: "LL", ScalarType.UINT64: "ULL"}
        ending = suffix.get(scalar_type, "")
        if value == -(2 ** (scalar_type.bits - 1)):
            return f"({self.type_name(scalar_type)})(-{abs(value) - 1}{ending} - 1)"
        return f"(-{abs(value)}{ending})" if value < 0 else f"{value}{ending}"

    def float_literal(self, value: float, scalar_type: ScalarType) -> str:
        single = scalar_type is ScalarType.FLOAT32
        if math.isinf(value) or math.isnan(value):
            self.uses_math = True
            name = "INFINITY" if math.isinf(value) else "NAN"
            text = f"({self.type_name(scalar_type)}){name}"
            return f"(-{text})" if value < 0 else text
        text = str(np.float32(value)) if single else repr(value)
        if "." not in text and "e" not in text:
            text += ".0"
        text += "f" if single else ""
        return f"({text})" if value < 0 or text.startswith("-") else text

    def expression_local(self, expression: ir.Local) -> str:
        return self.variable_name(expression.name)

    def expression_dispatchvalue(self, expression: ir.DispatchValue) -> str:
        if expression.which in ("thread", "block"):  # ids are never negative: C's % is floored
            symbol = "%" if expression.which == "thread" else "/"
            parts = [
                f"dispatch_id.{axis} {symbol} {extent}"
                for axis, extent in zip("xyz", self.kernel.block_size, strict=True)
            ]
            return f"({self.compound(self.type_name(expression.type), ', '.join(parts))})"
        name = "dispatch_id" if expression.which == "id" else "dispatch_size"
        if expression.type != INT3:  # luisa-python's uint3
            parts = ", ".join(f"(uint32_t){name}.{axis}" for axis in "xyz")
            return f"({self.compound(self.type_name(expression.type), parts)})"
        return name

    def expression_member(self, expression: ir.Member) -> str:
        if len(expression.field) > 1:
            return self.swizzle(expression)
        return f"{self.expression(expression.operand)}.{expression.field}"

    def expression_element(self, expression: ir.Element) -> str:
        if isinstance(expression.operand.type, MatrixType):
            return self.matrix_column(expression)
        if is_aggregate_type(expression.operand.type):
            return self.array_element(expression)
        return self.element(expression)

    def expression_construct(self, expression: ir.Construct) -> str:
        if isinstance(expression.type, MatrixType):
            return self.matrix_construct(expression)
        if is_aggregate_type(expression.type):
            return self.aggregate_construct(expression)
        return self.construct(expression)

    def expression_bufferread(self, expression: ir.BufferRead) -> str:
        buffer = self.buffer_name(expression.buffer)
        index = self.expression(expression.index)
        if not self.checks.bounds:
            return f"{buffer}[{index}]"
        element = self.kernel.buffers[expression.buffer].element
        function = self.use_access_helper("read", element, expression.index.type)
        count = self.count_name(expression.buffer)
        site = f"{expression.line}, {expression.buffer}"
        return f"{function}({buffer}, {count}, {index}, {site}, lnb_state)"

    def expression_unary(self, expression: ir.Unary) -> str:
        if isinstance(expression.type, MatrixType):
            return self.matrix_negation(expression)
        if is_composite(expression.type):
            return self.vector_unary(expression)
        return f"({UNARY_SYMBOLS[expression.operator]}{self.expression(expression.operand)})"

    def expression_binary(self, expression: ir.Binary) -> str:
        if MatrixType in (type(expression.left.type), type(expression.right.type)):
            return self.matrix_binary(expression)
        if is_composite(expression.type) or is_composite(expression.left.type):
            return self.vector_binary(expression)
        left, right = self.expression(expression.left), self.expression(expression.right)
        return self.scalar_binary(
            expression.operator, expression.type, expression.left.type, left, right
        )

    def scalar_binary(
        self, operator: str, result: ScalarType, operand: ScalarType, left: str, right: str
    ) -> str:
        """``left <operator> right`` on scalars of type ``operand``."""
        if operator in ARITHMETIC_SYMBOLS:
            return f"({left} {ARITHMETIC_SYMBOLS[operator]} {right})"
        if operator == "pow":
            return self.call("pow", result, [left, right])
        return f"{self.use_helper(operator, result)}({left}, {right})"

    def expression_select(self, expression: ir.Select) -> str:
        condition = self.expression(expression.condition)
        if_true, if_false = (
            self.expression(expression.if_true),
            self.expression(expression.if_false),
        )
        return f"({condition} ? {if_true} : {if_false})"

    def expression_cast(self, expression: ir.Cast) -> str:
        if is_composite(expression.type):
            return self.vector_cast(expression)
        return f"(({self.type_name(expression.type)}){self.expression(expression.operand)})"

    def expression_call(self, expression: ir.Call) -> str:
        if isinstance(expression.arguments[0].type, MatrixType):
            return self.matrix_call(expression)
        if any(is_composite(argument.type) for argument in expression.arguments):
            return self.vector_call(expression)
        arguments = [self.expression(argument) for argument in expression.arguments]
        operand = expression.arguments[0].type
        return self.call(expression.function, expression.type, arguments, operand)

    def call(
        self,
        function: str,
        result_type: ScalarType,
        arguments: list[str],
        operand: ScalarType | None = None,
    ) -> str:
        """A math builtin on scalars of type ``operand`` (the result's type when None);
        float functions map to the C math functions (see ``c.prelude``), the rest to helpers."""
        if function in ("isnan", "isinf"):
            self.uses_math = True
            return f"{function}({arguments[0]})"
        if function in FLOAT_HELPERS:
            helper = self.use_helper(FLOAT_HELPERS[function], result_type)
            return f"{helper}({', '.join(arguments)})"
        if function == "clamp":
            low = f"{self.use_helper('max', result_type)}({arguments[0]}, {arguments[1]})"
            return f"{self.use_helper('min', result_type)}({low}, {arguments[2]})"
        if function in HELPER_OPERATIONS:
            if function == "abs" and not result_type.is_signed and not result_type.is_float:
                return arguments[0]
            return f"{self.use_helper(function, result_type)}({', '.join(arguments)})"
        if function == "pow" and result_type.is_integer:
            return f"{self.use_helper('pow', result_type)}({', '.join(arguments)})"
        self.uses_math = True
        suffix = "f" if result_type is ScalarType.FLOAT32 else ""
        return f"{function}{suffix}({', '.join(arguments)})"
