"""Conditions of ``if``/``elif``/``while`` that fold to a constant before typing.

As in luisa-python, a branch whose condition is a compile-time constant is dropped before
it is looked at, so it may name anything. A condition is constant when it is built from
literals, captured Python bool/int/float values and constant locals with the operators
that literal folding handles (``folding.fold``), plus ``not``, ``and``, ``or``. A constant
local is assigned exactly once in the function, by ``name = expr`` at the top level of its
body, before the condition in source order, and ``expr`` is itself constant. ``//`` and
``%`` fold by the kernel's rules (``rules``), as the typer folds them.
"""

from __future__ import annotations

import ast
from collections import Counter

from luisa_nb.kernels.frontend.captures import CaptureResolver, Unresolved
from luisa_nb.kernels.rules import PYTHON_RULES, KernelRules
from luisa_nb.kernels.typing.expressions import BINARY_OPERATORS, COMPARISONS
from luisa_nb.kernels.typing.folding import INT64_RANGE, FoldError, fold, foldable

Value = bool | int | float
Position = tuple[int, int]
BOOL_OPERATORS = ("bitand", "bitor", "bitxor")


class NotConstant(Exception):
    """The expression does not fold to a constant."""


def _position(node: ast.AST) -> Position:
    return node.lineno, node.col_offset


def _is_number(value: Value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _checked(value: object) -> Value:
    """``value`` if it is a kernel literal (a bool, a float, an int within int64)."""
    if isinstance(value, (bool, float)):
        return value
    if isinstance(value, int) and INT64_RANGE[0] <= value <= INT64_RANGE[1]:
        return value
    raise NotConstant


class ConstantConditions:
    """Folds the conditions of one function (a kernel or a callable)."""

    def __init__(
        self,
        function: ast.FunctionDef,
        stores: Counter[str],
        local_names: set[str],
        captures: CaptureResolver,
        rules: KernelRules = PYTHON_RULES,
    ) -> None:
        """``stores``: how many times ``function`` assigns each name."""
        parameters = {argument.arg for argument in function.args.args}
        self.assignments: dict[str, ast.Assign] = {
            statement.targets[0].id: statement
            for statement in function.body
            if isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and stores[statement.targets[0].id] == 1
            and statement.targets[0].id not in parameters
        }
        self.local_names = local_names
        self.captures = captures
        self.rules = rules
        self.locals: dict[str, Value | None] = {}

    def truth(self, statement: ast.If | ast.While) -> bool | None:
        """Whether the condition of ``statement`` is constantly true or false; None when it
        does not fold."""
        value = self.constant(statement.test, statement)
        return None if value is None else bool(value)

    def constant(self, node: ast.expr, statement: ast.stmt) -> Value | None:
        """The value of ``node``, part of ``statement``, if it folds; else None."""
        try:
            return self.value(node, _position(statement))
        except NotConstant:
            return None

    def value(self, node: ast.expr, position: Position) -> Value:
        """The constant value of ``node``, which sits at ``position``."""
        if isinstance(node, ast.Constant):
            return _checked(node.value)
        if isinstance(node, ast.Name):
            return self.name(node.id, position)
        if isinstance(node, ast.BinOp):
            operator, symbol = BINARY_OPERATORS[type(node.op)]
            left, right = self.value(node.left, position), self.value(node.right, position)
            both_bool = isinstance(left, bool) and isinstance(right, bool)
            if not (_is_number(left) and _is_number(right)) and not (
                both_bool and operator in BOOL_OPERATORS
            ):
                raise NotConstant
            return self.folded(operator, symbol, left, right)
        if isinstance(node, ast.Compare):
            return self.comparison(node, position)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand, position)
            if isinstance(node.op, ast.Not):
                return not operand
            invert_float = isinstance(node.op, ast.Invert) and isinstance(operand, float)
            if not _is_number(operand) or invert_float:
                raise NotConstant
            if isinstance(node.op, ast.UAdd):
                return operand
            return _checked(-operand if isinstance(node.op, ast.USub) else ~operand)
        if isinstance(node, ast.BoolOp):
            values = [self.value(value, position) for value in node.values]
            if not all(isinstance(value, bool) for value in values):
                raise NotConstant
            return all(values) if isinstance(node.op, ast.And) else any(values)
        raise NotConstant

    def name(self, name: str, position: Position) -> Value:
        """A constant local assigned before ``position``, or a captured Python number."""
        if name not in self.local_names:
            try:
                captured = self.captures.resolve_name(name)
            except Unresolved:
                raise NotConstant from None
            if type(captured) not in (bool, int, float):
                raise NotConstant
            return _checked(captured)
        assignment = self.assignments.get(name)
        if assignment is None or _position(assignment) >= position:
            raise NotConstant
        if name not in self.locals:
            try:
                self.locals[name] = self.value(assignment.value, _position(assignment))
            except NotConstant:
                self.locals[name] = None
        value = self.locals[name]
        if value is None:
            raise NotConstant
        return value

    def comparison(self, node: ast.Compare, position: Position) -> bool:
        """A chain of comparisons, each of two numbers or two bools."""
        left = self.value(node.left, position)
        result = True
        for operator_node, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.value(right_node, position)
            if not (_is_number(left) and _is_number(right)) and not (
                isinstance(left, bool) and isinstance(right, bool)
            ):
                raise NotConstant
            if type(operator_node) not in COMPARISONS:
                raise NotConstant
            operator, symbol = COMPARISONS[type(operator_node)]
            result = bool(self.folded(operator, symbol, left, right)) and result
            left = right
        return result

    def folded(self, operator: str, symbol: str, left: Value, right: Value) -> Value:
        floating = isinstance(left, float) or isinstance(right, float)
        operator = self.rules.division_operator(operator, floating)
        if operator is None or not foldable(operator, left, right):
            raise NotConstant
        try:
            return fold(operator, symbol, left, right)
        except FoldError:
            raise NotConstant from None
