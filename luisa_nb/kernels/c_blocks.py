"""Blocks in the emitted C: kernels with block-shared arrays or ``sync_block()``.

The C backend runs a block's threads one after another, so a barrier cannot stop a
thread midway. Barriers sit at the top level of the body (the typer requires it), and
split it into phases: the block function runs phase 0 for every thread of the block,
then phase 1 for every thread, and so on. Each thread's locals live in a struct per
thread (``lnb_l->v_name``) that keeps them from one phase to the next, and the block's
shared arrays in one struct per block (``lnb_sh->v_name``), zeroed for each block. A
thread that returns is marked finished and skips the later phases. Blocks run in
parallel (OpenMP), each with its own shared arrays; the first failing thread (in phase,
then thread order) stops the launch. A mixin of
:class:`~luisa_nb.kernels.c_emitter.CEmitter`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from luisa_nb.kernels import ir

if TYPE_CHECKING:
    from luisa_nb.kernels.c_emitter import CEmitter


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
        return (
            "typedef struct {\n    _Bool lnb_finished;\n" + "\n".join(per_thread) + "\n}"
            f" {name}_locals;\n\ntypedef struct {{\n    char lnb_none;\n"
            + "\n".join(shared)
            + f"\n}} {name}_shared;"
        )

    def block_body_function(self: CEmitter) -> str:
        """One phase of the kernel body for one thread."""
        name = self.entry_name
        parameters = self.body_parameters()
        parameters[-1:-1] = [f"{name}_locals *lnb_l", f"{name}_shared *lnb_sh", "int32_t phase"]
        phases: list[list[ir.Statement]] = [[]]
        for statement in self.kernel.body:
            if isinstance(statement, ir.Barrier):
                phases.append([])
            else:
                phases[-1].append(statement)
        lines = [f"{self.function_prefix} void {name}_thread({', '.join(parameters)}) {{"]
        lines.append("    if (lnb_l->lnb_finished) return;")
        lines.append("    switch (phase) {")
        self.in_kernel_body = True
        for number, statements in enumerate(phases):
            lines.append(f"    case {number}:")
            lines += self.statements(tuple(statements), 2)
            lines.append("        break;")
        self.in_kernel_body = False
        lines += ["    }", "}"]
        return "\n".join(lines)

    def block_entry(self: CEmitter) -> str:
        """The block function (phases, then threads in order) and the exported entry."""
        name = self.entry_name
        bx, by, bz = self.kernel.block_size
        count = math.prod(self.kernel.block_size)
        arguments = ", ".join(
            ["id", "size", *self.body_argument_names(), "&locals[t]", "&shared", "phase", "&state"]
        )
        locals = "\n".join(self.block_locals())
        threshold = self.parallel_threshold_with_loops
        loops = f"""\
for (int32_t z = 0; z < blocks.z; ++z)
            for (int32_t y = 0; y < blocks.y; ++y)
                for (int32_t x = 0; x < blocks.x; ++x)
                    {name}_block(&a, launch, size, x, y, z);"""
        return f"""\
{self.block_function_prefix} void {name}_block(const {name}_arguments *a, lnb_launch *launch,
        lnb_int3 size, int32_t bx, int32_t by, int32_t bz) {{
    if (lnb_launch_stopped(launch)) return;
{locals}
    {name}_locals *locals = calloc({count}, sizeof *locals);
    {name}_shared shared;
    memset(&shared, 0, sizeof shared);
    for (int32_t phase = 0; phase < {self.kernel.phases}; ++phase) {{
        for (int32_t t = 0; t < {count}; ++t) {{
            const int64_t x = (int64_t)bx * {bx} + t % {bx};
            const int64_t y = (int64_t)by * {by} + t / {bx} % {by};
            const int64_t z = (int64_t)bz * {bz} + t / {bx * by};
            if (x >= size.x || y >= size.y || z >= size.z) continue;
            const lnb_int3 id = {{(int32_t)x, (int32_t)y, (int32_t)z}};
            lnb_thread state = {{.details = 1, .cancel = cancel}};
            {name}_thread({arguments});
            if (state.failed != LNB_OK) {{
                lnb_report(launch, &state, id.x, id.y, id.z);
                free(locals);
                return;
            }}
        }}
    }}
    free(locals);
}}

{self.kernel_prefix}void {self.launch_name}(const void *packed_arguments, lnb_launch *launch) {{
    {name}_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    if (!lnb_valid_size(a.size, launch)) return;
    const lnb_int3 size = {{(int32_t)a.size[0], (int32_t)a.size[1], (int32_t)a.size[2]}};
    const lnb_int3 blocks = {{(int32_t)(((int64_t)size.x + {bx - 1}) / {bx}),
                             (int32_t)(((int64_t)size.y + {by - 1}) / {by}),
                             (int32_t)(((int64_t)size.z + {bz - 1}) / {bz})}};
    if (a.size[0] * a.size[1] * a.size[2] >= {threshold}) {{
#pragma omp parallel for collapse(3) schedule(dynamic)
        {loops}
    }} else {{
        {loops}
    }}
}}"""
