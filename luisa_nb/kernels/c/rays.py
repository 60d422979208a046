"""Ray traversal in the emitted C. A mixin of :class:`~luisa_nb.kernels.c.emitter.CEmitter`.

Kernels type ``accel.trace_closest``/``trace_any`` as calls of the kernel-language
traversal ``_traverse`` (:mod:`luisa_nb.kernels.lang.rays`), which Python mode runs as it
is. In C its specialisations call :data:`TRAVERSAL` instead: the same traversal, the
same float operations in the same order (so the same hits, bit for bit), written for
speed. A node's two children are tested together, the nearer entered one is visited
next, and the other waits on a fixed stack with the distances where the ray enters and
leaves its box, so a pop compares them with the nearest hit so far instead of reading
the node again. The structure's buffers are made by its build (``runtime/accel.py``),
so the traversal reads them unchecked; it stops at a node that does not point forward
to nodes and triangles inside the buffers, so no tree makes it read outside them or
loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from luisa_nb.kernels import ir
from luisa_nb.kernels.lang import rays

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter

TRAVERSAL = r"""/* A BVH node, a world-space triangle and a hit, as in kernels/lang/rays.py. */
typedef struct { float lower[3]; int32_t child; float upper[3]; int32_t count; } lnb_bvh_node;
typedef struct {
    float a[3]; uint32_t instance; float b[3]; uint32_t primitive; float c[3]; uint32_t mask;
} lnb_bvh_triangle;
typedef struct { uint32_t instance, primitive; float u, v, t; } lnb_bvh_hit;
typedef struct { int32_t node; float enter, leave; } lnb_bvh_waiting;

/* Boxes and distances hold no NaN from a ray that can hit anything (a NaN origin or
   direction fails every triangle test), so these are the min and max instructions. */
static inline float lnb_bvh_min(float a, float b) { return a < b ? a : b; }
static inline float lnb_bvh_max(float a, float b) { return a > b ? a : b; }

/* Where the ray enters the node's box (from t_min on) and where it leaves it (before any
   nearest hit): it crosses the box where enter <= min(leave, best) * EXIT_WIDENING. */
static inline void lnb_bvh_box(const lnb_bvh_node *node, const float *origin,
                               const float *inverse, float t_min, float *enter, float *leave) {
    float near[3], far[3];
    for (int k = 0; k < 3; ++k) {
        const float low = (node->lower[k] - origin[k]) * inverse[k];
        const float high = (node->upper[k] - origin[k]) * inverse[k];
        near[k] = lnb_bvh_min(low, high);
        far[k] = lnb_bvh_max(low, high);
    }
    *enter = lnb_bvh_max(lnb_bvh_max(near[0], near[1]), lnb_bvh_max(near[2], t_min));
    *leave = lnb_bvh_min(lnb_bvh_min(far[0], far[1]), far[2]);
}

/* The nearest hit of the ray on triangles whose mask shares a bit with `mask` in
   t_min .. t_max (with first_hit, the first found); instance 0xFFFFFFFF where it misses. */
static inline lnb_bvh_hit lnb_bvh_trace(const lnb_bvh_node *nodes, uint64_t node_count,
        const lnb_bvh_triangle *triangles, uint64_t triangle_count, const float *ray_origin,
        const float *ray_direction, float t_min, float t_max, uint32_t mask, int first_hit) {
    /* copies, which the compiler keeps in registers: the stores below may alias a ray */
    const float origin[3] = {ray_origin[0], ray_origin[1], ray_origin[2]};
    const float direction[3] = {ray_direction[0], ray_direction[1], ray_direction[2]};
    const float widening = EXIT_WIDENING, missed = MISSED_BOX;
    float inverse[3];
    for (int k = 0; k < 3; ++k) {
        const float d = direction[k];
        const float away = d >= 0.0f ? TINY_DIRECTION : -TINY_DIRECTION;
        inverse[k] = 1.0f / (fabsf(d) < TINY_DIRECTION ? away : d);
    }
    lnb_bvh_hit hit = {0xFFFFFFFFu, 0xFFFFFFFFu, 0.0f, 0.0f, 0.0f};
    float best = t_max;
    lnb_bvh_waiting stack[STACK_SIZE];
    int top = 0;
    int32_t index = 0;
    float enter, leave;
    lnb_bvh_box(&nodes[0], origin, inverse, t_min, &enter, &leave);
    int visiting = enter <= lnb_bvh_min(leave, best) * widening;
    while (visiting) {
        const lnb_bvh_node *node = &nodes[index];
        if (node->count < 0) {
            const int32_t left = node->child;
            if (left <= index || (uint64_t)left + 1 >= node_count) break;
            float enter_left, leave_left, enter_right, leave_right;
            lnb_bvh_box(&nodes[left], origin, inverse, t_min, &enter_left, &leave_left);
            lnb_bvh_box(&nodes[left + 1], origin, inverse, t_min, &enter_right, &leave_right);
            const float left_at =
                enter_left <= lnb_bvh_min(leave_left, best) * widening ? enter_left : missed;
            const float right_at =
                enter_right <= lnb_bvh_min(leave_right, best) * widening ? enter_right : missed;
            const int enters_left = left_at < missed, enters_right = right_at < missed;
            if (enters_left | enters_right) {
                /* the nearer entered child next; the other waits if the ray enters both */
                const int right_first = !enters_left || (enters_right && right_at < left_at);
                if (top < STACK_SIZE) {
                    stack[top].node = right_first ? left : left + 1;
                    stack[top].enter = right_first ? enter_left : enter_right;
                    stack[top].leave = right_first ? leave_left : leave_right;
                }
                top += enters_left & enters_right;
                index = left + right_first;
                continue;
            }
        } else {
            const int32_t first = node->child, end = node->child + node->count;
            if (first < 0 || (uint64_t)end > triangle_count) break;
            for (int32_t i = first; i < end; ++i) {
                const lnb_bvh_triangle *triangle = &triangles[i];
                if ((triangle->mask & mask) == 0u) continue;
                const float *a = triangle->a, *b = triangle->b, *c = triangle->c;
                const float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
                const float e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
                const float p[3] = {direction[1] * e2[2] - direction[2] * e2[1],
                                    direction[2] * e2[0] - direction[0] * e2[2],
                                    direction[0] * e2[1] - direction[1] * e2[0]};
                const float determinant = e1[0] * p[0] + e1[1] * p[1] + e1[2] * p[2];
                if (determinant == 0.0f) continue;
                const float reciprocal = 1.0f / determinant;
                const float s[3] = {origin[0] - a[0], origin[1] - a[1], origin[2] - a[2]};
                const float u = (s[0] * p[0] + s[1] * p[1] + s[2] * p[2]) * reciprocal;
                const float q[3] = {s[1] * e1[2] - s[2] * e1[1], s[2] * e1[0] - s[0] * e1[2],
                                    s[0] * e1[1] - s[1] * e1[0]};
                const float v =
                    (direction[0] * q[0] + direction[1] * q[1] + direction[2] * q[2]) * reciprocal;
                if (!(u >= 0.0f && v >= 0.0f && u + v <= 1.0f)) continue;
                const float t = (e2[0] * q[0] + e2[1] * q[1] + e2[2] * q[2]) * reciprocal;
                if (t >= t_min && t <= best) {
                    best = t;
                    hit = (lnb_bvh_hit){triangle->instance, triangle->primitive, u, v, t};
                    if (first_hit) break;
                }
            }
        }
        visiting = 0;
        if (first_hit && hit.instance != 0xFFFFFFFFu) break;
        while (top > 0 && !visiting) {
            top -= 1;
            if (top >= STACK_SIZE) continue;
            index = stack[top].node;
            visiting = stack[top].enter <= lnb_bvh_min(stack[top].leave, best) * widening;
        }
    }
    return hit;
}"""


def traversal_text() -> str:
    """:data:`TRAVERSAL` with the constants of :mod:`luisa_nb.kernels.lang.rays`."""
    constants = {
        "EXIT_WIDENING": f"{rays.EXIT_WIDENING!r}f",
        "MISSED_BOX": f"{rays.MISSED_BOX!r}f",
        "TINY_DIRECTION": f"{rays.TINY_DIRECTION!r}f",
        "STACK_SIZE": str(rays.TRAVERSAL_STACK.size),
    }
    text = TRAVERSAL
    for name, value in constants.items():
        text = text.replace(name, value)
    return text


class RayEmission:
    """The C of the kernel-language traversal's specialisations."""

    def is_traversal(self: CEmitter, function: ir.FunctionIR) -> bool:
        definition = function.definition
        return getattr(definition, "function", None) is rays._traverse.function

    def traversal_definition(self: CEmitter, index: int) -> str:
        """A specialisation of ``_traverse(nodes, triangles, ray, mask, first_hit)`` as a
        call of ``lnb_bvh_trace`` on the buffers it reads."""
        function = self.kernel.functions[index]
        slots = {}
        for statement in ir.walk_statements(function.body):
            for expression in ir.statement_expressions(statement):
                for node in ir.walk_expression(expression):
                    if isinstance(node, ir.BufferRead):
                        slots[self.kernel.buffers[node.buffer].element] = node.buffer
        nodes, triangles = slots[rays.BVH_NODE], slots[rays.BVH_TRIANGLE]
        self.uses_math = True  # fabsf
        trace = self.define_helper("lnb_bvh_trace", traversal_text)
        (ray, _, _), (mask, _, _), (first_hit, _, _) = function.parameters
        ray, mask, first_hit = (self.variable_name(name) for name in (ray, mask, first_hit))

        def count(slot: int) -> str:
            return self.count_name(slot) if self.checks.bounds else "~(uint64_t)0"

        hit_type = self.type_name(function.return_type)
        parameters = list(self.context_parameters())
        parameters += [f"{self.type_name(rays.RAY)} *{ray}", f"uint32_t {mask}"]
        parameters.append(f"_Bool {first_hit}")
        return "\n".join(
            [
                f"{self.function_prefix} {hit_type} "
                f"{self.function_name(index)}({', '.join(parameters)}) {{",
                f"    const lnb_bvh_hit found = {trace}(",
                f"        (const lnb_bvh_node *){self.buffer_name(nodes)}, {count(nodes)},",
                f"        (const lnb_bvh_triangle *){self.buffer_name(triangles)}, "
                f"{count(triangles)},",
                f"        {ray}->m__origin.a, {ray}->m__dir.a, {ray}->m_t_min, {ray}->m_t_max,",
                f"        {mask}, {first_hit});",
                f"    {hit_type} hit = {{0}};",
                "    hit.m_inst = found.instance;",
                "    hit.m_prim = found.primitive;",
                "    hit.m_bary.x = found.u;",
                "    hit.m_bary.y = found.v;",
                "    hit.m_ray_t = found.t;",
                "    return hit;",
                "}",
            ]
        )
