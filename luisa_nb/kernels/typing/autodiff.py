"""Typing of ``with autodiff():`` blocks and of the autodiff calls inside them. The typed
block goes through the autodiff stage (``kernels.autodiff``) at once, so the IR holds only
its differentiated, plain form. A mixin of :class:`~luisa_nb.kernels.typing.typer.KernelTyper`.
"""

from __future__ import annotations

import ast
import copy
import re
from typing import TYPE_CHECKING, Any

from luisa_nb.kernels import ir
from luisa_nb.kernels.autodiff import builders
from luisa_nb.kernels.autodiff.markers import Backward, Detach, Gradient, RequiresGradient
from luisa_nb.kernels.frontend.captures import builtin_name
from luisa_nb.kernels.lang.scalar_names import SCALAR_NAMES
from luisa_nb.kernels.lang.vectors import VECTOR_CLASSES
from luisa_nb.kernels.type_system import ScalarType

if TYPE_CHECKING:
    from luisa_nb.kernels.typing.typer import KernelTyper

AUTODIFF_CALLS = ("autodiff", "requires_grad", "backward", "grad", "detach", "one", "zero")
BLOCK_ONLY = ("requires_grad", "backward", "grad")
TYPE_NAMES: dict[Any, Any] = {
    float: ScalarType.FLOAT32,
    int: ScalarType.INT32,
    bool: ScalarType.BOOL,
    **{name: name.kernel_type for name in SCALAR_NAMES},
    **{cls: cls.__lnb_type__ for cls in VECTOR_CLASSES},
}
DIFFERENTIABLE = "float scalars, float vectors and matrices"
_GENERATED_PREFIX = re.compile(r"lnb_ad\d+_")


class AutodiffTyping:
    """Mixin of :class:`KernelTyper` for autodiff blocks."""

    in_autodiff_block = False

    @property
    def autodiff_blocks(self: KernelTyper) -> dict[tuple[int, int], tuple[ir.Statement, ...]]:
        """The differentiated statements of each block, by the ``with``'s (line, column)."""
        if "_autodiff_blocks" not in self.__dict__:
            self._autodiff_blocks = {}
        return self._autodiff_blocks

    def autodiff_local(self: KernelTyper, kind: Any, hint: str) -> str:
        """A new hidden local for the autodiff stage, named after ``hint``."""
        base = _GENERATED_PREFIX.sub("", hint)
        number = len(self.temporaries)
        name = f"lnb_ad{number}_{base}"
        while name in self.local_names or name in self.locals:
            name += "_"
        self.temporaries.append(name)
        self.locals[name] = kind
        return name

    def autodiff_call_name(self: KernelTyper, node: ast.Call) -> str | None:
        if not self.is_capture_chain(node.func):
            return None
        name = builtin_name(self.resolve(node.func))
        return name if name in AUTODIFF_CALLS else None

    def visit_With(self: KernelTyper, node: ast.With) -> list[ir.Statement]:
        if self.in_autodiff_block:
            self.fail(node, "autodiff blocks do not nest; end the outer block first")
        statements = self.check_autodiff_body(node)
        defined = set(self.locals)
        self.in_autodiff_block = True
        try:
            body = self.block(statements)
        finally:
            self.in_autodiff_block = False
        # the stage loads with the first block: kernels without one never import it
        from luisa_nb.kernels.autodiff.normalize import AutodiffError
        from luisa_nb.kernels.autodiff.reverse import differentiate

        try:
            expanded = differentiate(
                body, self.context.functions, self.locals, defined, self.autodiff_local
            )
        except AutodiffError as error:
            self.fail(node, f"this autodiff block cannot be differentiated: {error}")
        self.autodiff_blocks[(node.lineno, node.col_offset)] = expanded
        return list(expanded)

    def check_autodiff_body(self: KernelTyper, node: ast.With) -> list[ast.stmt]:
        """Reject, at their own position, constructs the autodiff stage cannot handle; the
        block's statements with each ``range`` bound that folds (a captured int, a constant
        local) written as its literal, so that the loop unrolls."""
        statements = copy.deepcopy(node.body)
        for inner in ast.walk(ast.Module(body=statements, type_ignores=[])):
            if isinstance(inner, ast.While):
                self.fail(
                    inner,
                    "a while loop cannot be differentiated (its trip count is unknown when "
                    "the kernel compiles); use `for i in range(N)` with a constant N",
                )
            if isinstance(inner, (ast.Break, ast.Continue, ast.Return)):
                self.fail(
                    inner,
                    f"{type(inner).__name__.lower()} inside an autodiff block cannot be "
                    f"differentiated; use an if around the statements to skip",
                )
            if isinstance(inner, ast.For) and isinstance(inner.iter, ast.Call):
                for position, argument in enumerate(inner.iter.args):
                    bound = self.constants.constant(argument, inner)
                    if bound is None:
                        self.fail(
                            argument,
                            "a loop in an autodiff block needs a trip count known when the "
                            "kernel compiles: range() of literals or captured constants",
                        )
                    literal = ast.copy_location(ast.Constant(bound), argument)
                    inner.iter.args[position] = literal
            is_atomic = isinstance(inner, ast.Attribute) and inner.attr.startswith("atomic_")
            if is_atomic:
                self.fail(
                    inner,
                    "atomics cannot be differentiated (their result depends on other "
                    "threads); do the atomic outside the autodiff block",
                )
        return statements

    def special_call(self: KernelTyper, node: ast.Call) -> ir.Expression | None:
        name = self.autodiff_call_name(node)
        if name is None:
            return super().special_call(node)
        if node.keywords:
            self.fail(node.keywords[0], f"{name}() takes no keyword arguments")
        if name == "autodiff":
            self.fail(node, "autodiff() opens a block: write `with autodiff():`")
        if name in BLOCK_ONLY and not self.in_autodiff_block:
            self.fail(node, f"{name}() works only inside a `with autodiff():` block")
        return getattr(self, f"autodiff_{name}")(node)

    def autodiff_arity(self: KernelTyper, node: ast.Call, low: int, high: int) -> None:
        if not low <= len(node.args) <= high:
            label = ast.unparse(node.func)
            expected = str(low) if low == high else f"{low} or {high}"
            self.fail(node, f"{label}() takes {expected} argument(s), got {len(node.args)}")

    def differentiable_local(self: KernelTyper, argument: ast.expr, label: str) -> str:
        if not (isinstance(argument, ast.Name) and argument.id in self.locals):
            self.fail(argument, f"{label}() takes local variables, e.g. {label}(x)")
        kind = self.locals[argument.id]
        if not builders.is_differentiable(kind):
            self.fail(argument, f"{argument.id!r} is {kind}; {label}() takes {DIFFERENTIABLE}")
        return argument.id

    def autodiff_requires_grad(self: KernelTyper, node: ast.Call) -> ir.Expression:
        if not node.args:
            self.fail(node, "requires_grad() takes the locals to differentiate by, e.g. (x, y)")
        names = tuple(self.differentiable_local(a, "requires_grad") for a in node.args)
        return RequiresGradient(None, names, node.lineno)

    def autodiff_backward(self: KernelTyper, node: ast.Call) -> ir.Expression:
        self.autodiff_arity(node, 1, 2)
        value = self.visit(node.args[0])
        if not builders.is_differentiable(value.type):
            self.fail(node.args[0], f"backward() takes {DIFFERENTIABLE}, got {value.type}")
        value = self.convert(value, value.type, node.args[0])
        if len(node.args) == 1:
            return Backward(None, value, builders.constant(value.type, 1.0), node.lineno)
        seed = self.visit(node.args[1])
        if isinstance(seed, ir.Constant) and seed.type is not ScalarType.BOOL:
            seed = builders.constant(value.type, float(seed.value))  # every component
        elif seed.type != value.type:
            self.fail(node.args[1], f"the seed of backward() must be {value.type}, got {seed.type}")
        return Backward(None, value, seed, node.lineno)

    def autodiff_grad(self: KernelTyper, node: ast.Call) -> ir.Expression:
        self.autodiff_arity(node, 1, 1)
        name = self.differentiable_local(node.args[0], "grad")
        return Gradient(self.locals[name], name, node.lineno)

    def autodiff_detach(self: KernelTyper, node: ast.Call) -> ir.Expression:
        self.autodiff_arity(node, 1, 1)
        value = self.visit(node.args[0])
        if self.in_autodiff_block:
            return Detach(value.type, value)
        if self.is_callable:
            self.fail(
                node,
                "detach() in a callable: luisa_nb inlines callables into autodiff blocks "
                "and does not carry detach() through them; detach the callable's argument "
                "or result in the block itself",
            )
        return value

    def autodiff_one(self: KernelTyper, node: ast.Call) -> ir.Expression:
        return self.filled_constant(node, 1)

    def autodiff_zero(self: KernelTyper, node: ast.Call) -> ir.Expression:
        return self.filled_constant(node, 0)

    def filled_constant(self: KernelTyper, node: ast.Call, number: int) -> ir.Expression:
        self.autodiff_arity(node, 1, 1)
        argument = node.args[0]
        kind = TYPE_NAMES.get(self.resolve(argument)) if self.is_capture_chain(argument) else None
        if kind is None:
            self.fail(argument, "one() and zero() take a scalar or vector type, e.g. float3")
        return builders.zero_of(kind) if number == 0 else _one_of(kind)


def _one_of(kind: Any) -> ir.Expression:
    element = builders.element_type(kind)
    value = True if element is ScalarType.BOOL else 1.0 if element.is_float else 1
    scalar = ir.Constant(element, value)
    return scalar if isinstance(kind, ScalarType) else ir.Construct(kind, (scalar,))
