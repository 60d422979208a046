"""Value semantics for vectors and matrices in Python mode.

In a kernel, ``a = b`` copies a vector (C structs do); in Python both names would share
one object, and ``a.x = 1`` would change ``b`` too. Python mode therefore runs a copy of
the kernel compiled from its own source (same file and line numbers, so tracebacks and
``breakpoint()`` show the user's lines) in which every assigned value that may name an
existing object (a name, ``x if c else y``, an attribute or an element) is copied. The
same copy carries the rewrite of a kernel under luisa-python's rules (``python.rules``),
and gives a kernel's scalar locals their declared types: ``c = 2147483647`` makes an
``np.int32`` (so ``c + 1`` wraps as in C) and ``f = 0.1`` an ``np.float32`` (so ``f * 3.0``
rounds as in C), where Python would keep an int or a float64. Callables, typed once per
argument types, keep Python's values.
"""

from __future__ import annotations

import ast
import copy
import types
from collections.abc import Callable, Mapping
from typing import Any

from luisa_nb.kernels.frontend.captures import CaptureResolver
from luisa_nb.kernels.frontend.source import KernelSource
from luisa_nb.kernels.lang.scalar_names import convert_scalar
from luisa_nb.kernels.python.rules import HELPERS, RulesRewriter
from luisa_nb.kernels.rules import PYTHON_RULES, KernelRules
from luisa_nb.kernels.type_system import ScalarType, is_aggregate_type

COPY_NAME = "__lnb_copy__"
TYPED_NAME = "__lnb_typed__"
SHARED_VALUES = (ast.Name, ast.IfExp, ast.Attribute, ast.Subscript)


def copy_value(value: Any) -> Any:
    """A copy of a vector; any other value as it is."""
    return value.copy() if hasattr(type(value), "__lnb_type__") else value


def typed_value(value: Any, kind: ScalarType) -> Any:
    """``value`` as a numpy scalar of ``kind``, converted as C converts it."""
    return value if type(value) is kind.dtype.type else convert_scalar(value, kind)


class _TypedLocals(ast.NodeTransformer):
    """Wraps what is assigned to a scalar local in :func:`typed_value`."""

    def __init__(self, kinds: Mapping[str, ScalarType]) -> None:
        self.kinds = kinds

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
        (target,) = node.targets if len(node.targets) == 1 else (None,)
        kind = self.kinds.get(target.id) if isinstance(target, ast.Name) else None
        if kind is not None:
            code = ast.Constant(kind.value)
            call = ast.Call(ast.Name(TYPED_NAME, ast.Load()), [node.value, code], [])
            node.value = ast.copy_location(call, node.value)
        return node


def _typed(value: Any, kind: str) -> Any:
    return typed_value(value, ScalarType(kind))


def captured_aggregate_names(captures: CaptureResolver) -> frozenset[str]:
    """The names of captured struct and array values. A kernel holds them as constants,
    so each use is a copy: a method called on one (``sampler.next()``) changes that copy,
    never the host's value nor what the next use or thread sees."""
    return frozenset(
        name
        for name, value in captures.captured().items()
        if is_aggregate_type(getattr(type(value), "__lnb_type__", None))
    )


class _CopyInserter(ast.NodeTransformer):
    def __init__(self, copied_names: frozenset[str] = frozenset()) -> None:
        self.copied_names = copied_names

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id not in self.copied_names or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(ast.Call(ast.Name(COPY_NAME, ast.Load()), [node], []), node)

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
        if self.copied_names:
            self.generic_visit(node)
        if isinstance(node.value, ast.Tuple):
            node.value.elts = [self.copied(element) for element in node.value.elts]
        else:
            node.value = self.copied(node.value)
        return node

    @staticmethod
    def copied(value: ast.expr) -> ast.expr:
        if not isinstance(value, SHARED_VALUES):
            return value
        call = ast.Call(ast.Name(COPY_NAME, ast.Load()), [value], [])
        return ast.copy_location(call, value)


def copying_function(
    source: KernelSource,
    namespace: dict[str, Any],
    closure: tuple[Any, ...],
    captures: CaptureResolver,
    rules: KernelRules = PYTHON_RULES,
    scalar_locals: Mapping[str, ScalarType] | None = None,
    rewrite: Callable[[ast.FunctionDef], ast.FunctionDef] | None = None,
    extra_globals: Mapping[str, Any] | None = None,
) -> types.FunctionType:
    """The kernel function recompiled with copies of shared values, rewritten for
    ``rules`` and then by ``rewrite`` (autodiff blocks), with ``scalar_locals`` typed as
    declared; the closure's values become globals of the copy (captures are fixed by
    then), beside ``extra_globals``."""
    tree = copy.deepcopy(source.tree)
    tree.decorator_list = []
    tree.returns = None
    for argument in tree.args.args:
        argument.annotation = None
    if rules.rewrites_python:
        tree = RulesRewriter(rules).visit(tree)
    if rewrite is not None:
        tree = rewrite(tree)
    if scalar_locals:
        tree = _TypedLocals(scalar_locals).visit(tree)
    copied_names = captured_aggregate_names(captures)
    tree = ast.fix_missing_locations(_CopyInserter(copied_names).visit(tree))
    code = compile(ast.Module(body=[tree], type_ignores=[]), source.filename, "exec")
    function_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    globals_ = dict(namespace)
    for name, cell in zip(captures.function.__code__.co_freevars, closure, strict=True):
        try:
            globals_[name] = cell.cell_contents
        except ValueError:
            continue  # never assigned in the enclosing function, so the kernel cannot use it
    globals_[COPY_NAME] = copy_value
    globals_[TYPED_NAME] = _typed
    if rules.rewrites_python:
        globals_.update(HELPERS)
    globals_.update(extra_globals or {})
    return types.FunctionType(function_code, globals_, source.name)
