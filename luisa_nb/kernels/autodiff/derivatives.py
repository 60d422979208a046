"""The adjoint of each IR expression: given the gradient flowing into an expression, the
statements that add each active local's share to its adjoint (reverse mode)."""

from __future__ import annotations

import math
from collections.abc import Callable

from luisa_nb.kernels import ir
from luisa_nb.kernels.autodiff import builders as b
from luisa_nb.kernels.autodiff.markers import Detach
from luisa_nb.kernels.type_system import MatrixType, ScalarType, VectorType

NO_GRADIENT = frozenset(
    ("floor", "ceil", "trunc", "round", "sign", "step", "isnan", "isinf", "any", "all")
)
LN2, LN10 = math.log(2.0), math.log(10.0)


class UnsupportedDerivative(Exception):
    """An operation inside an autodiff block that has no derivative here."""


class AdjointPropagation:
    """Adds the adjoint code of expressions to ``statements``. ``adjoint_of(name)`` names
    the adjoint local of an active local (None for inactive ones); ``fresh(kind)`` makes a
    new hidden local."""

    def __init__(
        self,
        adjoint_of: Callable[[str], str | None],
        fresh: Callable[[object], str],
    ) -> None:
        self.adjoint_of = adjoint_of
        self.fresh = fresh
        self.statements: list[ir.Statement] = []

    def depends(self, expression: ir.Expression) -> bool:
        """Whether a gradient can flow into ``expression`` (it reads an active local)."""
        pending = [expression]
        while pending:
            node = pending.pop()
            if isinstance(node, Detach):
                continue
            if isinstance(node, ir.Local) and self.adjoint_of(node.name) is not None:
                return True
            pending.extend(ir.subexpressions(node))
        return False

    def hold(self, expression: ir.Expression) -> ir.Expression:
        """``expression`` kept in a hidden local, so that using it twice computes it once."""
        if isinstance(expression, (ir.Local, ir.Constant)):
            return expression
        name = self.fresh(expression.type)
        self.statements.append(ir.Assign(name, expression))
        return ir.Local(expression.type, name)

    def propagate(self, expression: ir.Expression, adjoint: ir.Expression) -> None:
        """Send ``adjoint`` (the gradient of the output with respect to ``expression``)
        back to the active locals ``expression`` reads."""
        if not b.is_differentiable(expression.type) or not self.depends(expression):
            return
        if isinstance(expression, ir.Local):
            name = self.adjoint_of(expression.name)
            current = ir.Local(expression.type, name)
            self.statements.append(ir.Assign(name, b.add(current, adjoint)))
            return
        adjoint = self.hold(b.broadcast(adjoint, expression.type))
        rule = getattr(self, f"adjoint_{type(expression).__name__.lower()}", None)
        if rule is None:
            raise UnsupportedDerivative(f"{type(expression).__name__} has no derivative")
        rule(expression, adjoint)

    def adjoint_cast(self, expression: ir.Cast, adjoint: ir.Expression) -> None:
        operand = expression.operand
        if b.is_differentiable(operand.type):
            self.propagate(operand, ir.Cast(operand.type, adjoint))

    def adjoint_unary(self, expression: ir.Unary, adjoint: ir.Expression) -> None:
        if expression.operator == "neg":
            self.propagate(expression.operand, b.neg(adjoint))

    def adjoint_select(self, expression: ir.Select, adjoint: ir.Expression) -> None:
        condition = expression.condition
        if isinstance(condition.type, VectorType):
            kind = expression.type
            condition = self.hold(condition)

            def part(choose_true: bool) -> ir.Expression:
                def make(k: int) -> ir.Expression:
                    taken = b.component(condition, k)
                    gradient, nothing = b.component(adjoint, k), b.constant(ScalarType.FLOAT32, 0)
                    pair = (gradient, nothing) if choose_true else (nothing, gradient)
                    return b.select(taken, *pair)

                return b.componentwise(kind, make)

            self.propagate(expression.if_true, part(True))
            self.propagate(expression.if_false, part(False))
            return
        condition = self.hold(condition)
        nothing = b.zero(expression.type)
        self.propagate(expression.if_true, b.select(condition, adjoint, nothing))
        self.propagate(expression.if_false, b.select(condition, nothing, adjoint))

    def adjoint_member(self, expression: ir.Member, adjoint: ir.Expression) -> None:
        operand = expression.operand
        letters = "xyzw"

        def make(k: int) -> ir.Expression:
            total: ir.Expression = b.constant(operand.type.element, 0.0)
            for position, letter in enumerate(expression.field):
                if letters.index(letter) == k:
                    total = b.add(total, b.component(adjoint, position))
            return total

        self.propagate(operand, b.componentwise(operand.type, make))

    def adjoint_element(self, expression: ir.Element, adjoint: ir.Expression) -> None:
        operand = expression.operand
        index = self.hold(expression.index)
        if isinstance(operand.type, MatrixType):
            nothing = b.zero(operand.type.column)

            def column(k: int) -> ir.Expression:
                position = ir.Constant(index.type, k)
                return b.select(b.compare("eq", index, position), adjoint, nothing)

            self.propagate(operand, b.by_columns(operand.type, column))
            return
        if not isinstance(operand.type, VectorType):
            raise UnsupportedDerivative(f"indexing {operand.type} has no derivative here")
        nothing = b.constant(operand.type.element, 0.0)

        def make(k: int) -> ir.Expression:
            position = ir.Constant(index.type, k)
            return b.select(b.compare("eq", index, position), adjoint, nothing)

        self.propagate(operand, b.componentwise(operand.type, make))

    def adjoint_construct(self, expression: ir.Construct, adjoint: ir.Expression) -> None:
        kind = expression.type
        arguments = expression.arguments
        if isinstance(kind, MatrixType):
            self.matrix_construct(kind, arguments, adjoint)
            return
        if not isinstance(kind, VectorType):
            raise UnsupportedDerivative(f"building {kind} has no derivative here")
        if len(arguments) == 1 and not isinstance(arguments[0].type, VectorType):
            self.propagate(arguments[0], b.component_sum(adjoint))
            return
        position = 0
        for argument in arguments:
            width = b.length_of(argument.type)
            start = position
            part = b.componentwise(argument.type, lambda k, s=start: b.component(adjoint, s + k))
            self.propagate(argument, part)
            position += width

    def matrix_construct(self, kind: MatrixType, arguments, adjoint: ir.Expression) -> None:
        """A matrix from its columns, from its elements column by column, or a diagonal
        from one scalar."""
        size = kind.size
        if len(arguments) == 1 and isinstance(arguments[0].type, ScalarType):
            diagonal = [b.component(b.column(adjoint, j), j) for j in range(size)]
            total = diagonal[0]
            for element in diagonal[1:]:
                total = b.add(total, element)
            self.propagate(arguments[0], total)
        elif len(arguments) == size:
            for j, argument in enumerate(arguments):
                self.propagate(argument, b.column(adjoint, j))
        elif len(arguments) == size * size:
            for k, argument in enumerate(arguments):
                self.propagate(argument, b.component(b.column(adjoint, k // size), k % size))
        else:
            raise UnsupportedDerivative(f"resizing a matrix to {kind} has no derivative here")

    def matrix_product(self, expression: ir.Binary, adjoint: ir.Expression) -> None:
        """``m * v``, ``m * n``, ``s * m``, ``m * s`` and ``m / s``."""
        left, right = expression.left, expression.right
        if expression.operator == "truediv":
            self.propagate(left, ir.Binary(left.type, "truediv", adjoint, right))
            share = b.frobenius(adjoint, left)
            self.propagate(right, b.neg(b.div(b.div(share, right), right)))
            return
        if isinstance(left.type, ScalarType) or isinstance(right.type, ScalarType):
            scalar, matrix = (left, right) if isinstance(left.type, ScalarType) else (right, left)
            self.propagate(matrix, ir.Binary(matrix.type, "mul", scalar, adjoint))
            self.propagate(scalar, b.frobenius(adjoint, matrix))
            return
        transposed = b.matrix_call("transpose", left)
        self.propagate(right, ir.Binary(right.type, "mul", transposed, adjoint))
        if isinstance(right.type, MatrixType):
            share = ir.Binary(left.type, "mul", adjoint, b.matrix_call("transpose", right))
        else:
            right = self.hold(right)
            share = b.by_columns(left.type, lambda j: b.mul(adjoint, b.component(right, j)))
        self.propagate(left, share)

    def adjoint_binary(self, expression: ir.Binary, adjoint: ir.Expression) -> None:
        left, right, operator = expression.left, expression.right, expression.operator
        matrices = isinstance(left.type, MatrixType) or isinstance(right.type, MatrixType)
        if matrices and operator in ("mul", "truediv"):
            self.matrix_product(expression, adjoint)
        elif operator == "add":
            self.propagate(left, adjoint)
            self.propagate(right, adjoint)
        elif operator == "sub":
            self.propagate(left, adjoint)
            self.propagate(right, b.neg(adjoint))
        elif operator == "mul":
            self.propagate(left, b.mul(adjoint, right))
            self.propagate(right, b.mul(adjoint, left))
        elif operator == "truediv":
            self.propagate(left, b.div(adjoint, right))
            quotient = b.div(left, right)
            self.propagate(right, b.neg(b.div(b.mul(adjoint, quotient), right)))
        elif operator == "pow":
            self.power(left, right, expression, adjoint)
        elif operator in ("floordiv", "mod"):
            self.propagate(left, adjoint)
            if operator == "mod":
                self.propagate(right, b.neg(b.mul(adjoint, b.call("floor", b.div(left, right)))))
        else:
            raise UnsupportedDerivative(f"operator {operator!r} has no derivative")

    def power(
        self,
        base: ir.Expression,
        exponent: ir.Expression,
        result: ir.Expression,
        adjoint: ir.Expression,
    ) -> None:
        one = b.constant(b.element_type(exponent.type), 1.0)
        lowered = b.call("pow", base, b.sub(exponent, one))
        self.propagate(base, b.mul(adjoint, b.mul(exponent, lowered)))
        if self.depends(exponent):
            self.propagate(exponent, b.mul(adjoint, b.mul(result, b.call("log", base))))

    def adjoint_call(self, expression: ir.Call, adjoint: ir.Expression) -> None:
        name, arguments = expression.function, expression.arguments
        if name in NO_GRADIENT:
            return
        rule = UNARY_RULES.get(name)
        if rule is not None:
            (operand,) = arguments
            self.propagate(operand, b.mul(adjoint, rule(operand, expression)))
            return
        method = getattr(self, f"call_{name}", None)
        if method is None:
            raise UnsupportedDerivative(f"{name}() has no derivative here")
        method(arguments, expression, adjoint)

    def call_pow(self, arguments, result, adjoint) -> None:
        self.power(arguments[0], arguments[1], result, adjoint)

    def call_atan2(self, arguments, result, adjoint) -> None:
        y, x = arguments
        scale = self.hold(b.div(adjoint, b.add(b.mul(x, x), b.mul(y, y))))
        self.propagate(y, b.mul(scale, x))
        self.propagate(x, b.neg(b.mul(scale, y)))

    def call_copysign(self, arguments, result, adjoint) -> None:
        magnitude, _ = arguments
        self.propagate(magnitude, b.mul(adjoint, b.div(result, magnitude)))

    def call_fmod(self, arguments, result, adjoint) -> None:
        x, y = arguments
        self.propagate(x, adjoint)
        self.propagate(y, b.neg(b.mul(adjoint, b.call("trunc", b.div(x, y)))))

    def call_mod(self, arguments, result, adjoint) -> None:
        x, y = arguments
        self.propagate(x, adjoint)
        self.propagate(y, b.neg(b.mul(adjoint, b.call("floor", b.div(x, y)))))

    def call_lerp(self, arguments, result, adjoint) -> None:
        start, end, weight = arguments
        one = b.constant(b.element_type(weight.type), 1.0)
        self.propagate(start, b.mul(adjoint, b.sub(one, weight)))
        self.propagate(end, b.mul(adjoint, weight))
        self.propagate(weight, b.mul(adjoint, b.sub(end, start)))

    def call_fma(self, arguments, result, adjoint) -> None:
        first, second, third = arguments
        self.propagate(first, b.mul(adjoint, second))
        self.propagate(second, b.mul(adjoint, first))
        self.propagate(third, adjoint)

    def call_smoothstep(self, arguments, result, adjoint) -> None:
        low, high, x = arguments
        kind = result.type
        one, six = b.constant(b.element_type(kind), 1.0), b.constant(b.element_type(kind), 6.0)
        width = self.hold(b.sub(high, low))
        zero = b.constant(b.element_type(kind), 0.0)
        t = self.hold(b.call("clamp", b.div(b.sub(x, low), width), zero, one))
        slope = self.hold(b.div(b.mul(adjoint, b.mul(six, b.mul(t, b.sub(one, t)))), width))
        self.propagate(x, slope)
        self.propagate(high, b.neg(b.mul(slope, t)))
        self.propagate(low, b.mul(slope, b.sub(t, one)))

    def call_abs(self, arguments, result, adjoint) -> None:
        (operand,) = arguments
        zero = b.constant(b.element_type(operand.type), 0.0)
        negative = self.by_component(
            adjoint, [operand], lambda values: b.compare("lt", values[0], zero), negate=True
        )
        self.propagate(operand, negative)

    def by_component(self, adjoint, operands, test, negate: bool = False) -> ir.Expression:
        """Per component: the adjoint where ``test`` of the operands' components fails,
        zero (or the negated adjoint, with ``negate``) where it holds."""
        kind = adjoint.type
        held = [self.hold(operand) for operand in operands]

        def make(k: int) -> ir.Expression:
            gradient = b.component(adjoint, k)
            other = b.neg(gradient) if negate else b.constant(b.element_type(kind), 0.0)
            return b.select(test([b.component(v, k) for v in held]), other, gradient)

        return b.componentwise(kind, make)

    def extremum(self, arguments, result, adjoint) -> None:
        """min/max: the gradient goes to the first argument equal to the result."""
        result = self.hold(result)
        earlier: list[ir.Expression] = []
        for argument in arguments:
            held = self.hold(argument)
            before = list(earlier)

            def differs(values) -> ir.Expression:
                condition = b.compare("ne", values[0], values[1])
                for value in values[2:]:
                    earlier_equal = b.compare("eq", value, values[1])
                    condition = ir.Binary(b.BOOL, "or", condition, earlier_equal)
                return condition

            self.propagate(argument, self.by_component(adjoint, [held, result, *before], differs))
            earlier.append(held)

    call_min = extremum
    call_max = extremum

    def call_clamp(self, arguments, result, adjoint) -> None:
        x, low, high = (self.hold(argument) for argument in arguments)

        def outside(values) -> ir.Expression:
            value, lower, upper = values
            below, above = b.compare("lt", value, lower), b.compare("gt", value, upper)
            return ir.Binary(b.BOOL, "or", below, above)

        def not_below(values) -> ir.Expression:
            value, lower, upper = values
            return ir.Binary(
                b.BOOL, "or", b.compare("ge", value, lower), b.compare("gt", lower, upper)
            )

        def not_above(values) -> ir.Expression:
            value, lower, upper = values
            return b.compare("le", b.call("max", value, lower), upper)

        self.propagate(arguments[0], self.by_component(adjoint, [x, low, high], outside))
        self.propagate(arguments[1], self.by_component(adjoint, [x, low, high], not_below))
        self.propagate(arguments[2], self.by_component(adjoint, [x, low, high], not_above))

    def call_transpose(self, arguments, result, adjoint) -> None:
        self.propagate(arguments[0], b.matrix_call("transpose", adjoint))

    def call_determinant(self, arguments, result, adjoint) -> None:
        (matrix,) = arguments
        inverse_transposed = b.matrix_call("transpose", b.matrix_call("inverse", matrix))
        scale = b.mul(adjoint, result)
        self.propagate(matrix, ir.Binary(matrix.type, "mul", scale, inverse_transposed))

    def call_inverse(self, arguments, result, adjoint) -> None:
        (matrix,) = arguments
        transposed = self.hold(b.matrix_call("transpose", result))
        product = ir.Binary(matrix.type, "mul", transposed, adjoint)
        self.propagate(matrix, b.neg(ir.Binary(matrix.type, "mul", product, transposed)))

    def call_dot(self, arguments, result, adjoint) -> None:
        left, right = arguments
        self.propagate(left, b.mul(adjoint, right))
        self.propagate(right, b.mul(adjoint, left))

    def call_length(self, arguments, result, adjoint) -> None:
        (v,) = arguments
        self.propagate(v, b.mul(b.div(adjoint, result), v))

    def call_length_squared(self, arguments, result, adjoint) -> None:
        (v,) = arguments
        self.propagate(v, b.mul(b.mul(adjoint, b.constant(ScalarType.FLOAT32, 2.0)), v))

    def call_normalize(self, arguments, result, adjoint) -> None:
        (v,) = arguments
        unit = self.hold(result)
        size = b.scalar_call("length", v)
        along = b.mul(unit, b.scalar_call("dot", unit, adjoint))
        self.propagate(v, b.div(b.sub(adjoint, along), size))

    def call_cross(self, arguments, result, adjoint) -> None:
        left, right = arguments
        self.propagate(left, ir.Call(left.type, "cross", (right, adjoint)))
        self.propagate(right, ir.Call(right.type, "cross", (adjoint, left)))

    def call_reflect(self, arguments, result, adjoint) -> None:
        incident, normal = (self.hold(argument) for argument in arguments)
        two = b.constant(ScalarType.FLOAT32, 2.0)
        along = self.hold(b.scalar_call("dot", normal, adjoint))
        self.propagate(arguments[0], b.sub(adjoint, b.mul(b.mul(two, along), normal)))
        facing = b.scalar_call("dot", normal, incident)
        share = b.add(b.mul(facing, adjoint), b.mul(along, incident))
        self.propagate(arguments[1], b.neg(b.mul(two, share)))

    def call_faceforward(self, arguments, result, adjoint) -> None:
        normal, incident, reference = arguments
        facing = b.compare(
            "lt", b.scalar_call("dot", reference, incident), b.constant(ScalarType.FLOAT32, 0)
        )
        self.propagate(normal, b.select(facing, adjoint, b.neg(adjoint)))

    def adjoint_detach(self, expression: Detach, adjoint: ir.Expression) -> None:
        """No gradient flows through ``detach``."""


def _one(kind) -> ir.Expression:
    return b.constant(b.element_type(kind), 1.0)


def _square(value: ir.Expression) -> ir.Expression:
    return b.mul(value, value)


UNARY_RULES: dict[str, Callable[[ir.Expression, ir.Expression], ir.Expression]] = {
    # d result / d x, from the operand x and the result r
    "sqrt": lambda x, r: b.div(b.constant(b.element_type(x.type), 0.5), r),
    "rsqrt": lambda x, r: b.div(b.mul(b.constant(b.element_type(x.type), -0.5), r), x),
    "sin": lambda x, r: b.call("cos", x),
    "cos": lambda x, r: b.neg(b.call("sin", x)),
    "tan": lambda x, r: b.add(_one(x.type), _square(r)),
    "asin": lambda x, r: b.call("rsqrt", b.sub(_one(x.type), _square(x))),
    "acos": lambda x, r: b.neg(b.call("rsqrt", b.sub(_one(x.type), _square(x)))),
    "atan": lambda x, r: b.div(_one(x.type), b.add(_one(x.type), _square(x))),
    "sinh": lambda x, r: b.call("cosh", x),
    "cosh": lambda x, r: b.call("sinh", x),
    "tanh": lambda x, r: b.sub(_one(x.type), _square(r)),
    "asinh": lambda x, r: b.call("rsqrt", b.add(_square(x), _one(x.type))),
    "acosh": lambda x, r: b.call("rsqrt", b.sub(_square(x), _one(x.type))),
    "atanh": lambda x, r: b.div(_one(x.type), b.sub(_one(x.type), _square(x))),
    "exp": lambda x, r: r,
    "exp2": lambda x, r: b.mul(r, b.constant(b.element_type(x.type), LN2)),
    "exp10": lambda x, r: b.mul(r, b.constant(b.element_type(x.type), LN10)),
    "log": lambda x, r: b.div(_one(x.type), x),
    "log2": lambda x, r: b.div(_one(x.type), b.mul(x, b.constant(b.element_type(x.type), LN2))),
    "log10": lambda x, r: b.div(_one(x.type), b.mul(x, b.constant(b.element_type(x.type), LN10))),
    "fract": lambda x, r: _one(x.type),
}
