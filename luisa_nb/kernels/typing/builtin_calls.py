"""Typing of calls: buffer reads and writes, and the builtin functions."""

from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.frontend.captures import Unresolved, builtin_name
from luisa_nb.kernels.frontend.portability import warn_not_in_luisa
from luisa_nb.kernels.lang.matrices import MATRIX_CLASSES
from luisa_nb.kernels.lang.scalar_names import SCALAR_NAMES
from luisa_nb.kernels.lang.vectors import VECTOR_CLASSES
from luisa_nb.kernels.rules import wrap_integer
from luisa_nb.kernels.type_system import (
    INT3,
    UINT3,
    ImageType,
    MatrixType,
    ScalarType,
    VectorType,
    article,
    assignable,
    fits,
    is_aggregate_type,
    is_composite,
)
from luisa_nb.kernels.typing.atomics import ATOMIC_OPERATIONS
from luisa_nb.kernels.typing.element_loops import element_count
from luisa_nb.kernels.typing.expressions import BUFFER_METHODS, is_weak
from luisa_nb.kernels.typing.matrices import MATRIX_FUNCTIONS

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

FLOAT_FUNCTIONS = (
    "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "exp", "exp2", "exp10", "log", "log2", "log10", "rsqrt", "floor",
    "ceil", "trunc", "round", "fract", "sign", "radians", "degrees", "saturate",
    "pow", "atan2", "copysign", "fmod", "mod", "step", "lerp", "smoothstep", "fma",
)  # fmt: skip
TEST_FUNCTIONS = ("isnan", "isinf")
NUMERIC_FUNCTIONS = ("abs", "min", "max", "clamp")
VECTOR_FUNCTIONS = {  # name: (operand lengths allowed, result is a scalar)
    "dot": ((2, 3, 4), True),
    "length": ((2, 3, 4), True),
    "length_squared": ((2, 3, 4), True),
    "distance": ((2, 3, 4), True),
    "distance_squared": ((2, 3, 4), True),
    "normalize": ((2, 3, 4), False),
    "cross": ((3,), False),
    "reflect": ((3,), False),
    "faceforward": ((3,), False),
}
THREE = ("clamp", "lerp", "smoothstep", "fma", "faceforward", "select")
TWO = ("pow", "atan2", "copysign", "fmod", "mod", "step", "dot", "distance")
TWO += ("distance_squared", "cross", "reflect")
CONSTRUCTORS: dict[str, VectorType | MatrixType] = {
    **{cls.__name__: cls.__lnb_type__ for cls in (*VECTOR_CLASSES, *MATRIX_CLASSES)},
    **{f"make_{cls.__name__}": cls.__lnb_type__ for cls in (*VECTOR_CLASSES, *MATRIX_CLASSES)},
}
DISPATCH_VALUES = {
    "dispatch_id": "id",
    "dispatch_size": "size",
    "thread_id": "thread",
    "block_id": "block",
}
ARITIES = {
    "len": (1, 1),
    **dict.fromkeys((*FLOAT_FUNCTIONS, *TEST_FUNCTIONS, *VECTOR_FUNCTIONS), (1, 1)),
    **dict.fromkeys(MATRIX_FUNCTIONS, (1, 1)),
    **dict.fromkeys(TWO, (2, 2)),
    **dict.fromkeys(THREE, (3, 3)),
    **dict.fromkeys(CONSTRUCTORS, (0, 16)),
    "math_floor": (1, 1),
    "math_ceil": (1, 1),
    "abs": (1, 1),
    "any": (1, 1),
    "all": (1, 1),
    "int": (0, 1),
    "uint": (0, 1),
    "long": (0, 1),
    "ulong": (0, 1),
    "float": (0, 1),
    "bool": (0, 1),
    "power": (2, 2),
    "min": (2, 64),
    "max": (2, 64),
    "dispatch_id": (0, 0),
    "dispatch_size": (0, 0),
    "thread_id": (0, 0),
    "block_id": (0, 0),
    "kernel_id": (0, 0),
}
SCALE_FACTORS = {"radians": math.pi / 180, "degrees": 180 / math.pi}
CAST_TYPES = {"int": ScalarType.INT32, "float": ScalarType.FLOAT32}
WRAPPING_CASTS = {name.__name__: name.kernel_type for name in SCALAR_NAMES}
CAST_TYPES.update(WRAPPING_CASTS)
UNKNOWN_CALL_HINT = (
    "kernels can call luisa_nb builtins (dispatch_id, sqrt, clamp, float3, length, ...), "
    "math functions, abs/min/max/pow/int/float/bool, and range() in for loops"
)


def warn_unimported_type(typer: KernelTyper, node: ast.expr) -> None:
    """A type name (``float2``, ``float3x3`` ...) no import defines: luisa-python 0.3.7
    finds its functions by name, but not its types."""
    if isinstance(node, ast.Name) and node.id in typer.captures.unbound_names:
        warn_not_in_luisa(
            f"{node.id} in a kernel without an import",
            typer.source.filename,
            node.lineno,
            'add `from luisa.mathtypes import *` (real luisa-python: "undeclared '
            f"identifier '{node.id}'\")",
        )


class BuiltinCallTyping:
    """Mixin of :class:`KernelTyper` that types calls."""

    def callee(self: KernelTyper, node: ast.Call) -> str:
        """The kernel-language name of the function ``node`` calls."""
        function = node.func
        if isinstance(function, ast.Name) and function.id in self.local_names:
            self.fail(function, f"{function.id!r} is a local variable, not a function")
        if not self.is_capture_chain(function):
            self.fail(function, f"call to an unknown function; {UNKNOWN_CALL_HINT}")
        value = self.resolve(function)
        name = builtin_name(value)
        if name is None:
            self.reject_unsupported(value, ast.unparse(function), function)
            label = ast.unparse(function)
            kind = type(value).__name__
            self.fail(function, f"call to unknown function {label!r} ({kind}); {UNKNOWN_CALL_HINT}")
        return name

    def visit_Call(self: KernelTyper, node: ast.Call) -> ir.Expression:
        self.check_buffer_call(node)
        if isinstance(node.func, ast.Attribute) and self.is_heap(node.func.value):
            return self.heap_method(node)
        if isinstance(node.func, ast.Attribute) and self.is_buffer(node.func.value):
            return self.buffer_method(node, statement=False)
        label = ast.unparse(node.func)
        special = self.special_call(node)
        if special is not None:
            if special.type is None and node is not self.statement_call:
                self.fail(node, f"{label}() returns nothing; call it as a statement")
            return special
        name = self.callee(node)
        if name in ("print", "breakpoint", "set_block_size", "sync_block"):
            self.fail(node, f"{label}() is a statement; it returns no value")
        if name == "range":
            self.fail(node, "range() can only be used as the iterable of a for loop")
        if node.keywords:
            self.fail(node.keywords[0], f"{label}() takes no keyword arguments in kernels")
        low, high = ARITIES[name]
        if not low <= len(node.args) <= high:
            expected = str(low) if low == high else f"{low} or more"
            self.fail(node, f"{label}() takes {expected} arguments, got {len(node.args)}")
        if name == "len":  # of an array, vector or matrix: a constant, as in luisa-python
            if self.is_buffer(node.args[0]):
                self.fail(node.args[0], "len() takes an array, a vector or a matrix, not a buffer")
            count = element_count(self.visit(node.args[0]).type)
            if count is None:
                self.fail(node.args[0], "len() takes an array, a vector or a matrix")
            return ir.Constant(ScalarType.INT32, count)
        if name in DISPATCH_VALUES:
            kind = UINT3 if self.rules.luisa_types else INT3  # luisa-python's: uint3
            return ir.DispatchValue(kind, DISPATCH_VALUES[name])
        if name == "kernel_id":
            return self.kernel_id_value(node)
        arguments = [self.visit(argument) for argument in node.args]
        if name in CONSTRUCTORS:
            target = CONSTRUCTORS[name]
            if isinstance(target, MatrixType):
                return self.construct_matrix(target, arguments, node)
            return self.construct(target, arguments, node)
        if name in MATRIX_FUNCTIONS:
            return self.matrix_builtin(name, arguments, node)
        composite = [a for a in arguments if is_composite(a.type)]
        if composite and getattr(self.resolve(node.func), "__module__", None) == "math":
            self.fail(node, f"{label}() takes scalars; call luisa_nb's {name}() for vectors")
        if name in VECTOR_FUNCTIONS or name in ("any", "all", "select"):
            return self.vector_builtin(name, arguments, node)
        if composite:
            return self.elementwise_builtin(name, arguments, node)
        for argument, argument_node in zip(arguments, node.args, strict=True):
            self.scalar(argument, argument_node)
        return self.builtin(name, arguments, node)

    def builtin(
        self: KernelTyper, name: str, arguments: list[ir.Expression], node: ast.Call
    ) -> ir.Expression:
        """Type a call of a math builtin or cast on already-typed arguments; a cast of
        nothing (``uint()``, ``float()``) is zero, as in Python."""
        if not arguments:
            target = CAST_TYPES.get(name, ScalarType.BOOL)
            zero = 0.0 if target.is_float else 0 if target.is_integer else False
            return ir.Constant(target, zero)
        if name == "bool":
            return self.to_bool(arguments[0], node)
        if name in CAST_TYPES:
            target = CAST_TYPES[name]
            if is_weak(arguments[0]):
                value = float(arguments[0].value) if target.is_float else int(arguments[0].value)
                if name in WRAPPING_CASTS and isinstance(arguments[0].value, int):
                    value = wrap_integer(value, target)  # uint(-1), as C casts (luisa.types)
                if not fits(value, target):
                    self.fail(node, f"{name}({arguments[0].value!r}) does not fit {target.value}")
                return ir.Constant(target, value)
            return self.convert(arguments[0], target, node)
        if name == "power":
            return self.arithmetic("pow", "**", arguments[0], arguments[1], node)
        what = f"{ast.unparse(node.func)}() of {', '.join(a.type.value for a in arguments)}"
        common = self.common_type(arguments, node, what)
        if common is ScalarType.BOOL:
            self.fail(node, f"{what}: bool arguments are not numbers; convert with int(...)")
        float_result = name in (*FLOAT_FUNCTIONS, *TEST_FUNCTIONS, "math_floor", "math_ceil")
        if float_result and not common.is_float:
            common = ScalarType.FLOAT32
        converted = tuple(self.convert(argument, common, node) for argument in arguments)
        if name in ("math_floor", "math_ceil"):
            rounded = ir.Call(common, name.removeprefix("math_"), converted)
            return ir.Cast(ScalarType.INT32, rounded)
        return self.typed_call(name, common, converted)

    def typed_call(
        self: KernelTyper, name: str, operand: ScalarType | VectorType, arguments: tuple
    ) -> ir.Expression:
        """The call of ``name`` on ``arguments`` converted to ``operand`` (a scalar type or
        a vector type); a few builtins become simpler operations here."""
        element = operand.element if isinstance(operand, VectorType) else operand
        if name in SCALE_FACTORS:
            factor = self.broadcast_to(ir.Constant(element, SCALE_FACTORS[name]), operand)
            return ir.Binary(operand, "mul", arguments[0], factor)
        if name == "saturate":
            zero, one = (self.broadcast_to(ir.Constant(element, v), operand) for v in (0.0, 1.0))
            return ir.Call(operand, "clamp", (arguments[0], zero, one))
        if name in TEST_FUNCTIONS:
            result = (
                VectorType(ScalarType.BOOL, operand.length)
                if operand != element
                else (ScalarType.BOOL)
            )
            return ir.Call(result, name, arguments)
        if name not in ("min", "max"):
            return ir.Call(operand, name, arguments)
        result = arguments[0]
        for argument in arguments[1:]:
            result = ir.Call(operand, name, (result, argument))
        return result

    def broadcast_to(
        self: KernelTyper, scalar: ir.Constant, operand: ScalarType | VectorType
    ) -> ir.Expression:
        return ir.Construct(operand, (scalar,)) if isinstance(operand, VectorType) else scalar

    def elementwise_builtin(
        self: KernelTyper, name: str, arguments: list[ir.Expression], node: ast.Call
    ) -> ir.Expression:
        """A math builtin with a vector argument: component-wise, scalars broadcast."""
        label = ast.unparse(node.func)
        if name not in (*FLOAT_FUNCTIONS, *TEST_FUNCTIONS, *NUMERIC_FUNCTIONS, "power"):
            self.fail(node, f"{label}() takes scalars")
        if name == "power":
            return self.arithmetic("pow", "**", arguments[0], arguments[1], node)
        if len(arguments) == 1:
            operand = arguments[0].type
            if isinstance(operand, VectorType) is False:
                self.fail(node, f"{label}() takes scalars and vectors, got {operand}")
        else:
            operand, _, _ = self.elementwise("select", arguments, node)
        if operand.element is ScalarType.BOOL:
            self.fail(node, f"{label}() takes numbers, got {operand}")
        if name not in NUMERIC_FUNCTIONS:
            operand = VectorType(ScalarType.FLOAT32, operand.length)
        converted = tuple(self.broadcast(argument, operand, node) for argument in arguments)
        return self.typed_call(name, operand, converted)

    def vector_builtin(
        self: KernelTyper, name: str, arguments: list[ir.Expression], node: ast.Call
    ) -> ir.Expression:
        """Geometry (dot, length, cross, ...), any/all, and select(false, true, cond)."""
        label = ast.unparse(node.func)
        kinds = ", ".join(str(a.type) for a in arguments)
        if name in ("any", "all"):
            kind = arguments[0].type
            if not (isinstance(kind, VectorType) and kind.element is ScalarType.BOOL):
                self.fail(node, f"{label}() takes a bool vector, got {kind}")
            return ir.Call(ScalarType.BOOL, name, tuple(arguments))
        if name == "select":
            return self.select(arguments, node)
        lengths, scalar_result = VECTOR_FUNCTIONS[name]
        for argument, argument_node in zip(arguments, node.args, strict=True):
            kind = argument.type
            if not isinstance(kind, VectorType) or kind.length not in lengths:
                wanted = "float3" if lengths == (3,) else "float vectors"
                self.fail(argument_node, f"{label}() takes {wanted}, got {kinds}")
        if len(arguments) > 1:
            operand, _, _ = self.elementwise("select", arguments, node)
        else:
            operand = arguments[0].type
        if operand.element is not ScalarType.FLOAT32:
            self.fail(node, f"{label}() takes float vectors, got {kinds}")
        converted = tuple(self.broadcast(argument, operand, node) for argument in arguments)
        if name in ("distance", "distance_squared"):
            difference = ir.Binary(operand, "sub", *converted)
            function = name.replace("distance", "length")
            return ir.Call(ScalarType.FLOAT32, function, (difference,))
        return ir.Call(ScalarType.FLOAT32 if scalar_result else operand, name, converted)

    def select(self: KernelTyper, arguments: list[ir.Expression], node: ast.Call) -> ir.Expression:
        """``select(if_false, if_true, condition)``, luisa-python's order."""
        if_false, if_true, condition = arguments
        if not isinstance(condition.type, VectorType):
            if condition.type is not ScalarType.BOOL:
                self.fail(node.args[2], f"select()'s condition must be bool, got {condition.type}")
            if is_composite(if_true.type) or is_composite(if_false.type):
                return self.composite_select(condition, if_true, if_false, node)
            what = f"select() of {if_false.type} and {if_true.type}"
            common = self.common_type([if_false, if_true], node, what)
            return ir.Select(
                common,
                condition,
                self.convert(if_true, common, node),
                self.convert(if_false, common, node),
            )
        if condition.type.element is not ScalarType.BOOL:
            self.fail(node.args[2], f"select()'s condition must be bool, got {condition.type}")
        values = [if_false, if_true]
        if not any(isinstance(v.type, VectorType) for v in values):
            values = [self.broadcast_scalar(v, condition.type.length, node) for v in values]
        operand, _, values = self.elementwise("select", values, node)
        if operand.length != condition.type.length:
            self.fail(
                node, f"select() of {operand} values with {article(condition.type)} condition"
            )
        return ir.Call(operand, "select", (*values, condition))

    def broadcast_scalar(
        self: KernelTyper, value: ir.Expression, length: int, node: ast.AST
    ) -> ir.Expression:
        """A scalar as a vector of ``length`` copies (its type promoted as a literal's)."""
        if value.type is ScalarType.BOOL or (is_weak(value) and isinstance(value.value, bool)):
            element = ScalarType.BOOL
        elif is_weak(value):
            element = ScalarType.FLOAT32 if isinstance(value.value, float) else ScalarType.INT32
        else:
            element = value.type
        return self.broadcast(value, VectorType(element, length), node)

    def buffer_method(
        self: KernelTyper, node: ast.Call, statement: bool
    ) -> ir.Expression | ir.BufferWrite | ir.ImageWrite | list[ir.Statement]:
        """``buf.read(i)`` (an expression) or ``buf.write(i, value)`` (a statement), an
        atomic, an image method, or the stores of an indirect dispatch buffer's method."""
        method = node.func.attr
        target = node.func.value
        slot = self.buffer_slot(target)
        if self.buffers[slot].indirect:
            return self.indirect_method(node, slot, statement)
        buffer_name = self.buffers[slot].name
        element = self.buffers[slot].element
        if isinstance(element, ImageType):
            return self.image_method(node, slot, statement)
        if method.startswith("atomic_") and method[len("atomic_") :] in ATOMIC_OPERATIONS:
            return self.atomic_call(node, slot)
        if node.keywords:
            self.fail(node.keywords[0], f"{buffer_name}.{method}() takes no keyword arguments")
        if method not in ("read", "write"):
            self.fail(node.func, f"{BUFFER_METHODS}, not .{method}")
        expected = 1 if method == "read" else 2
        if len(node.args) != expected:
            usage = "read(i)" if method == "read" else "write(i, value)"
            count = len(node.args)
            self.fail(node, f"{buffer_name}.{usage} takes {expected} argument(s), got {count}")
        index = self.scalar(self.visit(node.args[0]), node.args[0])
        if not index.type.is_integer:
            self.fail(node.args[0], f"buffer index must be an integer, got {index.type.value}")
        if method == "read":
            return ir.BufferRead(element, slot, index, node.lineno)
        if not statement:
            self.fail(node, f"{buffer_name}.write(...) returns nothing; use it as a statement")
        value = self.visit(node.args[1])
        if is_aggregate_type(element) or is_aggregate_type(value.type):
            if element != value.type:
                self.fail(
                    node.args[1],
                    f"cannot write {article(value.type)} value into {buffer_name!r}, a buffer of "
                    f"{element}",
                )
            return ir.BufferWrite(slot, index, value, node.lineno)
        if is_composite(element) or is_composite(value.type):
            if not self.storable(element, value):
                self.fail(
                    node.args[1],
                    f"cannot write {article(value.type)} value into {buffer_name!r}, a buffer of "
                    f"{element}; convert it explicitly ({element}(...))",
                )
            value = value if value.type == element else ir.Cast(element, value)
            return ir.BufferWrite(slot, index, value, node.lineno)
        if not assignable(element, value.type, is_weak(value)):
            self.fail(
                node.args[1],
                f"cannot write {article(value.type.value)} value into {buffer_name!r}, a buffer of "
                f"{element.value}; convert it explicitly (int(...), float(...))",
            )
        value = self.convert(value, element, node.args[1])
        return ir.BufferWrite(slot, index, value, node.lineno)

    def is_capture_chain(self: KernelTyper, node: ast.expr) -> bool:
        """Whether ``node`` is a name that is not a kernel local, or an attribute chain on
        modules from one. A member of a captured kernel value (``sampler.next``, ``v.x``,
        ``s.a.z``) is not: it is typed as a field, swizzle or method of that value."""
        owners = []
        while isinstance(node, ast.Attribute):
            node = node.value
            owners.append(node)
        if not isinstance(node, ast.Name) or node.id in self.local_names:
            return False
        for owner in reversed(owners):  # the root name first
            try:
                value = self.captures.resolve(owner)
            except Unresolved:
                return True  # resolving the whole chain says what is wrong
            if getattr(type(value), "__lnb_type__", None) is not None:
                return False
        return True

    def resolve(self: KernelTyper, node: ast.expr) -> object:
        try:
            value = self.captures.resolve(node)
        except Unresolved as error:
            self.fail(node, str(error))
        if self.rules.luisa_types and isinstance(value, type):
            warn_unimported_type(self, node)
        return value
