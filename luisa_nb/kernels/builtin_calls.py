"""Typing of calls: buffer reads and writes, and the builtin functions."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.captures import Unresolved, builtin_name
from luisa_nb.kernels.expressions import is_weak
from luisa_nb.kernels.type_system import INT3, ScalarType, assignable, fits

if TYPE_CHECKING:
    from luisa_nb.kernels.typer import KernelTyper

FLOAT_FUNCTIONS = ("sqrt", "sin", "cos", "tan", "exp", "log", "floor", "ceil")
ARITIES = {
    **dict.fromkeys(FLOAT_FUNCTIONS, (1, 1)),
    "math_floor": (1, 1),
    "math_ceil": (1, 1),
    "abs": (1, 1),
    "int": (1, 1),
    "float": (1, 1),
    "bool": (1, 1),
    "pow": (2, 2),
    "power": (2, 2),
    "clamp": (3, 3),
    "min": (2, 64),
    "max": (2, 64),
    "dispatch_id": (0, 0),
    "dispatch_size": (0, 0),
}
CAST_TYPES = {"int": ScalarType.INT32, "float": ScalarType.FLOAT32}
UNKNOWN_CALL_HINT = (
    "kernels can call luisa_nb builtins (dispatch_id, sqrt, clamp, ...), math functions, "
    "abs/min/max/pow/int/float/bool, and range() in for loops"
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
            label = ast.unparse(function)
            kind = type(value).__name__
            self.fail(function, f"call to unknown function {label!r} ({kind}); {UNKNOWN_CALL_HINT}")
        return name

    def visit_Call(self: KernelTyper, node: ast.Call) -> ir.Expression:
        self.check_buffer_call(node)
        if isinstance(node.func, ast.Attribute) and self.is_buffer(node.func.value):
            return self.buffer_method(node, statement=False)
        name = self.callee(node)
        label = ast.unparse(node.func)
        if name in ("print", "breakpoint"):
            self.fail(node, f"{label}() is a statement; it returns no value")
        if name == "range":
            self.fail(node, "range() can only be used as the iterable of a for loop")
        if node.keywords:
            self.fail(node.keywords[0], f"{label}() takes no keyword arguments in kernels")
        low, high = ARITIES[name]
        if not low <= len(node.args) <= high:
            expected = str(low) if low == high else f"{low} or more"
            self.fail(node, f"{label}() takes {expected} arguments, got {len(node.args)}")
        if name in ("dispatch_id", "dispatch_size"):
            return ir.DispatchValue(INT3, "id" if name == "dispatch_id" else "size")
        arguments = [self.scalar(self.visit(argument), argument) for argument in node.args]
        return self.builtin(name, arguments, node)

    def builtin(
        self: KernelTyper, name: str, arguments: list[ir.Expression], node: ast.Call
    ) -> ir.Expression:
        """Type a call of a math builtin or cast on already-typed arguments."""
        if name == "bool":
            return self.to_bool(arguments[0], node)
        if name in CAST_TYPES:
            target = CAST_TYPES[name]
            if is_weak(arguments[0]):
                value = float(arguments[0].value) if target.is_float else int(arguments[0].value)
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
        float_result = name in FLOAT_FUNCTIONS or name in ("pow", "math_floor", "math_ceil")
        if float_result and not common.is_float:
            common = ScalarType.FLOAT32
        converted = tuple(self.convert(argument, common, node) for argument in arguments)
        if name in ("math_floor", "math_ceil"):
            rounded = ir.Call(common, name.removeprefix("math_"), converted)
            return ir.Cast(ScalarType.INT32, rounded)
        if name not in ("min", "max"):
            return ir.Call(common, name, converted)
        result = converted[0]
        for argument in converted[1:]:
            result = ir.Call(common, name, (result, argument))
        return result

    def buffer_method(
        self: KernelTyper, node: ast.Call, statement: bool
    ) -> ir.Expression | ir.BufferWrite:
        """``buf.read(i)`` (an expression) or ``buf.write(i, value)`` (a statement)."""
        method = node.func.attr
        target = node.func.value
        slot = self.buffer_slot(target)
        buffer_name = self.buffers[slot].name
        element = self.buffers[slot].element
        if node.keywords:
            self.fail(node.keywords[0], f"{buffer_name}.{method}() takes no keyword arguments")
        if method not in ("read", "write"):
            self.fail(node.func, f"buffers have only .read(i) and .write(i, value), not .{method}")
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
        value = self.scalar(self.visit(node.args[1]), node.args[1])
        if not assignable(element, value.type, is_weak(value)):
            self.fail(
                node.args[1],
                f"cannot write a {value.type.value} value into {buffer_name!r}, a buffer of "
                f"{element.value}; convert it explicitly (int(...), float(...))",
            )
        value = self.convert(value, element, node.args[1])
        return ir.BufferWrite(slot, index, value, node.lineno)

    def is_capture_chain(self: KernelTyper, node: ast.expr) -> bool:
        """Whether ``node`` is a name (or attribute chain) that is not a kernel local."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id not in self.local_names

    def resolve(self: KernelTyper, node: ast.expr) -> object:
        try:
            return self.captures.resolve(node)
        except Unresolved as error:
            self.fail(node, str(error))
