"""Lanes: threads with loops run side by side, so that the compiler vectorizes across them.

A kernel whose body has loops runs its threads one by one (``c/launch.py``): the compiler
cannot vectorize a loop over threads that holds a loop of its own with a data-dependent
exit. Where the body allows it (:func:`runs_in_lanes`), the block function instead runs
groups of ``lane_width`` threads through ``<entry>_lanes``, in which each kernel local is
an array with one element per lane and each run of plain statements is one loop over the
lanes, guarded by a mask of the lanes that execute it. Control flow becomes masks:

- ``if``: the lanes of the current mask for which the condition holds run the body, the
  others the ``else``;
- loops: a loop mask holds the lanes still looping and a body mask those running this
  iteration; the loop goes round while any lane is in it;
- ``break`` takes the lanes that reach it out of every mask from the loop mask inwards,
  ``continue`` out of those from the body mask inwards, ``return`` out of all.

Each lane runs the statements a thread would, in the same order, and computes each value
with the same C expression as the thread function, so results are bit-identical; only the
interleaving of threads changes, which a kernel can observe only by racing on a buffer
(threads of a dispatch run in no set order on a GPU either). A group runs with one state
that ORs failed checks together (as simd loops do, ``c/checks.py``); a group that failed
re-runs its threads one by one, writes skipped, to find the first failing thread.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.type_system import ScalarType, VectorType

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter

PLAIN_STATEMENTS = (ir.Assign, ir.BufferWrite, ir.Store, ir.Evaluate)
LANE_STATEMENTS = (*PLAIN_STATEMENTS, ir.If, ir.While, ir.ForRange, ir.Break, ir.Continue)
LANE_EXPRESSIONS = (
    ir.Constant, ir.Local, ir.DispatchValue, ir.Member, ir.Element, ir.Construct,
    ir.BufferRead, ir.Unary, ir.Binary, ir.Select, ir.Cast, ir.Call,
)  # fmt: skip
LaneSet = tuple[str, str, list[tuple[str, str]]]
"""A value stored by :meth:`LaneEmission.lane_selects`: its C type, its expression, and
each target with the part of the value it takes (``""``, or a component: ``".x"``)."""
TRAPPING_INTEGER_OPERATIONS = frozenset({"truediv", "floordiv", "mod", "fmod"})
LANE_FUNCTIONS = """\
/* Whether any of a group's lanes is set in `mask`. */
static inline int32_t lnb_any_lane(const int32_t *mask, int32_t lanes) {
    int32_t any = 0;
    for (int32_t lane = 0; lane < lanes; ++lane) any |= mask[lane];
    return any;
}"""


def runs_in_lanes(kernel: ir.KernelIR) -> bool:
    """Whether the kernel's threads can run as lanes: a body with loops, of scalar and
    vector locals, without callables, atomics, images, bindless arrays, blocks or prints
    (their emission assumes one thread at a time)."""
    if not kernel.has_control_flow or kernel.uses_blocks or kernel.prints or kernel.functions:
        return False
    if not all(isinstance(kind, (ScalarType, VectorType)) for kind in kernel.locals.values()):
        return False
    for statement in ir.walk_statements(kernel.body):
        if isinstance(statement, ir.Return):
            if statement.value is not None:
                return False
        elif not isinstance(statement, LANE_STATEMENTS):
            return False
        if isinstance(statement, ir.Assign) and isinstance(statement.value, ir.SharedArray):
            return False
        if isinstance(statement, ir.Store) and not _component_store(statement):
            return False
        for expression in ir.statement_expressions(statement):
            nodes = ir.walk_expression(expression)
            if not all(isinstance(node, LANE_EXPRESSIONS) for node in nodes):
                return False
    return True


def _component_store(statement: ir.Store) -> bool:
    """Whether a store sets one component of a vector local (``v.x = ...``): the only
    store of lanes, whose vector locals are one array per component."""
    place = statement.place
    return (
        isinstance(place, ir.Member)
        and len(place.field) == 1
        and isinstance(place.operand, ir.Local)
        and isinstance(place.operand.type, VectorType)
    )


def speculable(*expressions: ir.Expression) -> bool:
    """Whether ``expressions`` may be computed for lanes that do not run them: no buffer
    reads (which note failed checks and may fault) and no integer division (which traps
    on zero)."""
    for expression in expressions:
        for node in ir.walk_expression(expression):
            if isinstance(node, ir.BufferRead):
                return False
            operation = getattr(node, "operator", getattr(node, "function", None))
            scalar = node.type.element if isinstance(node.type, VectorType) else node.type
            integer = isinstance(scalar, ScalarType) and not scalar.is_float
            if integer and operation in TRAPPING_INTEGER_OPERATIONS:
                return False
    return True


class LaneEmission:
    """Mixin of :class:`CEmitter` that emits ``<entry>_lanes`` and the block function that
    runs a block's threads through it."""

    lane_width = 32  # threads a group, as in a GPU's warp
    lane_stack_bytes = 256 << 10  # at most this much stack for a group's locals

    @cached_property
    def in_lanes(self: CEmitter) -> bool:
        """Whether this kernel's threads run as lanes (see :func:`runs_in_lanes`), with
        locals that fit ``lane_stack_bytes`` (an OpenMP thread's stack may be 2 MiB)."""
        if self.lane_width <= 0 or not runs_in_lanes(self.kernel):
            return False
        per_lane = sum(kind.dtype.itemsize for kind in self.kernel.locals.values())
        return per_lane * self.lane_width <= self.lane_stack_bytes

    def lane_variable(self: CEmitter, name: str) -> str | None:
        """A kernel local while ``<entry>_lanes`` is emitted: the current lane's element;
        a vector's is made of its components' (an array per component: the compiler
        vectorizes arrays of structs poorly)."""
        if not self.emitting_lanes or name not in self.kernel.locals:
            return None
        kind = self.kernel.locals[name]
        if isinstance(kind, VectorType):
            parts = ", ".join(self.lane_component(name, field) for field in kind.fields)
            return f"({self.compound(self.type_name(kind), parts)})"
        return f"v_{self.identifier(name)}[lnb_l]"

    def lane_component(self: CEmitter, name: str, field: str) -> str:
        """Component ``field`` of the vector local ``name`` in the current lane."""
        return f"v_{self.identifier(name)}_{field}[lnb_l]"

    def lanes_function(self: CEmitter) -> str:
        """``<entry>_lanes``: threads ``x0 <= x < min(x0 + lane_width, end)`` of row
        ``(y, z)`` side by side (see the module's docstring)."""
        width = self.lane_width
        parameters = self.body_parameters()
        parameters[0] = "int32_t lnb_x0, int32_t lnb_end, int32_t y, int32_t z"
        lines = [f"{self.function_prefix} void {self.entry_name}_lanes({', '.join(parameters)}) {{"]
        for name, kind in self.kernel.locals.items():
            identifier = self.identifier(name)
            if isinstance(kind, VectorType):
                arrays = ", ".join(f"v_{identifier}_{f}[{width}] = {{0}}" for f in kind.fields)
                lines.append(f"    {self.type_name(kind.element)} {arrays};")
            else:
                lines.append(f"    {self.type_name(kind)} v_{identifier}[{width}] = {{0}};")
        lines.append(f"    int32_t lnb_m0[{width}];")
        lines += self.every_lane(["lnb_m0[lnb_l] = lnb_x0 + lnb_l < lnb_end;"], 1)
        self.emitting_lanes = True
        self.lane_masks: list[tuple[str, str]] = [("lnb_m0", "function")]
        self.lane_mask_counter = 1
        try:
            lines += self.lane_statements(self.kernel.body, 1)
        finally:
            self.emitting_lanes = False
        lines.append("}")
        return "\n".join(lines)

    def new_masks(self: CEmitter, depth: int) -> tuple[str, str, str]:
        """Two new mask arrays and the line declaring them."""
        first, second = (f"lnb_m{self.lane_mask_counter + i}" for i in range(2))
        self.lane_mask_counter += 2
        width = self.lane_width
        return first, second, f"{'    ' * depth}int32_t {first}[{width}], {second}[{width}];"

    def every_lane(self: CEmitter, body: list[str], depth: int, simd: bool = True) -> list[str]:
        """``body`` for every lane of the group. ``simd``: the body only computes (no
        buffer access, nothing that traps, no branch on a lane's mask), so the loop runs
        as simd: ``omp simd``, as a compiler unrolls a loop of a few iterations completely
        before it would vectorize it."""
        indent = "    " * depth
        return [
            *(("#pragma omp simd",) if simd else ()),
            f"{indent}for (int32_t lnb_l = 0; lnb_l < {self.lane_width}; ++lnb_l) {{",
            f"{indent}    const lnb_int3 dispatch_id = {{lnb_x0 + lnb_l, y, z}};",
            *(f"{indent}    {line}" for line in body),
            f"{indent}}}",
        ]

    def lane_branches(self: CEmitter, mask: str, body: list[str], depth: int) -> list[str]:
        """``body`` (C statements of one lane) for the lanes set in ``mask``, one by one."""
        return self.every_lane([f"if (!{mask}[lnb_l]) continue;", *body], depth, simd=False)

    def lane_selects(self: CEmitter, mask: str, sets: list[LaneSet], depth: int) -> list[str]:
        """Each of ``sets`` in order, for every lane: its value computed, and stored where
        ``mask`` (an expression of a lane) holds."""
        lines = [f"const int32_t lnb_on = {mask};"]
        for type_text, value, targets in sets:
            stores = " ".join(
                f"{target} = lnb_on ? lnb_value{part} : {target};" for target, part in targets
            )
            lines.append(f"{{ const {type_text} lnb_value = {value}; {stores} }}")
        return self.every_lane(lines, depth)

    def lane_statements(self: CEmitter, body: tuple[ir.Statement, ...], depth: int) -> list[str]:
        """``body`` under the current mask: runs of plain statements share one lane loop."""
        lines: list[str] = []
        plain: list[ir.Statement] = []

        def flush() -> None:
            if plain:
                lines.extend(self.plain_run(tuple(plain), depth))
                plain.clear()

        for statement in body:
            if isinstance(statement, PLAIN_STATEMENTS):
                plain.append(statement)
                continue
            flush()
            lines += self.lane_statement(statement, depth)
        flush()
        return lines

    def plain_run(self: CEmitter, run: tuple[ir.Statement, ...], depth: int) -> list[str]:
        """Assignments, stores, buffer writes and evaluations in order, for the current
        lanes: as selects where every value may be computed for every lane."""
        mask = self.lane_masks[-1][0]
        expressions = [e for statement in run for e in ir.statement_expressions(statement)]
        if not any(isinstance(s, ir.BufferWrite) for s in run) and speculable(*expressions):
            sets = [self.lane_set(s) for s in run if not isinstance(s, ir.Evaluate)]
            return self.lane_selects(f"{mask}[lnb_l]", sets, depth) if sets else []
        lines = []
        for statement in run:
            if isinstance(statement, (ir.Assign, ir.Store)):
                type_text, value, targets = self.lane_set(statement)
                stores = " ".join(f"{target} = lnb_value{part};" for target, part in targets)
                lines.append(f"{{ const {type_text} lnb_value = {value}; {stores} }}")
            else:
                lines += self.statement(statement, 0)
        return self.lane_branches(mask, lines, depth)

    def lane_set(self: CEmitter, statement: ir.Assign | ir.Store) -> LaneSet:
        """What an assignment or a store sets in a lane: a vector local, each component."""
        value = self.expression(statement.value)
        if isinstance(statement, ir.Store):
            place = statement.place
            target = self.lane_component(place.operand.name, place.field)
            return self.type_name(statement.value.type), value, [(target, "")]
        kind = self.kernel.locals[statement.name]
        if isinstance(kind, VectorType):
            targets = [
                (self.lane_component(statement.name, field), f".{field}") for field in kind.fields
            ]
        else:
            targets = [(self.variable_name(statement.name), "")]
        return self.type_name(kind), value, targets

    def lane_statement(self: CEmitter, statement: ir.Statement, depth: int) -> list[str]:
        if isinstance(statement, ir.If):
            return self.lane_if(statement, depth)
        if isinstance(statement, (ir.ForRange, ir.While)):
            return self.lane_loop_statement(statement, depth)
        kinds = {ir.Break: "loop", ir.Continue: "body", ir.Return: "function"}
        return self.leave(kinds[type(statement)], depth)

    def leave(self: CEmitter, target: str, depth: int) -> list[str]:
        """The current lanes leave every mask from the innermost of kind ``target``
        inwards."""
        start = max(i for i, (_, kind) in enumerate(self.lane_masks) if kind == target)
        current = self.lane_masks[-1][0]
        clear = [f"{mask}[lnb_l] &= !lnb_leaving;" for mask, _ in self.lane_masks[start:]]
        return self.every_lane([f"const int32_t lnb_leaving = {current}[lnb_l];", *clear], depth)

    def lane_test(
        self: CEmitter,
        mask: str,
        condition: ir.Expression | str,
        targets: tuple[str, str],
        depth: int,
        otherwise: bool = False,
    ) -> list[str]:
        """``targets[0]`` := the lanes of ``mask`` for which ``condition`` holds;
        ``targets[1]`` := the same, or with ``otherwise``, the other lanes of ``mask``."""
        pure = isinstance(condition, str) or speculable(condition)
        text = condition if isinstance(condition, str) else self.expression(condition)
        test = f"(({text}) != 0)"
        second = "lnb_on & !lnb_taken" if otherwise else "lnb_taken"
        if pure:
            decide = [f"const int32_t lnb_taken = lnb_on & {test};"]
        else:
            decide = ["int32_t lnb_taken = 0;", f"if (lnb_on) lnb_taken = {test};"]
        return self.every_lane(
            [
                f"const int32_t lnb_on = {mask}[lnb_l];",
                *decide,
                f"{targets[0]}[lnb_l] = lnb_taken;",
                f"{targets[1]}[lnb_l] = {second};",
            ],
            depth,
            pure,
        )

    def lane_if(self: CEmitter, statement: ir.If, depth: int) -> list[str]:
        indent = "    " * depth
        parent = self.lane_masks[-1][0]
        taken, other, declaration = self.new_masks(depth)
        lines = [
            declaration,
            *self.lane_test(parent, statement.condition, (taken, other), depth, otherwise=True),
        ]
        for mask, body in ((taken, statement.body), (other, statement.orelse)):
            if not body:
                continue
            self.lane_masks.append((mask, "if"))
            inner = self.lane_statements(body, depth + 1)
            self.lane_masks.pop()
            lines += [
                f"{indent}if (lnb_any_lane({mask}, {self.lane_width})) {{",
                *inner,
                f"{indent}}}",
            ]
        return lines

    def lane_loop_statement(
        self: CEmitter, statement: ir.ForRange | ir.While, depth: int
    ) -> list[str]:
        """A ``for`` over a range or a ``while``, lanes looping until each leaves."""
        indent = "    " * depth
        parent = self.lane_masks[-1][0]
        looping, running, declaration = self.new_masks(depth + 1)
        lines = [f"{indent}{{", declaration]
        lines += self.every_lane([f"{looping}[lnb_l] = {parent}[lnb_l];"], depth + 1)
        if isinstance(statement, ir.ForRange):
            number, setup, condition, step = self.lane_range(statement, depth + 1)
            lines += setup
        else:
            condition = statement.condition
        lines += [
            f"{indent}    for (;;) {{",
            *self.lane_test(looping, condition, (looping, running), depth + 2),
            f"{indent}        if (!lnb_any_lane({looping}, {self.lane_width})) break;",
            self.stop_check(depth + 2),
        ]
        self.lane_masks += [(looping, "loop"), (running, "body")]
        counter = f"lnb_i{number}[lnb_l]" if isinstance(statement, ir.ForRange) else ""
        if counter:
            loop_type = self.type_name(statement.start.type)
            variable = self.variable_name(statement.variable)
            sets = [(loop_type, counter, [(variable, "")])]
            lines += self.lane_selects(f"{running}[lnb_l]", sets, depth + 2)
        lines += self.lane_statements(statement.body, depth + 2)
        del self.lane_masks[-2:]
        if counter:
            advance = [(loop_type, f"{counter} + {step}", [(counter, "")])]
            lines += self.lane_selects(f"{looping}[lnb_l]", advance, depth + 2)
        lines.append(f"{indent}    }}")
        if counter and statement.end_value:  # a break leaves the condition true
            ended = f"{parent}[lnb_l] & !({condition})"
            lines += self.lane_selects(ended, [(loop_type, counter, [(variable, "")])], depth + 1)
        return [*lines, f"{indent}}}"]

    def lane_range(
        self: CEmitter, statement: ir.ForRange, depth: int
    ) -> tuple[int, list[str], str, str]:
        """A range loop's per-lane counter, stop and step: its number, the lines that set
        them (in the thread function's order: stop, step, start), the condition to go on
        and the step."""
        width = self.lane_width
        number = self.loop_counter
        self.loop_counter += 1
        loop_type = self.type_name(statement.start.type)
        counter, stop, step = (f"lnb_{part}{number}[lnb_l]" for part in ("i", "stop", "step"))
        declared = [f"lnb_i{number}[{width}] = {{0}}", f"lnb_stop{number}[{width}] = {{0}}"]
        values = [(stop, statement.stop)]
        if isinstance(statement.step, ir.Constant):
            step_value = self.expression(statement.step)
            condition = f"{counter} {'<' if statement.step.value > 0 else '>'} {stop}"
        else:
            declared.append(f"lnb_step{number}[{width}] = {{0}}")
            values.append((step, statement.step))
            step_value = step
            condition = f"({step} > 0 ? {counter} < {stop} : {counter} > {stop})"
        values.append((counter, statement.start))
        mask = self.lane_masks[-1][0]
        if speculable(statement.start, statement.stop, statement.step):
            sets = [(loop_type, self.expression(e), [(target, "")]) for target, e in values]
            setup = self.lane_selects(f"{mask}[lnb_l]", sets, depth)
        else:
            body = [f"{target} = {self.expression(e)};" for target, e in values]
            setup = self.lane_branches(mask, body, depth)
        return (
            number,
            [f"{'    ' * depth}{loop_type} {', '.join(declared)};", *setup],
            condition,
            step_value,
        )

    def lanes_definitions(self: CEmitter) -> str:
        """What an optimised build adds for lanes: ``lnb_any_lane`` and ``<entry>_lanes``."""
        return f"#if defined(__OPTIMIZE__)\n{LANE_FUNCTIONS}\n\n{self.lanes_function()}\n#endif"

    def lane_group_loop(self: CEmitter) -> str:
        """The block's threads in groups of ``lane_width``; a group that failed re-runs its
        threads one by one, writes skipped, and reports the first that fails. Only in an
        optimised build: unoptimised (a tiered compile's fast build, ``c/tiers.py``), lanes
        ran mandelbrot 1.7x slower than threads one by one, which it runs instead."""
        width = self.lane_width
        lanes = ", ".join(["x0", "end", "y", "z", "size", *self.body_argument_names(), "&group"])
        arguments = ", ".join(["id", "size", *self.body_argument_names(), "&state"])
        one_by_one = self.first_failure_loop(skip_writes=False)
        return f"""\
#if defined(__OPTIMIZE__)
    for (int32_t x0 = start; x0 < end; x0 += {width}) {{
        lnb_thread group = {{.cancel = cancel}};
        {self.entry_name}_lanes({lanes});
        if (group.failed == LNB_OK) continue;
        for (int32_t x = x0; x < end && x < x0 + {width}; ++x) {{
            lnb_thread state = {{.details = 1, .skip_writes = 1, .cancel = cancel}};
            const lnb_int3 id = {{x, y, z}};
            {self.entry_name}_thread({arguments});
            if (state.failed != LNB_OK) {{
                lnb_report(launch, &state, x, y, z);
                return;
            }}
        }}
        lnb_report(launch, &group, x0, y, z);
        return;
    }}
#else
{one_by_one}
#endif"""
