"""Brings an autodiff block to the shape the reverse sweep needs: no calls (callables are
inlined, their returns turned into a result local and a flag), no loops (a ``range``
with constant bounds is unrolled) and no component stores (``v.x = e`` assigns a whole
new ``v``). What cannot take that shape is rejected with :class:`AutodiffError`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from luisa_nb.kernels import ir
from luisa_nb.kernels.autodiff import builders as b
from luisa_nb.kernels.type_system import ScalarType, VectorType, is_aggregate_type

MAX_UNROLLED_STATEMENTS = 20_000
LETTERS = "xyzw"
Fresh = Callable[[object, str], str]


class AutodiffError(Exception):
    """A construct an autodiff block cannot differentiate; the message says what to do."""


Change = Callable[[ir.Expression], "ir.Expression | None"]


def _with_fields_mapped(node: Any, change: Change) -> Any:
    """``node`` (an expression or a statement) with ``change`` applied to every
    expression, tuple of expressions and tuple of statements among its fields."""
    updates = {}
    for item in dataclasses.fields(node):
        value = getattr(node, item.name)
        if isinstance(value, ir.Expression):
            updates[item.name] = map_expression(value, change)
        elif isinstance(value, tuple) and value and isinstance(value[0], ir.Expression):
            updates[item.name] = tuple(map_expression(v, change) for v in value)
        elif isinstance(value, tuple) and value and isinstance(value[0], ir.Statement):
            updates[item.name] = tuple(map_statement(v, change) for v in value)
    return dataclasses.replace(node, **updates) if updates else node


def map_expression(expression: ir.Expression, change: Change) -> ir.Expression:
    """``expression`` rebuilt bottom-up; ``change`` may replace a node (after its operands
    are rebuilt) by returning a new one, or keep it by returning None."""
    rebuilt = _with_fields_mapped(expression, change)
    replaced = change(rebuilt)
    return rebuilt if replaced is None else replaced


def map_statement(statement: ir.Statement, change: Change) -> ir.Statement:
    """``statement`` with ``change`` applied to its expressions and nested bodies."""
    return _with_fields_mapped(statement, change)


def renaming(names: dict[str, str]) -> Change:
    """A change for ``map_expression``: each local in ``names`` read under its new name."""

    def rename(node: ir.Expression) -> ir.Expression | None:
        if isinstance(node, ir.Local) and node.name in names:
            return ir.Local(node.type, names[node.name])
        return None

    return rename


def renamed(statement: ir.Statement, names: dict[str, str]) -> ir.Statement:
    """``statement`` (and the statements nested in it) with the locals in ``names``
    renamed."""
    rename = renaming(names)
    if isinstance(statement, ir.If):
        return ir.If(
            map_expression(statement.condition, rename),
            tuple(renamed(s, names) for s in statement.body),
            tuple(renamed(s, names) for s in statement.orelse),
        )
    if isinstance(statement, (ir.ForRange, ir.While)):
        statement = dataclasses.replace(
            statement, body=tuple(renamed(s, names) for s in statement.body)
        )
    statement = map_statement(statement, rename)
    if isinstance(statement, ir.Assign) and statement.name in names:
        return ir.Assign(names[statement.name], statement.value)
    if isinstance(statement, ir.ForRange) and statement.variable in names:
        return dataclasses.replace(statement, variable=names[statement.variable])
    return statement


class BlockNormalizer:
    """Normalizes the statements of one block; ``functions`` are the kernel's callables
    (for inlining) and ``fresh(kind, hint)`` makes a new local."""

    def __init__(self, functions: list[ir.FunctionIR], fresh: Fresh) -> None:
        self.functions = functions
        self.fresh = fresh
        self.emitted = 0

    def statements(self, body: tuple[ir.Statement, ...] | list[ir.Statement]) -> list[ir.Statement]:
        out: list[ir.Statement] = []
        for statement in body:
            self.statement(statement, out)
        self.emitted += len(out)
        if self.emitted > MAX_UNROLLED_STATEMENTS:
            raise AutodiffError(
                f"the block unrolls to more than {MAX_UNROLLED_STATEMENTS} statements; "
                f"differentiate fewer loop iterations per block"
            )
        return out

    def statement(self, statement: ir.Statement, out: list[ir.Statement]) -> None:
        if isinstance(statement, ir.Assign):
            out.append(ir.Assign(statement.name, self.expression(statement.value, out)))
        elif isinstance(statement, ir.Store):
            place = self.expression(statement.place, out)
            out.append(stored(place, self.expression(statement.value, out)))
        elif isinstance(statement, ir.If):
            condition = self.expression(statement.condition, out)
            body, orelse = self.statements(statement.body), self.statements(statement.orelse)
            out.append(ir.If(condition, tuple(body), tuple(orelse)))
        elif isinstance(statement, ir.ForRange):
            self.unroll(statement, out)
        elif isinstance(statement, ir.While):
            raise AutodiffError(
                "a while loop cannot be differentiated: its trip count is not known when "
                "the kernel compiles; use `for i in range(N)` with a constant N"
            )
        elif isinstance(statement, (ir.Break, ir.Continue)):
            raise AutodiffError(
                "break and continue cannot be differentiated; use an if around the rest of "
                "the loop body instead"
            )
        elif isinstance(statement, ir.Return):
            raise AutodiffError("return inside an autodiff block; end the block first")
        elif isinstance(statement, ir.Barrier):
            raise AutodiffError("sync_block() inside an autodiff block; move it out")
        elif isinstance(statement, ir.Print):
            raise AutodiffError(
                "print() inside an autodiff block; print the values before or after the block"
            )
        elif isinstance(statement, ir.Evaluate) and isinstance(statement.value, ir.FunctionCall):
            self.inline(statement.value, out)
        else:
            out.append(map_statement(statement, lambda node: self.inlined(node, out)))

    def expression(self, expression: ir.Expression, out: list[ir.Statement]) -> ir.Expression:
        return map_expression(expression, lambda node: self.inlined(node, out))

    def inlined(self, node: ir.Expression, out: list[ir.Statement]) -> ir.Expression | None:
        if isinstance(node, ir.AtomicCall):
            raise AutodiffError(
                f"atomic {node.operation} cannot be differentiated (its result depends on "
                f"other threads); do the atomic outside the autodiff block"
            )
        read_only = isinstance(node, (ir.Local, ir.Field, ir.Element))
        if isinstance(node, ir.InitCall) or (is_aggregate_type(node.type) and not read_only):
            raise AutodiffError(
                "autodiff blocks differentiate float scalars, vectors and matrices: structs "
                "and arrays made before the block may be read there (as constants), not made "
                "in it"
            )
        if isinstance(node, ir.FunctionCall):
            return self.inline(node, out)
        return None

    def inline(self, call: ir.FunctionCall, out: list[ir.Statement]) -> ir.Expression | None:
        """The callable's body, renamed, in place of ``call``; its result as a local."""
        function = self.functions[call.function]
        if any(call.references):
            raise AutodiffError(
                f"callable {function.name!r} takes a struct or array by reference; autodiff "
                f"blocks inline callables of scalars, vectors and matrices only"
            )
        names: dict[str, str] = {}
        for (name, kind, _), argument in zip(function.parameters, call.arguments, strict=True):
            names[name] = self.fresh(kind, name)
            out.append(ir.Assign(names[name], argument))
        for name, kind in function.locals.items():
            names[name] = self.fresh(kind, name)
        result = self.fresh(function.return_type, "result") if function.return_type else None
        returned = self.fresh(ScalarType.BOOL, "returned")
        out.append(ir.Assign(returned, ir.Constant(ScalarType.BOOL, False)))
        body = [renamed(statement, names) for statement in function.body]
        lowered = lower_returns(body, result, returned)
        out.extend(self.statements(lowered))
        return None if result is None else ir.Local(function.return_type, result)

    def unroll(self, loop: ir.ForRange, out: list[ir.Statement]) -> None:
        bounds = (loop.start, loop.stop, loop.step)
        if not all(isinstance(bound, ir.Constant) for bound in bounds):
            raise AutodiffError(
                "a loop in an autodiff block needs a trip count known when the kernel "
                "compiles: range() of literals or captured constants"
            )
        start, stop, step = (int(bound.value) for bound in bounds)
        kind = loop.start.type
        values = range(start, stop, step)
        for value in values:
            out.append(ir.Assign(loop.variable, ir.Constant(kind, value)))
            out.extend(self.statements(loop.body))
        if loop.end_value:
            out.append(ir.Assign(loop.variable, ir.Constant(kind, start + len(values) * step)))


def contains_return(statements: list[ir.Statement] | tuple[ir.Statement, ...]) -> bool:
    return any(isinstance(s, ir.Return) for s in ir.walk_statements(tuple(statements)))


def lower_returns(
    statements: list[ir.Statement], result: str | None, returned: str
) -> list[ir.Statement]:
    """``statements`` of a callable with each ``return v`` turned into ``result = v`` and
    ``returned = True``; what may follow a return runs only while ``returned`` is false."""
    flag = ir.Local(ScalarType.BOOL, returned)
    still_running = ir.Unary(ScalarType.BOOL, "not", flag)
    out: list[ir.Statement] = []
    for position, statement in enumerate(statements):
        if isinstance(statement, ir.Return):
            if statement.value is not None and result is not None:
                out.append(ir.Assign(result, statement.value))
            out.append(ir.Assign(returned, ir.Constant(ScalarType.BOOL, True)))
            return out
        if not contains_return([statement]):
            out.append(statement)
            continue
        if isinstance(statement, ir.If):
            body = lower_returns(list(statement.body), result, returned)
            orelse = lower_returns(list(statement.orelse), result, returned)
            out.append(ir.If(statement.condition, tuple(body), tuple(orelse)))
        elif isinstance(statement, ir.ForRange):
            inner = lower_returns(list(statement.body), result, returned)
            guarded = (ir.If(still_running, tuple(inner), ()),)
            out.append(dataclasses.replace(statement, body=guarded))
        else:
            raise AutodiffError("a return inside a while loop cannot be differentiated")
        rest = lower_returns(list(statements[position + 1 :]), result, returned)
        if rest:
            out.append(ir.If(still_running, tuple(rest), ()))
        return out
    return out


def stored(place: ir.Expression, value: ir.Expression) -> ir.Assign:
    """``place = value`` (a component, swizzle or element of a local vector) as an
    assignment of the whole local."""
    chain: list[ir.Expression] = []
    node = place
    while not isinstance(node, ir.Local):
        if not isinstance(node, (ir.Member, ir.Element)):
            raise AutodiffError("autodiff blocks store only into components of vectors")
        chain.append(node)
        node = node.operand
    chain.reverse()
    return ir.Assign(node.name, _rebuilt(node, chain, value))


def _rebuilt(current: ir.Expression, chain: list[ir.Expression], value: ir.Expression):
    if not chain:
        return value
    step, rest = chain[0], chain[1:]
    kind = current.type
    if not isinstance(kind, VectorType):
        raise AutodiffError(f"autodiff blocks store only into components of vectors, not of {kind}")
    parts = [b.component(current, k) for k in range(kind.length)]
    if isinstance(step, ir.Member) and len(step.field) > 1:
        for position, letter in enumerate(step.field):
            parts[LETTERS.index(letter)] = b.component(value, position)
    elif isinstance(step, ir.Member):
        k = LETTERS.index(step.field)
        parts[k] = _rebuilt(parts[k], rest, value)
    elif isinstance(step.index, ir.Constant):
        k = int(step.index.value)
        parts[k] = _rebuilt(parts[k], rest, value)
    else:
        for k in range(kind.length):
            chosen = b.compare("eq", step.index, ir.Constant(step.index.type, k))
            parts[k] = b.select(chosen, _rebuilt(parts[k], rest, value), parts[k])
    return ir.Construct(kind, tuple(parts))
