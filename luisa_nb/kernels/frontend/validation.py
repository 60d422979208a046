"""Checks done when a kernel is defined: constructs the kernel language never accepts,
whatever the argument types. Typing errors come later, at specialisation.
"""

from __future__ import annotations

import ast
import contextlib

from luisa_nb.kernels.frontend.captures import builtin_name
from luisa_nb.kernels.frontend.source import KernelSource

REJECTED_CONSTRUCTS: dict[type[ast.AST], str] = {
    ast.FunctionDef: "a nested function definition",
    ast.AsyncFunctionDef: "an async function definition",
    ast.ClassDef: "a class definition",
    ast.Lambda: "a lambda",
    ast.List: "a list",
    ast.Tuple: "a tuple outside an unpacking assignment (a, b = x, y)",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.Slice: "a slice",
    ast.Starred: "star unpacking",
    ast.Try: "a try statement",
    ast.With: "a with statement",
    ast.AsyncWith: "an async with statement",
    ast.AsyncFor: "an async for loop",
    ast.Global: "a global statement",
    ast.Nonlocal: "a nonlocal statement",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.Await: "await",
    ast.Raise: "a raise statement",
    ast.Assert: "an assert statement",
    ast.Delete: "a del statement",
    ast.Import: "an import statement",
    ast.ImportFrom: "an import statement",
    ast.Match: "a match statement",
    ast.NamedExpr: "an assignment expression (:=)",
    ast.AnnAssign: "an annotated assignment",
    ast.Is: "an `is` comparison (use ==)",
    ast.IsNot: "an `is not` comparison (use !=)",
    ast.In: "an `in` test",
    ast.NotIn: "a `not in` test",
}
if hasattr(ast, "TryStar"):
    REJECTED_CONSTRUCTS[ast.TryStar] = "a try statement"

ALLOWED_NODES: tuple[type[ast.AST], ...] = (
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.If,
    ast.For,
    ast.While,
    ast.Break,
    ast.Continue,
    ast.Return,
    ast.Pass,
    ast.Name,
    ast.Constant,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Attribute,
    ast.Subscript,
    ast.keyword,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)


def unsupported_feature(value: object, name: str) -> str | None:
    """The compile error of a kernel that uses ``value`` (named ``name``) when it stands
    for a luisa-python feature luisa_nb lacks (its ``__lnb_unsupported__`` is true, as
    ``luisa_nb.luisa``'s ``Missing`` objects' is); else ``None``."""
    if getattr(type(value), "__lnb_unsupported__", False) is not True:
        return None
    feature = getattr(value, "feature", "a luisa-python feature")
    return (
        f"{name!r} is part of {feature}, which luisa_nb does not support in kernels; run the "
        f"program on real LuisaCompute (luisa-python) for it"
    )


class SyntaxValidator(ast.NodeVisitor):
    """Rejects, with file:line:col, every construct that no argument types could make valid."""

    def __init__(self, source: KernelSource) -> None:
        self.source = source

    def check(self) -> None:
        """Validate the signature and every statement of the kernel."""
        self.check_signature(self.source.tree.args)
        for statement in self.source.tree.body:
            self.visit(statement)

    def check_signature(self, arguments: ast.arguments) -> None:
        if arguments.vararg or arguments.kwarg:
            node = arguments.vararg or arguments.kwarg
            self.reject(node, "*args and **kwargs parameters are not supported in kernels")
        if arguments.kwonlyargs:
            self.reject(arguments.kwonlyargs[0], "keyword-only parameters are not supported")
        if arguments.defaults:
            self.reject(arguments.defaults[0], "parameter defaults are not supported in kernels")

    def reject(self, node: ast.AST, message: str) -> None:
        raise self.source.error(node, message)

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.With) and self.is_autodiff_block(node):
            for statement in node.body:
                self.visit(statement)
            return
        construct = REJECTED_CONSTRUCTS.get(type(node))
        if construct is not None:
            if isinstance(node, ast.With):
                self.reject_missing_feature(node)
            self.reject(node, f"{construct} is not supported in kernels")
        super().visit(node)

    def enclosing_names(self) -> dict[str, object]:
        """The globals and closure cells the kernel's function sees."""
        function = self.source.function
        names = dict(getattr(function, "__globals__", {}))
        cells = getattr(function, "__closure__", None) or ()
        for name, cell in zip(function.__code__.co_freevars, cells, strict=True):
            with contextlib.suppress(ValueError):  # a cell not assigned yet
                names[name] = cell.cell_contents
        return names

    def is_autodiff_block(self, node: ast.With) -> bool:
        """``with autodiff():`` (luisa.autodiff's): one item, called with nothing, no ``as``;
        the typer differentiates it."""
        if len(node.items) != 1:
            return False
        (item,) = node.items
        context = item.context_expr
        if not isinstance(context, ast.Call):
            return False
        if builtin_name(self.resolved(context.func)) != "autodiff":
            return False
        if not isinstance(context.func, ast.Name):
            self.reject(
                node,
                "write `with autodiff():` with autodiff imported by name (`from "
                "luisa.autodiff import autodiff`): luisa-python finds the block by that name",
            )
        if context.args or context.keywords or item.optional_vars is not None:
            self.reject(node, "write the block as `with autodiff():` (no arguments, no `as`)")
        return True

    def resolved(self, node: ast.expr) -> object:
        """The object a name or attribute chain names, or None."""
        if isinstance(node, ast.Name):
            return self.enclosing_names().get(node.id)
        if isinstance(node, ast.Attribute):
            return getattr(self.resolved(node.value), node.attr, None)
        return None

    def reject_missing_feature(self, node: ast.With) -> None:
        """Name the luisa-python feature a ``with`` block uses when luisa_nb lacks it (an
        object whose ``__lnb_unsupported__`` is true)."""
        names = self.enclosing_names()
        for item in node.items:
            context = item.context_expr
            called = context.func if isinstance(context, ast.Call) else context
            if isinstance(called, ast.Name):
                message = unsupported_feature(names.get(called.id), called.id)
                if message is not None:
                    self.reject(node, message)

    def generic_visit(self, node: ast.AST) -> None:
        if not isinstance(node, ALLOWED_NODES):
            self.reject(node, f"unsupported construct: {type(node).__name__}")
        super().generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for operator, right in zip(node.ops, node.comparators, strict=True):
            construct = REJECTED_CONSTRUCTS.get(type(operator))
            if construct is not None:
                self.reject(right, f"{construct} is not supported in kernels")
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        if not isinstance(node.target, ast.Name):
            self.reject(node.target, "a for loop variable must be a single name")
        if node.orelse:
            self.reject(node, "for ... else is not supported in kernels")
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            self.reject(node, "while ... else is not supported in kernels")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Tuple):
                self.check_unpacking(target, node)
                for element in node.value.elts:
                    self.visit(element)
                return
            self.check_target(target)
        self.visit(node.value)

    def check_unpacking(self, target: ast.Tuple, node: ast.Assign) -> None:
        """``a, b = x, y``: one target tuple and a tuple of as many values."""
        if len(node.targets) > 1:
            self.reject(target, "unpacking cannot be chained with other targets")
        if not isinstance(node.value, ast.Tuple):
            self.reject(node.value, "unpacking assignment needs a tuple of values (a, b = x, y)")
        if len(node.value.elts) != len(target.elts):
            self.reject(
                node.value,
                f"unpacking {len(node.value.elts)} values into {len(target.elts)} targets",
            )
        for element in [*target.elts, *node.value.elts]:
            if isinstance(element, ast.Starred):
                self.reject(element, "star unpacking is not supported in kernels")
        for element in target.elts:
            self.check_target(element)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Tuple):
            self.reject(node.target, "augmented assignment needs a single target")
        self.check_target(node.target)
        self.visit(node.op)
        self.visit(node.value)

    def check_target(self, target: ast.expr) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            self.reject(target, "nested unpacking is not supported; unpack one level")
        if not isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
            self.reject(target, "only names, vector components and elements can be assigned")
        if not isinstance(target, ast.Name):
            self.visit(target)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, (bool, int, float, str)):
            self.reject(node, f"the constant {node.value!r} is not supported in kernels")
