"""The typed kernel IR: what the typer produces and every emitter consumes.

Expressions carry their type; every implicit conversion is an explicit :class:`Cast`,
so emitters never apply promotion rules themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from luisa_nb.kernels.type_system import KernelType, MatrixType, ScalarType, VectorType


@dataclass(frozen=True)
class Expression:
    type: KernelType


@dataclass(frozen=True)
class Constant(Expression):
    value: bool | int | float
    weak: bool = False  # a Python literal that may still adopt another operand's type


@dataclass(frozen=True)
class Local(Expression):
    name: str


@dataclass(frozen=True)
class DispatchValue(Expression):
    which: str  # "id", "size", or "thread" / "block" (the position in / of the block)


@dataclass(frozen=True)
class SharedArray(Expression):
    """``Tile()`` for a ``SharedArrayType``: the block's shared array of that type (only
    as the value of a first assignment in a kernel's body)."""


@dataclass(frozen=True)
class Member(Expression):
    """A vector component (``field`` is "x" ...) or a swizzle ("xy", "zyx", ...)."""

    operand: Expression
    field: str


@dataclass(frozen=True)
class Field(Expression):
    """A field of a struct."""

    operand: Expression
    name: str


@dataclass(frozen=True)
class Element(Expression):
    """``operand[index]``: a vector component, a matrix column or an array element."""

    operand: Expression
    index: Expression


@dataclass(frozen=True)
class Construct(Expression):
    """A vector or matrix from ``arguments`` of its element type: scalars and vectors
    whose components fill it in order; a single scalar fills a vector and is the
    diagonal of a matrix. A struct from one value per field, in order, or a zeroed
    struct or array from none."""

    arguments: tuple[Expression, ...]


@dataclass(frozen=True)
class BufferRead(Expression):
    buffer: int  # index into KernelIR.buffers
    index: Expression
    line: int = 0  # source line, for index-check reports


@dataclass(frozen=True)
class ImageRead(Expression):
    """``image.read(coord)`` of the image in buffer slot ``buffer`` (``coord``: int2 or
    uint2); the type is the image's texel type."""

    buffer: int
    coord: Expression
    line: int = 0


@dataclass(frozen=True)
class BindlessCall(Expression):
    """A method of bindless array ``heap`` (an index into ``KernelIR.heaps``):
    ``buffer_read(dtype, slot, index)``, ``buffer_size(slot)`` or a ``texture2d_*`` or
    ``texture3d_*`` method (``typing.bindless.BINDLESS_METHODS``). ``slots`` are
    the ``(bindless slot, buffer slot)`` pairs whose resource suits the call; any other
    slot fails the call's check."""

    heap: int
    method: str
    slots: tuple[tuple[int, int], ...]
    slot: Expression
    arguments: tuple[Expression, ...]
    line: int = 0
    sizes: tuple[int, ...] = ()  # buffer_size: the element count of each of ``slots``


@dataclass(frozen=True)
class AtomicCall(Expression):
    """``buffer.atomic_<operation>(index, *arguments)``: changes the element atomically
    and gives its old value (``operation`` is "exchange", "compare_exchange",
    "fetch_add", ...)."""

    buffer: int
    operation: str
    index: Expression
    arguments: tuple[Expression, ...]
    line: int = 0


@dataclass(frozen=True)
class Unary(Expression):
    operator: str  # "neg", "not", "invert"
    operand: Expression


@dataclass(frozen=True)
class Binary(Expression):
    # "add" ... "pow", "bitand" ..., "lt" ..., "and", "or"; "div" and "rem" are C's
    # truncating integer / and % (luisa-python's // and %, see ``rules``)
    operator: str
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Select(Expression):
    condition: Expression
    if_true: Expression
    if_false: Expression


@dataclass(frozen=True)
class Cast(Expression):
    operand: Expression


@dataclass(frozen=True)
class Call(Expression):
    function: str  # a math builtin: "sqrt", "min", "clamp", ...
    arguments: tuple[Expression, ...]


@dataclass(frozen=True)
class FunctionCall(Expression):
    """A call of callable ``function`` (an index into ``KernelIR.functions``); its type is
    None when it returns nothing. Arguments whose ``references`` entry is true (structs
    and arrays) are passed by reference: a place is changed by the callee."""

    function: int
    arguments: tuple[Expression, ...]
    references: tuple[bool, ...]


@dataclass(frozen=True)
class InitCall(Expression):
    """``S(arguments)`` for a struct type with an ``__init__`` method: a zeroed ``S``
    passed by reference to callable ``function`` with ``arguments`` after it."""

    function: int
    arguments: tuple[Expression, ...]
    references: tuple[bool, ...]


@dataclass(frozen=True)
class Statement:
    pass


@dataclass(frozen=True)
class Assign(Statement):
    name: str
    value: Expression


@dataclass(frozen=True)
class Store(Statement):
    """``place = value`` where ``place`` is a component or column of a local: a
    :class:`Member` (one field) or :class:`Element` chain ending in a :class:`Local`."""

    place: Expression
    value: Expression


@dataclass(frozen=True)
class BufferWrite(Statement):
    buffer: int
    index: Expression
    value: Expression
    line: int = 0  # source line, for index-check reports


@dataclass(frozen=True)
class ImageWrite(Statement):
    """``image.write(coord, value)``; ``value`` has the image's texel type."""

    buffer: int
    coord: Expression
    value: Expression
    line: int = 0


@dataclass(frozen=True)
class Evaluate(Statement):
    value: Expression


@dataclass(frozen=True)
class If(Statement):
    condition: Expression
    body: tuple[Statement, ...]
    orelse: tuple[Statement, ...]


@dataclass(frozen=True)
class While(Statement):
    condition: Expression
    body: tuple[Statement, ...]


@dataclass(frozen=True)
class ForRange(Statement):
    """``for variable in range(start, stop, step)``. With ``end_value`` (luisa-python's
    rules) a loop not left by ``break`` leaves ``start + iterations * step`` in the
    variable, as C's loop counter does."""

    variable: str
    start: Expression
    stop: Expression
    step: Expression
    body: tuple[Statement, ...]
    end_value: bool = False


@dataclass(frozen=True)
class Break(Statement):
    pass


@dataclass(frozen=True)
class Continue(Statement):
    pass


@dataclass(frozen=True)
class Barrier(Statement):
    """``sync_block()``: every thread of the block that has not returned reaches it before
    any goes on (anywhere in a kernel's body, not in callables)."""

    line: int = 0  # source line, for the error of threads reaching different barriers


def contains_barrier(statements: tuple[Statement, ...]) -> bool:
    """Whether ``statements`` or the bodies nested in them hold a ``sync_block()``."""
    return any(isinstance(statement, Barrier) for statement in walk_statements(statements))


@dataclass(frozen=True)
class Return(Statement):
    """``return``: ends the thread in a kernel; returns ``value`` from a callable."""

    value: Expression | None = None


@dataclass(frozen=True)
class Print(Statement):
    """``print(...)`` (``breakpoint()`` in Python mode). ``pieces``: per positional
    argument of a device print, its parts written with nothing between them (an f-string
    has several): a string, or ``None`` for the next of ``arguments``; empty for Python
    mode's own ``print``, which emitters never see."""

    arguments: tuple[Expression, ...]
    pieces: tuple[tuple[str | None, ...], ...] = ()


@dataclass(frozen=True)
class BufferSlot:
    """A buffer the kernel uses: an argument or a captured object."""

    name: str
    element: KernelType
    capture: Any = None  # the captured buffer object, None for arguments
    heap: str | None = None  # the bindless array holding it, None for buffers of their own
    indirect: bool = False  # the uint32 words of an indirect dispatch buffer


@dataclass(frozen=True)
class ScalarSlot:
    name: str
    type: ScalarType | VectorType | MatrixType


@dataclass(frozen=True)
class BufferArgument:
    """A buffer passed to a callable: the kernel's buffer slot it names."""

    slot: int
    element: Any


@dataclass
class FunctionIR:
    """One specialisation of a callable: its parameters (``(name, type, by reference)``,
    buffers excluded: callables use the kernel's buffer slots), locals and body."""

    name: str
    parameters: list[tuple[str, Any, bool]]
    return_type: Any
    locals: dict[str, Any] = field(default_factory=dict)
    body: tuple[Statement, ...] = ()
    definition: Any = None  # the callable's KernelDefinition, for Python mode
    # the differentiated statements of each ``with autodiff():``, by its (line, column)
    autodiff_blocks: dict[tuple[int, int], tuple[Statement, ...]] = field(default_factory=dict)


@dataclass
class KernelIR:
    """One specialisation of a kernel: parameters, typed locals and the body."""

    name: str
    buffers: list[BufferSlot]  # launch order: buffer arguments, then captured buffers
    scalars: list[ScalarSlot]
    # (name, "buffer"|"scalar"|"bindless", index into buffers|scalars|heaps) in call order
    arguments: list[tuple[str, str, int]]
    locals: dict[str, KernelType] = field(default_factory=dict)
    body: tuple[Statement, ...] = ()
    functions: list[FunctionIR] = field(default_factory=list)  # callees before callers
    # per bindless array: its name and (bindless slot, buffer slot) of each resource
    heaps: list[tuple[str, tuple[tuple[int, int], ...]]] = field(default_factory=list)
    block_size: tuple[int, int, int] = (256, 1, 1)  # set_block_size's, else luisa's default
    shared: tuple[str, ...] = ()  # the locals that are the block's shared arrays
    rules: str = "python"  # the name of the kernel's ``rules.KernelRules``
    kernel_id_scalar: int | None = None  # the hidden scalar ``kernel_id()`` reads, if used
    # the differentiated statements of each ``with autodiff():``, by its (line, column)
    autodiff_blocks: dict[tuple[int, int], tuple[Statement, ...]] = field(default_factory=dict)

    @property
    def uses_blocks(self) -> bool:
        """Whether threads of a block must run as a group: barriers or shared arrays."""
        return bool(self.shared) or contains_barrier(self.body)

    @property
    def has_control_flow(self) -> bool:
        """Whether the body has loops or early returns, or calls callables with loops, or
        uses atomics, blocks or device prints (all of which rule out ``omp simd``)."""
        if self.uses_blocks or self.prints:
            return True
        if any(isinstance(s, (While, ForRange, Return)) for s in walk_statements(self.body)):
            return True
        if any(
            isinstance(s, (While, ForRange))
            for function in self.functions
            for s in walk_statements(function.body)
        ):
            return True
        return any(
            isinstance(node, AtomicCall)
            for statement in self.all_statements()
            for expression in statement_expressions(statement)
            for node in walk_expression(expression)
        )

    @property
    def prints(self) -> tuple[Print, ...]:
        """The device prints of the body and callables, numbered by position here."""
        return tuple(s for s in self.all_statements() if isinstance(s, Print) and s.pieces)

    def all_statements(self) -> Iterator[Statement]:
        """Every statement of the body and of the callables' bodies."""
        yield from walk_statements(self.body)
        for function in self.functions:
            yield from walk_statements(function.body)

    def buffer_access(self) -> list[str]:
        """Per buffer slot: "read", "write", "read_write" or "none"."""
        reads: set[int] = set()
        writes: set[int] = set()
        for statement in self.all_statements():
            if isinstance(statement, (BufferWrite, ImageWrite)):
                writes.add(statement.buffer)
            for expression in statement_expressions(statement):
                for node in walk_expression(expression):
                    if isinstance(node, (BufferRead, ImageRead, AtomicCall)):
                        reads.add(node.buffer)
                    if isinstance(node, AtomicCall):
                        writes.add(node.buffer)
        names = {(True, True): "read_write", (False, True): "write", (True, False): "read"}
        return [
            names.get((index in reads, index in writes), "none")
            if self.buffers[index].heap is None
            else "read"  # a dispatch may read any resource of a bindless array
            for index in range(len(self.buffers))
        ]


def walk_statements(body: tuple[Statement, ...]) -> Iterator[Statement]:
    """Every statement in ``body``, nested ones included, in source order."""
    for statement in body:
        yield statement
        if isinstance(statement, If):
            yield from walk_statements(statement.body)
            yield from walk_statements(statement.orelse)
        elif isinstance(statement, (While, ForRange)):
            yield from walk_statements(statement.body)


def statement_expressions(statement: Statement) -> tuple[Expression, ...]:
    """The expressions directly inside ``statement`` (not those of nested statements)."""
    if isinstance(statement, (Assign, Evaluate)):
        return (statement.value,)
    if isinstance(statement, BufferWrite):
        return (statement.index, statement.value)
    if isinstance(statement, ImageWrite):
        return (statement.coord, statement.value)
    if isinstance(statement, Store):
        return (statement.place, statement.value)
    if isinstance(statement, (If, While)):
        return (statement.condition,)
    if isinstance(statement, ForRange):
        return (statement.start, statement.stop, statement.step)
    if isinstance(statement, Print):
        return statement.arguments
    if isinstance(statement, Return) and statement.value is not None:
        return (statement.value,)
    return ()


def walk_expression(expression: Expression) -> Iterator[Expression]:
    """``expression`` and all its subexpressions, parents first (iterative: expressions
    may nest thousands deep)."""
    pending = [expression]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed(subexpressions(node)))


def subexpressions(expression: Expression) -> tuple[Expression, ...]:
    """The direct operands of ``expression``, in evaluation order."""
    if isinstance(expression, (Member, Field, Unary, Cast)):
        return (expression.operand,)
    if isinstance(expression, BufferRead):
        return (expression.index,)
    if isinstance(expression, ImageRead):
        return (expression.coord,)
    if isinstance(expression, Element):
        return (expression.operand, expression.index)
    if isinstance(expression, Construct):
        return expression.arguments
    if isinstance(expression, Binary):
        return (expression.left, expression.right)
    if isinstance(expression, Select):
        return (expression.condition, expression.if_true, expression.if_false)
    if isinstance(expression, (Call, FunctionCall, InitCall)):
        return expression.arguments
    if isinstance(expression, AtomicCall):
        return (expression.index, *expression.arguments)
    if isinstance(expression, BindlessCall):
        return (expression.slot, *expression.arguments)
    return ()
