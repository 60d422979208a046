"""The IR of autodiff calls while a block is typed. They never leave the block: the
transform in ``reverse`` replaces them with plain IR."""

from __future__ import annotations

from dataclasses import dataclass

from luisa_nb.kernels import ir


@dataclass(frozen=True)
class RequiresGradient(ir.Expression):
    """``requires_grad(a, b, ...)``: the locals whose gradients ``grad`` may ask for."""

    names: tuple[str, ...]
    line: int = 0


@dataclass(frozen=True)
class Backward(ir.Expression):
    """``backward(value[, seed])``: propagate ``seed`` (one by default) back from ``value``."""

    value: ir.Expression
    seed: ir.Expression
    line: int = 0


@dataclass(frozen=True)
class Gradient(ir.Expression):
    """``grad(name)``: the gradient of the backward value with respect to local ``name``."""

    name: str
    line: int = 0


@dataclass(frozen=True)
class Detach(ir.Expression):
    """``detach(value)``: ``value``, through which no gradient flows."""

    operand: ir.Expression


MARKERS = (RequiresGradient, Backward, Gradient)
