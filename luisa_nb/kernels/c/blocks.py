"""Blocks in the emitted C: kernels with block-shared arrays or ``sync_block()``.

The C backend runs a block's threads one after another, so a thread cannot wait at a
barrier: it pauses there instead. Each thread's locals live in a struct per thread
(``lnb_l->v_name``), with the counters of loops that hold a barrier and the number of the
barrier it paused at; the block's shared arrays live in one struct per block
(``lnb_sh->v_name``), zeroed for each block. A barrier stores its number and returns;
the next call jumps to the label after it (``goto`` into loops and branches is plain C
when every value that lives across the jump is in the struct). The block function calls
every thread until it pauses or ends, then again, until all have ended. The threads still
running must have paused at the same barrier, else the launch stops with
``STATUS_DIVERGED_BARRIERS``; a thread that returned no longer takes part, as on a GPU.
Blocks run in parallel (OpenMP), each with its own shared arrays; the first failing thread
stops the launch. A mixin of :class:`~luisa_nb.kernels.c.emitter.CEmitter`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter


class BlockEmission:
    """Mixin of :class:`CEmitter` for kernels whose threads run as blocks."""

    def block_variable(self: CEmitter, name: str) -> str | None:
        """A kernel local as the phased thread function names it; None for others."""
        if not self.in_kernel_body or not self.kernel.uses_blocks:
            return None
        if name in self.kernel.shared:
            return f"lnb_sh->v_{self.identifier(name)}"
        if name in self.kernel.locals:
            return f"lnb_l->v_{self.identifier(name)}"
        return None

    def block_structs(self: CEmitter) -> str:
        """The struct of one thread's locals and that of the block's shared arrays."""
        name = self.entry_name
        per_thread = [
            f"    {self.type_name(kind)} v_{self.identifier(local)};"
            for local, kind in self.kernel.locals.items()
            if local not in self.kernel.shared
        ]
        shared = [
            f"    {self.type_name(self.kernel.locals[local])} v_{self.identifier(local)};"
            for local in self.kernel.shared
        ]
        per_thread += [f"    {type_text} {field};" for type_text, field in self.block_loop_fields]
        return (
            "typedef struct {\n    _Bool lnb_finished;\n    int32_t lnb_resume;\n"
            + "\n".join(per_thread)
            + "\n}"
            f" {name}_locals;\n\ntypedef struct {{\n    char lnb_none;\n"
            + "\n".join(shared)
            + f"\n}} {name}_shared;"
        )

    def block_body_function(self: CEmitter) -> str:
        """The kernel body for one thread, from the start or from the barrier it paused at
        (``lnb_l->lnb_resume``) to the next barrier or its end."""
        name = self.entry_name
        parameters = self.body_parameters()
        parameters[-1:-1] = [f"{name}_locals *lnb_l", f"{name}_shared *lnb_sh"]
        self.in_kernel_body = True
        body = self.statements(self.kernel.body, 1)
        self.in_kernel_body = False
        resumes = [
            f"    case {number}: goto lnb_resume_{number};"
            for number in range(1, len(self.barrier_lines))
        ]
        return "\n".join(
            [
                f"{self.function_prefix} void {name}_thread({', '.join(parameters)}) {{",
                "    if (lnb_l->lnb_finished) return;",
                *(("    switch (lnb_l->lnb_resume) {", *resumes, "    }") if resumes else ()),
                *body,
                "    lnb_l->lnb_finished = 1;",
                "}",
            ]
        )

    def barrier(self: CEmitter, statement: ir.Barrier, indent: str) -> list[str]:
        """Pause the thread at barrier ``n``; its next call goes on after it."""
        number = len(self.barrier_lines)
        self.barrier_lines.append(statement.line)
        return [
            f"{indent}lnb_l->lnb_resume = {number};",
            f"{indent}return;",
            f"{indent}lnb_resume_{number}:;",
        ]

    def loop_field(self: CEmitter, name: str, type_text: str) -> str:
        """A loop's counter, stop or step as a field of the thread's locals, for a loop that
        holds a barrier: the value must outlive the pause."""
        self.block_loop_fields.append((type_text, name))
        return f"lnb_l->{name}"

    def block_entry(self: CEmitter) -> str:
        """The block function (rounds of every thread to its next barrier) and the
        exported entry."""
        name = self.entry_name
        bx, by, bz = self.kernel.block_size
        count = math.prod(self.kernel.block_size)
        arguments = ", ".join(
            ["id", "size", *self.body_argument_names(), "&locals[t]", "&shared", "&state"]
        )
        locals = "\n".join(self.block_locals())
        threshold = self.parallel_threshold_with_loops
        lines = ", ".join(map(str, self.barrier_lines))
        return f"""\
/* The source line of each barrier, by number (0: none). */
static const int32_t {name}_barrier_lines[] = {{{lines}}};

{self.block_function_prefix} void {name}_block(const void *arguments, lnb_launch *launch,
        lnb_int3 size, lnb_int3 block) {{
    if (lnb_launch_stopped(launch)) return;
    const {name}_arguments *a = arguments;
{locals}
    {name}_locals *locals = calloc({count}, sizeof *locals);
    {name}_shared shared;
    memset(&shared, 0, sizeof shared);
    for (int32_t paused = 1; paused;) {{
        paused = 0;
        for (int32_t t = 0; t < {count}; ++t) {{
            const int64_t x = (int64_t)block.x * {bx} + t % {bx};
            const int64_t y = (int64_t)block.y * {by} + t / {bx} % {by};
            const int64_t z = (int64_t)block.z * {bz} + t / {bx * by};
            if (x >= size.x || y >= size.y || z >= size.z || locals[t].lnb_finished) continue;
            const lnb_int3 id = {{(int32_t)x, (int32_t)y, (int32_t)z}};
            lnb_thread state = {{.details = 1, .cancel = cancel}};
            {name}_thread({arguments});
            if (state.failed == LNB_OK && !locals[t].lnb_finished && paused
                && locals[t].lnb_resume != paused) {{
                state.failed = LNB_DIVERGED_BARRIERS;
                state.line = {name}_barrier_lines[locals[t].lnb_resume];
                state.index = {name}_barrier_lines[paused];
            }}
            if (state.failed != LNB_OK) {{
                lnb_report(launch, &state, id.x, id.y, id.z);
                free(locals);
                return;
            }}
            if (!locals[t].lnb_finished) paused = locals[t].lnb_resume;
        }}
    }}
    free(locals);
}}

{self.launch_entry(self.kernel.block_size, self.claim_with_loops, threshold)}"""
