"""Value semantics for vectors and matrices in Python mode.

In a kernel, ``a = b`` copies a vector (C structs do); in Python both names would share
one object, and ``a.x = 1`` would change ``b`` too. Python mode therefore runs a copy of
the kernel compiled from its own source (same file and line numbers, so tracebacks and
``breakpoint()`` show the user's lines) in which every assigned value that may name an
existing object (a name, ``x if c else y``, an attribute or an element) is copied. The
same copy carries the rewrite of a kernel under luisa-python's rules (``python_rules``).
"""

from __future__ import annotations

import ast
import copy
import types
from typing import Any

from luisa_nb.kernels.captures import CaptureResolver
from luisa_nb.kernels.python_rules import HELPERS, RulesRewriter
from luisa_nb.kernels.rules import PYTHON_RULES, KernelRules
from luisa_nb.kernels.source import KernelSource

COPY_NAME = "__lnb_copy__"
SHARED_VALUES = (ast.Name, ast.IfExp, ast.Attribute, ast.Subscript)


def copy_value(value: Any) -> Any:
    """A copy of a vector; any other value as it is."""
    return value.copy() if hasattr(type(value), "__lnb_type__") else value


class _CopyInserter(ast.NodeTransformer):
    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
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
) -> types.FunctionType:
    """The kernel function recompiled with copies of shared values, and rewritten for
    ``rules``; the closure's values become globals of the copy (captures are fixed by
    then)."""
    tree = copy.deepcopy(source.tree)
    tree.decorator_list = []
    tree.returns = None
    for argument in tree.args.args:
        argument.annotation = None
    if rules.rewrites_python:
        tree = RulesRewriter(rules).visit(tree)
    tree = ast.fix_missing_locations(_CopyInserter().visit(tree))
    code = compile(ast.Module(body=[tree], type_ignores=[]), source.filename, "exec")
    function_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    globals_ = dict(namespace)
    for name, cell in zip(captures.function.__code__.co_freevars, closure, strict=True):
        try:
            globals_[name] = cell.cell_contents
        except ValueError:
            continue  # never assigned in the enclosing function, so the kernel cannot use it
    globals_[COPY_NAME] = copy_value
    if rules.rewrites_python:
        globals_.update(HELPERS)
    return types.FunctionType(function_code, globals_, source.name)
