"""Typing of a kernel for one tuple of argument types: AST -> :class:`ir.KernelIR`.

One visitor method per statement construct; expressions and calls live in the
``expressions`` and ``builtin_calls`` mixins. Anything without a visitor is rejected.
"""

from __future__ import annotations

import ast
import math
from collections import Counter
from typing import Any

from luisa_nb.errors import KernelArgumentError
from luisa_nb.kernels import ir, type_system
from luisa_nb.kernels.frontend.captures import CaptureResolver, Unresolved, builtin_name
from luisa_nb.kernels.frontend.source import KernelSource
from luisa_nb.kernels.lang.builtins import DEFAULT_BLOCK_SIZE
from luisa_nb.kernels.rules import PYTHON_RULES, KernelRules
from luisa_nb.kernels.type_system import (
    BindlessType,
    BufferType,
    IndirectType,
    KernelType,
    ScalarType,
    article,
    assignable,
    is_aggregate_type,
    is_buffer_like,
    is_indirect_like,
)
from luisa_nb.kernels.typing.aggregates import AggregateTyping, TypingContext
from luisa_nb.kernels.typing.atomics import AtomicTyping
from luisa_nb.kernels.typing.autodiff import AutodiffTyping
from luisa_nb.kernels.typing.bindless import BindlessTyping
from luisa_nb.kernels.typing.builtin_calls import BuiltinCallTyping
from luisa_nb.kernels.typing.constant_conditions import ConstantConditions
from luisa_nb.kernels.typing.device_print import device_print
from luisa_nb.kernels.typing.element_loops import element_loop
from luisa_nb.kernels.typing.expressions import BINARY_OPERATORS, ExpressionTyping, is_weak
from luisa_nb.kernels.typing.images import ImageTyping
from luisa_nb.kernels.typing.indirect import IndirectTyping
from luisa_nb.kernels.typing.matrices import MatrixTyping
from luisa_nb.kernels.typing.rays import AccelTyping
from luisa_nb.kernels.typing.vectors import VectorTyping

MAX_BLOCK_THREADS = 1024  # luisa-python's limit for set_block_size


def buffer_slot_of(name: str, buffer_type: BufferType, capture: Any = None) -> ir.BufferSlot:
    """The slot of a buffer argument or captured buffer of ``buffer_type``; an indirect
    dispatch buffer is a buffer of uint32 words."""
    if isinstance(buffer_type.element, IndirectType):
        return ir.BufferSlot(name, ScalarType.UINT32, capture=capture, indirect=True)
    return ir.BufferSlot(name, buffer_type.element, capture=capture)


class KernelTyper(
    ExpressionTyping,
    VectorTyping,
    MatrixTyping,
    AutodiffTyping,
    AggregateTyping,
    AtomicTyping,
    ImageTyping,
    IndirectTyping,
    BindlessTyping,
    AccelTyping,
    BuiltinCallTyping,
    ast.NodeVisitor,
):
    """Builds the typed IR of one specialisation; ``target`` is "c" or "python".

    With ``context``, it types a callable called by the kernel that owns the context:
    buffer arguments are then :class:`ir.BufferArgument` naming the kernel's slots.
    ``rules`` are those of the function typed (a callable follows its own definition's).
    """

    def __init__(
        self,
        source: KernelSource,
        argument_types: tuple[Any, ...],
        captures: CaptureResolver,
        target: str,
        context: TypingContext | None = None,
        rules: KernelRules = PYTHON_RULES,
    ) -> None:
        self.source = source
        self.captures = captures
        self.target = target
        self.rules = rules
        self.is_callable = context is not None
        self.context = context or TypingContext()
        self.locals: dict[str, KernelType] = {}
        self.buffers: list[ir.BufferSlot] = self.context.buffers
        self.scalars: list[ir.ScalarSlot] = []
        self.arguments: list[tuple[str, str, int]] = []
        self.buffer_arguments: dict[str, int] = {}
        self.scalar_arguments: set[str] = set()
        self.captured_buffers: dict[int, int] = self.context.captured_buffers
        self.heaps = self.context.heaps
        self.captured_heaps: dict[int, int] = self.context.captured_heaps
        self.heap_sizes: dict[int, int] = self.context.heap_sizes
        self.heap_arguments: dict[str, int] = {}
        self.shared: list[str] = []  # locals that are the block's shared arrays
        self.block_size = DEFAULT_BLOCK_SIZE
        self.first_assignments: dict[str, int] = {}
        self.temporaries: list[str] = []
        self.statement_call: ast.Call | None = None
        self.return_type: Any = None
        self.returns_value: bool | None = None
        parameter_names = [argument.arg for argument in source.tree.args.args]
        for name, argument_type in zip(parameter_names, argument_types, strict=True):
            if isinstance(argument_type, ir.BufferArgument):
                self.buffer_arguments[name] = argument_type.slot
            elif self.is_callable:
                self.scalar_arguments.add(name)
                self.locals[name] = argument_type
            elif isinstance(argument_type, BindlessType):
                self.heap_arguments[name] = self.add_heap(name, argument_type)
                self.arguments.append((name, "bindless", self.heap_arguments[name]))
            elif isinstance(argument_type, BufferType):
                self.buffer_arguments[name] = len(self.buffers)
                self.arguments.append((name, "buffer", len(self.buffers)))
                self.buffers.append(buffer_slot_of(name, argument_type))
            else:
                self.scalar_arguments.add(name)
                self.arguments.append((name, "scalar", len(self.scalars)))
                self.scalars.append(ir.ScalarSlot(name, argument_type))
                self.locals[name] = argument_type
        stores = Counter(
            node.id
            for node in ast.walk(source.tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        )
        self.local_names = (
            set(stores)
            | self.scalar_arguments
            | set(self.buffer_arguments)
            | set(self.heap_arguments)
        )
        self.constants = ConstantConditions(source.tree, stores, self.local_names, captures, rules)

    def run(self) -> ir.KernelIR:
        """Type the whole body."""
        self.block_size = self.declared_block_size()
        with self.rules.applied():
            body = self.block(self.source.tree.body)
        scalar_names = {slot.name for slot in self.scalars}
        local_types = {name: t for name, t in self.locals.items() if name not in scalar_names}
        return ir.KernelIR(
            self.source.name,
            self.buffers,
            self.scalars,
            self.arguments,
            local_types,
            body,
            self.context.functions,
            self.heaps,
            self.block_size,
            tuple(self.shared),
            self.rules.name,
            self.kernel_id_slot,
            self.autodiff_blocks,
        )

    def run_function(self, definition: Any) -> ir.FunctionIR:
        """Type the body of a callable (its ``name`` is set by the caller)."""
        with self.rules.applied():
            body = self.block(self.source.tree.body)
        parameters = [
            (argument.arg, self.locals[argument.arg], is_aggregate_type(self.locals[argument.arg]))
            for argument in self.source.tree.args.args
            if argument.arg in self.scalar_arguments
        ]
        local_types = {
            name: t for name, t in self.locals.items() if name not in self.scalar_arguments
        }
        return ir.FunctionIR(
            "", parameters, self.return_type, local_types, body, definition, self.autodiff_blocks
        )

    def block(self, statements: list[ast.stmt]) -> tuple[ir.Statement, ...]:
        typed: list[ir.Statement] = []
        for statement in statements:
            typed.extend(self.visit(statement))
        return tuple(typed)

    def generic_visit(self, node: ast.AST) -> Any:
        self.fail(node, f"unsupported construct: {type(node).__name__}")

    def argument_mismatch(self, name: str, node: ast.AST) -> KernelArgumentError:
        """The argument given for parameter ``name`` does not suit how the kernel uses it."""
        if name in self.buffer_arguments:
            element = self.buffers[self.buffer_arguments[name]].element
            usage, given = "a scalar value", f"a buffer of {element}"
        else:
            scalar_type = next(s.type for s in self.scalars if s.name == name)
            usage, given = "a buffer", f"{article(scalar_type)} scalar"
        return KernelArgumentError(
            f"kernel {self.source.name!r}: parameter {name!r} is used as {usage} at line "
            f"{node.lineno} but the argument is {given}"
        )

    def is_buffer(self, node: ast.expr) -> bool:
        """Whether ``node`` names a buffer argument or a captured buffer."""
        if not isinstance(node, ast.Name):
            return False
        if node.id in self.buffer_arguments:
            return True
        if node.id in self.local_names:
            return False
        value = self.resolve(node)
        return is_buffer_like(value) or is_indirect_like(value)

    def check_buffer_call(self, node: ast.Call) -> None:
        """``p.read(...)``/``p.write(...)`` on a scalar parameter is an argument error."""
        function = node.func
        if (
            isinstance(function, ast.Attribute)
            and function.attr in ("read", "write")
            and isinstance(function.value, ast.Name)
            and function.value.id in self.scalar_arguments
        ):
            raise self.argument_mismatch(function.value.id, node)

    def buffer_slot(self, node: ast.Name) -> int:
        """The slot of a buffer argument, or of a captured buffer (added on first use)."""
        if node.id in self.buffer_arguments:
            return self.buffer_arguments[node.id]
        value = self.resolve(node)
        if id(value) not in self.captured_buffers:
            try:
                buffer_type = type_system.argument_type(value)
            except KernelArgumentError as error:
                self.fail(node, f"captured buffer {node.id!r}: {error}")
            self.captured_buffers[id(value)] = len(self.buffers)
            self.buffers.append(buffer_slot_of(node.id, buffer_type, capture=value))
        return self.captured_buffers[id(value)]

    def assign(self, name: str, value: ir.Expression, node: ast.AST) -> ir.Assign:
        """``name = value``: the first assignment fixes the local's type."""
        if name in self.buffer_arguments:
            self.fail(node, f"cannot assign to buffer parameter {name!r}")
        if isinstance(value, ir.SharedArray) or name in self.shared:
            self.shared_array(name, value, node)
        if name not in self.locals:
            self.locals[name] = value.type
            self.first_assignments[name] = node.lineno
            return ir.Assign(name, value)
        target = self.locals[name]
        compatible = (
            assignable(target, value.type, is_weak(value))
            if isinstance(target, ScalarType) and isinstance(value.type, ScalarType)
            else target == value.type
        )
        if not compatible:
            where = self.first_assignments.get(name)
            origin = f"first assigned at line {where}" if where else "a parameter"
            self.fail(
                node,
                f"cannot assign {article(_type_name(value.type))} value to {name!r}, which is "
                f"{_type_name(target)} ({origin}); convert explicitly or use a new variable",
            )
        return ir.Assign(name, self.convert(value, target, node))

    def visit_Expr(self, node: ast.Expr) -> list[ir.Statement]:
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return []  # a docstring or string used as a comment
        if isinstance(value, ast.Call):
            self.statement_call = value
            self.check_buffer_call(value)
            if isinstance(value.func, ast.Attribute) and self.is_heap(value.func.value):
                return [ir.Evaluate(self.heap_method(value))]
            if isinstance(value.func, ast.Attribute) and self.is_buffer(value.func.value):
                result = self.buffer_method(value, statement=True)
                if isinstance(result, list):
                    return result
                return [result if isinstance(result, ir.Statement) else ir.Evaluate(result)]
            if self.is_capture_chain(value.func):
                name = builtin_name(self.resolve(value.func))
                if name in ("print", "breakpoint"):
                    return [self.debug_statement(value)]
                if name == "set_block_size":
                    self.check_block_size(value, node)
                    return []
                if name == "sync_block":
                    return [self.barrier(value, node)]
        return [ir.Evaluate(self.visit(value))]

    def check_block_size(self, call: ast.Call, statement: ast.Expr) -> tuple[int, int, int]:
        """``set_block_size(x, y, z)``: luisa-python's rules (constant positive integers, at
        most 1024 threads in all); no IR: the block size is the kernel's (see ``run``)."""
        if call.keywords or len(call.args) != 3:
            self.fail(call, "set_block_size() takes three positional arguments: x, y, z")
        sizes: list[int] = []
        for argument in call.args:
            size = self.constants.constant(argument, statement)
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                self.visit(argument)
                self.fail(
                    argument,
                    "set_block_size() needs constant positive integers (literals, captured "
                    "ints or constant locals), e.g. set_block_size(256, 1, 1)",
                )
            sizes.append(size)
        if math.prod(sizes) > MAX_BLOCK_THREADS:
            self.fail(
                call,
                f"set_block_size({', '.join(map(str, sizes))}) asks for {math.prod(sizes)} "
                f"threads per block; make x * y * z at most {MAX_BLOCK_THREADS}",
            )
        return (sizes[0], sizes[1], sizes[2])

    def declared_block_size(self) -> tuple[int, int, int]:
        """The block size of a valid top-level ``set_block_size(x, y, z)``, found before
        typing the body (``thread_id()`` needs it); else luisa-python's default. Invalid
        calls are reported when the body is typed."""
        for statement in self.source.tree.body:
            call = statement.value if isinstance(statement, ast.Expr) else None
            if not (
                isinstance(call, ast.Call)
                and self.is_capture_chain(call.func)
                and len(call.args) == 3
            ):
                continue
            try:
                if builtin_name(self.captures.resolve(call.func)) != "set_block_size":
                    continue
            except Unresolved:
                continue
            sizes = [self.constants.constant(argument, statement) for argument in call.args]
            if all(type(size) is int and size >= 1 for size in sizes):
                return (sizes[0], sizes[1], sizes[2])
        return DEFAULT_BLOCK_SIZE

    def barrier(self, call: ast.Call, statement: ast.Expr) -> ir.Barrier:
        """``sync_block()``: a statement anywhere in a kernel's body."""
        if call.args or call.keywords:
            self.fail(call, "sync_block() takes no arguments")
        if self.is_callable:
            self.fail(
                call,
                "luisa_nb supports sync_block() in a kernel's body, not in callables: its C "
                "backend pauses a thread at a barrier and resumes it once its block got "
                "there. Move the barrier into the kernel (e.g. call the callable before it "
                "and after it)",
            )
        return ir.Barrier(statement.lineno)

    def shared_array(self, name: str, value: ir.Expression, node: ast.AST) -> None:
        """``name = Tile()`` for a ``SharedArrayType``: once, in the kernel's body."""
        if self.is_callable:
            self.fail(node, "shared arrays are made in the kernel's body, not in callables")
        if name in self.shared or name in self.locals:
            self.fail(node, f"{name!r} names a shared array; assign its elements instead")
        if not isinstance(value, ir.SharedArray):
            self.fail(node, "a shared array can only be made as `name = SharedType()`")
        self.shared.append(name)

    def debug_statement(self, node: ast.Call) -> ir.Print:
        """``print(...)``/``breakpoint()``: in Python mode typed for access analysis (a
        luisa-python kernel's print is a device print there too); elsewhere ``print`` is
        a device print (see ``lang.device_print``)."""
        name = ast.unparse(node.func)
        if name == "print" and (self.target != "python" or self.rules.name == "luisa"):
            return device_print(self, node)
        if self.target != "python":
            hint = 'define the kernel with mode="python" to debug with it'
            self.fail(node, f"{name}() only works in Python mode; {hint}")
        values: list[ir.Expression] = []
        for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
            if isinstance(argument, ast.JoinedStr):
                formatted = [v for v in argument.values if isinstance(v, ast.FormattedValue)]
                values.extend(self.visit(part.value) for part in formatted)
            elif not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
                values.append(self.visit(argument))
        return ir.Print(tuple(values))

    def visit_Assign(self, node: ast.Assign) -> list[ir.Statement]:
        if isinstance(node.targets[0], ast.Tuple):
            return self.unpacking(node.targets[0], node.value)
        value = self.visit(node.value)
        first, *others = node.targets
        if others and not isinstance(first, ast.Name):
            temporary = self.temporary(value.type)
            statements: list[ir.Statement] = [ir.Assign(temporary, value)]
            value = ir.Local(value.type, temporary)
            return statements + [s for t in node.targets for s in self.assign_target(t, value)]
        statements = self.assign_target(first, value)
        for target in others:
            statements += self.assign_target(target, ir.Local(self.locals[first.id], first.id))
        return statements

    def assign_target(self, target: ast.expr, value: ir.Expression) -> list[ir.Statement]:
        """``target = value`` for a name, a component, a swizzle or an element."""
        if isinstance(target, ast.Name):
            return [self.assign(target.id, value, target)]
        return self.store(target, value, target)

    def unpacking(self, targets: ast.Tuple, values: ast.Tuple) -> list[ir.Statement]:
        """``a, b = x, y``: every value is computed before any target is assigned."""
        typed = [self.visit(value) for value in values.elts]
        assigned = {n.id for n in ast.walk(targets) if isinstance(n, ast.Name)}
        read = {
            node.id
            for value in values.elts
            for node in ast.walk(value)
            if isinstance(node, ast.Name)
        }
        statements: list[ir.Statement] = []
        if assigned & read:
            for index, value in enumerate(typed):
                temporary = self.temporary(value.type)
                statements.append(ir.Assign(temporary, value))
                typed[index] = ir.Local(value.type, temporary)
        for target, value in zip(targets.elts, typed, strict=True):
            statements += self.assign_target(target, value)
        return statements

    def visit_AugAssign(self, node: ast.AugAssign) -> list[ir.Statement]:
        target = node.target
        if isinstance(target, ast.Name):
            current = self.visit_Name(ast.Name(target.id, ast.Load(), **_position(target)))
        else:
            current = self.place(target)
        operator, symbol = BINARY_OPERATORS[type(node.op)]
        value = self.arithmetic(operator, symbol, current, self.visit(node.value), node)
        return (
            self.assign_target(target, value)
            if not isinstance(target, ast.Name)
            else [self.assign(target.id, value, node)]
        )

    def visit_If(self, node: ast.If) -> list[ir.Statement]:
        """A constant condition keeps only the live branch, untyped the other (as
        luisa-python does); see ``typing.constant_conditions``."""
        truth = self.constants.truth(node)
        if truth is not None:
            return list(self.block(node.body if truth else node.orelse))
        condition = self.to_bool(self.visit(node.test), node.test)
        return [ir.If(condition, self.block(node.body), self.block(node.orelse))]

    def visit_While(self, node: ast.While) -> list[ir.Statement]:
        """A constantly false loop is dropped, its body untyped."""
        truth = self.constants.truth(node)
        if truth is False:
            return []
        if truth:
            condition: ir.Expression = ir.Constant(ScalarType.BOOL, True)
        else:
            condition = self.to_bool(self.visit(node.test), node.test)
        return [ir.While(condition, self.block(node.body))]

    def visit_For(self, node: ast.For) -> list[ir.Statement]:
        call = node.iter
        if not isinstance(call, ast.Call) or (
            self.is_capture_chain(call.func) and self.callee(call) != "range"
        ):
            return element_loop(self, node)
        if not self.is_capture_chain(call.func) or self.callee(call) != "range":
            self.fail(call, "for loops must iterate over range(...)")
        if call.keywords or not 1 <= len(call.args) <= 3:
            self.fail(call, "range() takes 1 to 3 positional arguments")
        bounds = [self.scalar(self.visit(argument), argument) for argument in call.args]
        for argument, bound in zip(call.args, bounds, strict=True):
            if not bound.type.is_integer:
                self.fail(argument, f"range() needs integer arguments, got {bound.type.value}")
        loop_type = self.common_type(bounds, call, "range() arguments")
        bounds = [self.convert(bound, loop_type, call) for bound in bounds]
        one = ir.Constant(loop_type, 1)
        start, stop, step = {
            1: (ir.Constant(loop_type, 0), bounds[0], one),
            2: (*bounds, one),
            3: tuple(bounds),
        }[len(bounds)]
        if isinstance(step, ir.Constant) and step.value == 0:
            self.fail(call.args[2], "range() step must not be zero")
        variable = node.target.id
        self.assign(variable, ir.Local(loop_type, variable), node.target)
        body = self.block(node.body)
        return [ir.ForRange(variable, start, stop, step, body, self.rules.loop_end_values)]

    def visit_Break(self, node: ast.Break) -> list[ir.Statement]:
        return [ir.Break()]

    def visit_Continue(self, node: ast.Continue) -> list[ir.Statement]:
        return [ir.Continue()]

    def visit_Return(self, node: ast.Return) -> list[ir.Statement]:
        if node.value is None:
            if self.returns_value:
                self.fail(node, "this callable returns a value elsewhere; return one here too")
            self.returns_value = False
            return [ir.Return()]
        if not self.is_callable:
            self.fail(
                node.value,
                "kernels return nothing; write results with buf.write(i, v) (a callable, "
                "called from another kernel, may return a value)",
            )
        if self.returns_value is False:
            self.fail(node, "this callable returns nothing elsewhere; return no value here too")
        value = self.visit(node.value)
        if self.return_type is None:
            self.returns_value = True
            self.return_type = value.type
            if is_weak(value):
                value = self.convert(value, value.type, node.value)
            return [ir.Return(value)]
        target = self.return_type
        if value.type != target and not (
            isinstance(target, ScalarType)
            and isinstance(value.type, ScalarType)
            and assignable(target, value.type, is_weak(value))
        ):
            self.fail(
                node.value,
                f"this callable returns {_type_name(target)} at an earlier return, here "
                f"{_type_name(value.type)}; a callable returns one type (convert explicitly)",
            )
        return [ir.Return(self.convert(value, target, node.value))]

    def visit_Pass(self, node: ast.Pass) -> list[ir.Statement]:
        return []


def _type_name(kernel_type: KernelType) -> str:
    return kernel_type.value if isinstance(kernel_type, ScalarType) else str(kernel_type)


def _position(node: ast.AST) -> dict[str, int]:
    return {"lineno": node.lineno, "col_offset": node.col_offset}
