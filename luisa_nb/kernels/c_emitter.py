"""The typed IR as C source with the thread loop inside (OpenMP across threads).

Dialect details — type names, includes, function prefixes, the entry point with its
thread loop — are attributes and methods, so a CUDA emitter can subclass this one.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from luisa_nb.kernels import ir
from luisa_nb.kernels.c_helpers import helper_template, needs_math_header
from luisa_nb.kernels.type_system import KernelType, ScalarType, VectorType

ARITHMETIC_SYMBOLS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "bitand": "&", "bitor": "|",
    "bitxor": "^", "lshift": "<<", "rshift": ">>", "eq": "==", "ne": "!=", "lt": "<",
    "le": "<=", "gt": ">", "ge": ">=", "and": "&&", "or": "||",
}  # fmt: skip
UNARY_SYMBOLS = {"neg": "-", "not": "!", "invert": "~"}
HELPER_OPERATIONS = ("floordiv", "mod", "min", "max", "abs")
STRUCT_CODES = {
    ScalarType.BOOL: "?",
    ScalarType.INT32: "i",
    ScalarType.UINT32: "I",
    ScalarType.INT64: "q",
    ScalarType.UINT64: "Q",
    ScalarType.FLOAT32: "f",
    ScalarType.FLOAT64: "d",
}


def argument_struct(kernel: ir.KernelIR) -> struct.Struct:
    """Packs (dims x3, buffer addresses, scalars) exactly like the C argument struct."""
    scalar_codes = "".join(STRUCT_CODES[slot.type] for slot in kernel.scalars)
    return struct.Struct(f"@3q{'P' * len(kernel.buffers)}{scalar_codes}0q")


def c_identifier(name: str) -> str:
    """``name`` made safe for C (Python allows non-ASCII identifiers)."""
    return "".join(c if c.isascii() else f"_u{ord(c):x}_" for c in name)


class CEmitter:
    """Emits one kernel as C11 for the host compiler."""

    type_names = {
        ScalarType.BOOL: "_Bool",
        ScalarType.INT32: "int32_t",
        ScalarType.UINT32: "uint32_t",
        ScalarType.INT64: "int64_t",
        ScalarType.UINT64: "uint64_t",
        ScalarType.FLOAT32: "float",
        ScalarType.FLOAT64: "double",
    }
    includes = ("stdint.h", "string.h")
    kernel_prefix = ""
    function_prefix = "static inline"
    block_size = 2048  # threads along x that one OpenMP iteration runs (a simd loop)
    parallel_threshold = 8192  # fewer threads than this run on the calling thread
    block_size_with_loops = 64  # bodies with loops: smaller blocks, dynamic schedule
    parallel_threshold_with_loops = 256

    def __init__(self, kernel: ir.KernelIR) -> None:
        self.kernel = kernel
        self.access = kernel.buffer_access()
        self.helpers: dict[tuple[str, ScalarType], None] = {}
        self.uses_math = False
        self.loop_counter = 0

    @property
    def entry_name(self) -> str:
        return f"lnb_{c_identifier(self.kernel.name)}"

    def emit(self) -> str:
        """The complete C translation unit."""
        body = self.body_function()
        includes = [*self.includes, *(("math.h",) if self.uses_math else ())]
        parts = [
            f"/* luisa_nb kernel {self.kernel.name!r}: generated code. */",
            "\n".join(f"#include <{name}>" for name in includes),
            "typedef struct { int32_t x, y, z; } lnb_int3;",
            self.argument_struct(),
            *(self.helper(operation, scalar_type) for operation, scalar_type in self.helpers),
            body,
            self.entry(),
        ]
        return "\n\n".join(parts) + "\n"

    def type_name(self, kernel_type: KernelType) -> str:
        if isinstance(kernel_type, VectorType):
            return "lnb_int3"
        return self.type_names[kernel_type]

    def buffer_declaration(self, index: int) -> str:
        slot = self.kernel.buffers[index]
        const = "const " if self.access[index] == "read" else ""
        return f"{const}{self.type_name(slot.element)} *b_{c_identifier(slot.name)}"

    def argument_struct(self) -> str:
        fields = ["    int64_t size[3];"]
        fields += [f"    {self.buffer_declaration(i)};" for i in range(len(self.kernel.buffers))]
        fields += [
            f"    {self.type_name(slot.type)} s_{c_identifier(slot.name)};"
            for slot in self.kernel.scalars
        ]
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
        self.helpers[(operation, scalar_type)] = None
        self.uses_math |= needs_math_header(operation, scalar_type)
        return f"lnb_{operation}_{scalar_type.value}"

    def body_parameters(self) -> list[str]:
        parameters = ["lnb_int3 dispatch_id", "lnb_int3 dispatch_size"]
        parameters += [self.buffer_declaration(i) for i in range(len(self.kernel.buffers))]
        parameters += [
            f"{self.type_name(slot.type)} v_{c_identifier(slot.name)}"
            for slot in self.kernel.scalars
        ]
        return parameters

    def body_function(self) -> str:
        """The kernel body for one thread; a bare ``return`` ends the thread."""
        parameters = ", ".join(self.body_parameters())
        lines = [f"{self.function_prefix} void {self.entry_name}_thread({parameters}) {{"]
        for name, kernel_type in self.kernel.locals.items():
            zero = "{0, 0, 0}" if isinstance(kernel_type, VectorType) else "0"
            lines.append(f"    {self.type_name(kernel_type)} v_{c_identifier(name)} = {zero};")
        lines += self.statements(self.kernel.body, 1)
        lines.append("}")
        return "\n".join(lines)

    def entry(self) -> str:
        """The exported function: unpacks the arguments and runs every thread.

        Threads run in blocks along x: ``block_size`` threads in a simd loop when the body
        has no loops or returns, else ``block_size_with_loops``. Blocks run in parallel
        (OpenMP) from the matching threshold on, else on the calling thread.
        """
        name = self.entry_name
        if self.kernel.has_control_flow:
            block, threshold = self.block_size_with_loops, self.parallel_threshold_with_loops
            schedule, simd = "dynamic", ""
        else:
            block, threshold = self.block_size, self.parallel_threshold
            schedule, simd = "static", "#pragma omp simd\n"
        arguments = ["id", "size"]
        arguments += [f"a->b_{c_identifier(slot.name)}" for slot in self.kernel.buffers]
        arguments += [f"a->s_{c_identifier(slot.name)}" for slot in self.kernel.scalars]
        loops = f"""\
for (int64_t z = 0; z < size_z; ++z)
            for (int64_t y = 0; y < size_y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    {name}_block(&a, size, z, y, block);"""
        block_parameters = (
            f"const {name}_arguments *a, lnb_int3 size, int64_t z, int64_t y, int64_t block"
        )
        return f"""\
{self.function_prefix} void {name}_block({block_parameters}) {{
    const int64_t start = block * {block};
    const int64_t end = start + {block} < a->size[0] ? start + {block} : a->size[0];
{simd}    for (int64_t x = start; x < end; ++x) {{
        const lnb_int3 id = {{(int32_t)x, (int32_t)y, (int32_t)z}};
        {name}_thread({", ".join(arguments)});
    }}
}}

{self.kernel_prefix}void {name}(const void *packed_arguments) {{
    {name}_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    const int64_t size_x = a.size[0], size_y = a.size[1], size_z = a.size[2];
    const int64_t blocks = (size_x + {block - 1}) / {block};
    const lnb_int3 size = {{(int32_t)size_x, (int32_t)size_y, (int32_t)size_z}};
    if (size_x * size_y * size_z >= {threshold}) {{
#pragma omp parallel for collapse(3) schedule({schedule})
        {loops}
    }} else {{
        {loops}
    }}
}}"""

    def statements(self, body: tuple[ir.Statement, ...], depth: int) -> list[str]:
        lines: list[str] = []
        for statement in body:
            lines += self.statement(statement, depth)
        return lines

    def statement(self, statement: ir.Statement, depth: int) -> list[str]:
        indent = "    " * depth
        if isinstance(statement, ir.Assign):
            return [
                f"{indent}v_{c_identifier(statement.name)} = {self.expression(statement.value)};"
            ]
        if isinstance(statement, ir.BufferWrite):
            target = f"b_{c_identifier(self.kernel.buffers[statement.buffer].name)}"
            index, value = self.expression(statement.index), self.expression(statement.value)
            return [f"{indent}{target}[{index}] = {value};"]
        if isinstance(statement, ir.Evaluate):
            return [f"{indent}(void){self.expression(statement.value)};"]
        if isinstance(statement, ir.If):
            return self.if_statement(statement, depth)
        if isinstance(statement, ir.While):
            condition = self.condition(statement.condition)
            body = self.statements(statement.body, depth + 1)
            return [f"{indent}while ({condition}) {{", *body, f"{indent}}}"]
        if isinstance(statement, ir.ForRange):
            return self.for_range(statement, depth)
        keyword = {ir.Break: "break", ir.Continue: "continue", ir.Return: "return"}
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
        return text[1:-1] if isinstance(expression, ir.Binary) and text[0] == "(" else text

    def for_range(self, statement: ir.ForRange, depth: int) -> list[str]:
        indent = "    " * depth
        counter = f"lnb_i{self.loop_counter}"
        stop = f"lnb_stop{self.loop_counter}"
        step = f"lnb_step{self.loop_counter}"
        self.loop_counter += 1
        loop_type = self.type_name(statement.start.type)
        lines = [
            f"{indent}{{",
            f"{indent}    const {loop_type} {stop} = {self.expression(statement.stop)};",
        ]
        if isinstance(statement.step, ir.Constant):
            step_value = self.expression(statement.step)
            condition = f"{counter} {'<' if statement.step.value > 0 else '>'} {stop}"
        else:
            lines.append(
                f"{indent}    const {loop_type} {step} = {self.expression(statement.step)};"
            )
            step_value = step
            condition = f"({step} > 0 ? {counter} < {stop} : {counter} > {stop})"
        header = f"{loop_type} {counter} = {self.expression(statement.start)}"
        lines.append(f"{indent}    for ({header}; {condition}; {counter} += {step_value}) {{")
        lines.append(f"{indent}        v_{c_identifier(statement.variable)} = {counter};")
        lines += self.statements(statement.body, depth + 2)
        lines += [f"{indent}    }}", f"{indent}}}"]
        return lines

    def expression(self, expression: ir.Expression) -> str:
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
        return f"v_{c_identifier(expression.name)}"

    def expression_dispatchvalue(self, expression: ir.DispatchValue) -> str:
        return "dispatch_id" if expression.which == "id" else "dispatch_size"

    def expression_member(self, expression: ir.Member) -> str:
        return f"{self.expression(expression.operand)}.{expression.field}"

    def expression_bufferread(self, expression: ir.BufferRead) -> str:
        buffer = c_identifier(self.kernel.buffers[expression.buffer].name)
        return f"b_{buffer}[{self.expression(expression.index)}]"

    def expression_unary(self, expression: ir.Unary) -> str:
        return f"({UNARY_SYMBOLS[expression.operator]}{self.expression(expression.operand)})"

    def expression_binary(self, expression: ir.Binary) -> str:
        left, right = self.expression(expression.left), self.expression(expression.right)
        operator = expression.operator
        if operator in ARITHMETIC_SYMBOLS:
            return f"({left} {ARITHMETIC_SYMBOLS[operator]} {right})"
        if operator == "pow":
            return self.call("pow", expression.type, [left, right])
        return f"{self.use_helper(operator, expression.type)}({left}, {right})"

    def expression_select(self, expression: ir.Select) -> str:
        condition = self.expression(expression.condition)
        if_true, if_false = (
            self.expression(expression.if_true),
            self.expression(expression.if_false),
        )
        return f"({condition} ? {if_true} : {if_false})"

    def expression_cast(self, expression: ir.Cast) -> str:
        return f"(({self.type_name(expression.type)}){self.expression(expression.operand)})"

    def expression_call(self, expression: ir.Call) -> str:
        arguments = [self.expression(argument) for argument in expression.arguments]
        return self.call(expression.function, expression.type, arguments)

    def call(self, function: str, result_type: ScalarType, arguments: list[str]) -> str:
        """A math builtin; float functions map to ``math.h``, the rest to helpers."""
        if function == "clamp":
            low = f"{self.use_helper('max', result_type)}({arguments[0]}, {arguments[1]})"
            return f"{self.use_helper('min', result_type)}({low}, {arguments[2]})"
        if function in HELPER_OPERATIONS:
            if function == "abs" and not result_type.is_signed and not result_type.is_float:
                return arguments[0]
            return f"{self.use_helper(function, result_type)}({', '.join(arguments)})"
        if function == "pow" and result_type.is_integer:
            self.helpers[("pow", result_type)] = None
            return f"lnb_pow_{result_type.value}({', '.join(arguments)})"
        self.uses_math = True
        suffix = "f" if result_type is ScalarType.FLOAT32 else ""
        return f"{function}{suffix}({', '.join(arguments)})"
