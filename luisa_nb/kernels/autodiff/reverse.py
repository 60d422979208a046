"""Reverse-mode differentiation of one normalized autodiff block.

The statements before ``backward`` become a forward sweep in single-assignment form:
every assignment writes a new local, and a branch ends by copying each local it changed
into one merged local, so no value the adjoint code needs is ever overwritten. The
adjoint sweep then visits that sweep backwards (the same branches, on the saved
conditions), adding each value's share of the gradient to its operands' adjoints.
Statements after ``backward`` read gradients; at the end, the block's locals get their
final values back under their own names.
"""

from __future__ import annotations

from collections.abc import Callable

from luisa_nb.kernels import ir
from luisa_nb.kernels.autodiff import builders as b
from luisa_nb.kernels.autodiff.derivatives import AdjointPropagation, UnsupportedDerivative
from luisa_nb.kernels.autodiff.markers import Backward, Detach, Gradient, RequiresGradient
from luisa_nb.kernels.autodiff.normalize import (
    AutodiffError,
    BlockNormalizer,
    map_expression,
    map_statement,
    renaming,
)
from luisa_nb.kernels.type_system import KernelType, ScalarType

Fresh = Callable[[object, str], str]


def differentiate(
    body: tuple[ir.Statement, ...],
    functions: list[ir.FunctionIR],
    local_types: dict[str, KernelType],
    defined: set[str],
    fresh: Fresh,
) -> tuple[ir.Statement, ...]:
    """Plain IR for the typed statements of one ``with autodiff():`` block; ``defined``
    are the locals that hold a value when the block starts."""
    statements = BlockNormalizer(functions, fresh).statements(body)
    return ReverseMode(local_types, defined, fresh).run(statements)


def _marker(statement: ir.Statement) -> ir.Expression | None:
    if isinstance(statement, ir.Evaluate) and isinstance(
        statement.value, (RequiresGradient, Backward)
    ):
        return statement.value
    return None


def _strip_detach(node: ir.Expression) -> ir.Expression | None:
    return node.operand if isinstance(node, Detach) else None


class ReverseMode:
    """Differentiates one normalized block; ``local_types`` gets the new locals' types."""

    def __init__(self, local_types: dict[str, KernelType], defined: set[str], fresh: Fresh) -> None:
        self.types = local_types
        self.defined = defined
        self.fresh_local = fresh
        self.active: dict[str, None] = {}  # the locals a gradient flows into, in order
        self.adjoints: dict[str, str] = {}
        self.marked: dict[str, str] = {}

    def fresh(self, kind: object, hint: str) -> str:
        name = self.fresh_local(kind, hint)
        self.types[name] = kind
        return name

    def run(self, statements: list[ir.Statement]) -> tuple[ir.Statement, ...]:
        for statement in statements:
            for nested in ir.walk_statements((statement,)):
                if nested is not statement and _marker(nested) is not None:
                    raise AutodiffError(
                        "requires_grad() and backward() go at the top level of the autodiff "
                        "block, not inside an if or a loop"
                    )
        backwards = [i for i, s in enumerate(statements) if isinstance(_marker(s), Backward)]
        if len(backwards) != 1:
            problem = "has no backward()" if not backwards else "calls backward() twice"
            raise AutodiffError(
                f"the autodiff block {problem}; call backward(value) once, after "
                f"requires_grad(...) and the computation, before grad(...)"
            )
        split = backwards[0]
        environment: dict[str, str] = {}
        forward: list[ir.Statement] = []
        for statement in statements[:split]:
            self._check_no_gradient(statement, "before backward()")
            forward += self.forward(statement, environment)
        backward = _marker(statements[split])
        value = self.renamed(backward.value, environment)
        if not isinstance(value, ir.Local):
            name = self.fresh(value.type, "output")
            forward.append(ir.Assign(name, value))
            self.note_activity(name, value)
            value = ir.Local(value.type, name)
        seed = self.renamed(backward.seed, environment)
        adjoint_sweep: list[ir.Statement] = [
            ir.Assign(self.adjoint_of(name), b.zero(self.types[name])) for name in list(self.active)
        ]
        if value.name in self.active:
            adjoint_sweep.append(ir.Assign(self.adjoint_of(value.name), seed))
        adjoint_sweep += self.reverse(forward)
        after: list[ir.Statement] = []
        for statement in statements[split + 1 :]:
            if isinstance(_marker(statement), RequiresGradient):
                raise AutodiffError("requires_grad() comes before backward()")
            statement = map_statement(
                statement, lambda node: self.gradient_value(node, environment)
            )
            after += self.forward(statement, environment)
        restored = [
            ir.Assign(name, ir.Local(self.types[name], version))
            for name, version in environment.items()
            if version != name
        ]
        result = [*forward, *adjoint_sweep, *after, *restored]
        return tuple(map_statement(statement, _strip_detach) for statement in result)

    def _check_no_gradient(self, statement: ir.Statement, where: str) -> None:
        def check(node: ir.Expression) -> None:
            if isinstance(node, Gradient):
                raise AutodiffError(f"grad({node.name}) is read {where}; read it after")

        map_statement(statement, check)

    def adjoint_of(self, name: str) -> str | None:
        if name not in self.active:
            return None
        if name not in self.adjoints:
            self.adjoints[name] = self.fresh(self.types[name], f"grad_{name}")
        return self.adjoints[name]

    def renamed(self, expression: ir.Expression, environment: dict[str, str]) -> ir.Expression:
        return map_expression(expression, renaming(environment))

    def depends(self, expression: ir.Expression) -> bool:
        return AdjointPropagation(self.adjoint_of, lambda kind: "").depends(expression)

    def note_activity(self, name: str, value: ir.Expression) -> None:
        if b.is_differentiable(self.types[name]) and self.depends(value):
            self.active[name] = None

    def gradient_value(
        self, node: ir.Expression, environment: dict[str, str]
    ) -> ir.Expression | None:
        """``grad(name)``: the adjoint of the value ``requires_grad`` named, else of the
        local's current value (zero when the output does not depend on it)."""
        if not isinstance(node, Gradient):
            return None
        version = self.marked.get(node.name, environment.get(node.name, node.name))
        adjoint = self.adjoint_of(version)
        kind = self.types[node.name]
        return b.zero(kind) if adjoint is None else ir.Local(kind, adjoint)

    def forward(self, statement: ir.Statement, environment: dict[str, str]) -> list[ir.Statement]:
        """``statement`` in single-assignment form; ``environment`` maps each local to the
        local holding its current value."""
        marker = _marker(statement)
        if isinstance(marker, RequiresGradient):
            for name in marker.names:
                version = environment.get(name, name)
                self.active[version] = None
                self.marked[name] = version
            return []
        if isinstance(statement, ir.Assign):
            value = self.renamed(statement.value, environment)
            name = self.fresh(self.types[statement.name], statement.name)
            environment[statement.name] = name
            self.note_activity(name, value)
            return [ir.Assign(name, value)]
        if isinstance(statement, ir.If):
            out: list[ir.Statement] = []
            condition = self.renamed(statement.condition, environment)
            if not isinstance(condition, (ir.Local, ir.Constant)):
                saved = self.fresh(ScalarType.BOOL, "taken")
                out.append(ir.Assign(saved, condition))
                condition = ir.Local(ScalarType.BOOL, saved)
            branches = []
            for body in (statement.body, statement.orelse):
                inner = dict(environment)
                lowered = [s for nested in body for s in self.forward(nested, inner)]
                branches.append((lowered, inner))
            changed = {
                name
                for _, inner in branches
                for name, version in inner.items()
                if environment.get(name, name) != version
            }
            for name in sorted(changed):
                merged = self.fresh(self.types[name], name)
                kind = self.types[name]
                for lowered, inner in branches:
                    version = inner.get(name, environment.get(name))
                    if version is None and name not in self.defined:
                        copied: ir.Expression = b.zero_of(kind)  # unset on this path
                    else:
                        copied = ir.Local(kind, version or name)
                    lowered.append(ir.Assign(merged, copied))
                    self.note_activity(merged, copied)
                environment[name] = merged
            body, orelse = (tuple(lowered) for lowered, _ in branches)
            return [*out, ir.If(condition, body, orelse)]
        return [map_statement(statement, renaming(environment))]

    def reverse(self, forward: list[ir.Statement] | tuple[ir.Statement, ...]) -> list[ir.Statement]:
        """The adjoint code of the forward sweep ``forward``, last statement first."""
        out: list[ir.Statement] = []
        for statement in reversed(forward):
            if isinstance(statement, ir.Assign) and statement.name in self.active:
                propagation = AdjointPropagation(
                    self.adjoint_of, lambda kind: self.fresh(kind, "adjoint")
                )
                adjoint = ir.Local(self.types[statement.name], self.adjoint_of(statement.name))
                try:
                    propagation.propagate(statement.value, adjoint)
                except UnsupportedDerivative as error:
                    raise AutodiffError(
                        f"{error}; detach() it or compute it outside the autodiff block"
                    ) from None
                out += propagation.statements
            elif isinstance(statement, ir.If):
                body, orelse = self.reverse(statement.body), self.reverse(statement.orelse)
                if body or orelse:
                    out.append(ir.If(statement.condition, tuple(body), tuple(orelse)))
        return out
