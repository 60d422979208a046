"""The launch side of the emitted C: the block function running a block of threads, and
the exported entries. A mixin of :class:`~luisa_nb.kernels.c_emitter.CEmitter`.

Threads run in blocks along x with an int32 loop variable (every axis is below 2**31):
with an int64 variable cast to int32, gcc vectorized buffer accesses as gathers and
scatters. Blocks run in parallel with OpenMP from a threshold on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from luisa_nb.kernels.c_emitter import CEmitter


class LaunchEmission:
    """Mixin of :class:`CEmitter` that emits the block function and the entries."""

    def block_locals(self: CEmitter) -> list[str]:
        """The block function's copies of the arguments, named like the thread function's
        parameters. Copied before the thread loop: loads through ``a`` inside an
        ``omp simd`` loop are not hoisted, and stop it from vectorizing."""
        buffers = range(len(self.kernel.buffers))
        lines = [f"    {self.buffer_declaration(i)} = a->{self.buffer_name(i)};" for i in buffers]
        if self.checks:
            lines += [
                f"    const uint64_t {self.count_name(i)} = (uint64_t)a->{self.count_name(i)};"
                for i in buffers
            ]
        lines += [
            f"    const {self.type_name(slot.type)} {self.variable_name(slot.name)} = "
            f"a->{self.scalar_field_name(slot.name)};"
            for slot in self.kernel.scalars
        ]
        return [*lines, "    const int32_t *const cancel = launch->cancel;"]

    def entry(self: CEmitter) -> str:
        """The block function and the exported entries.

        Threads run in blocks along x: ``block_size`` threads in a simd loop when the body
        has no loops or returns, else ``block_size_with_loops``. Blocks run in parallel
        (OpenMP) from the matching threshold on, else on the calling thread. Each block
        first checks whether the launch must stop (a failed check, or the cancel flag).
        """
        name = self.entry_name
        if self.kernel.has_control_flow:
            block, threshold = self.block_size_with_loops, self.parallel_threshold_with_loops
            schedule = self.schedule_with_loops
        else:
            block, threshold = self.block_size, self.parallel_threshold
            schedule = self.schedule
        loops = f"""\
for (int32_t z = 0; z < size.z; ++z)
            for (int32_t y = 0; y < size.y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    {name}_block(&a, launch, size, z, y, block);"""
        block_parameters = (
            f"const {name}_arguments *a, lnb_launch *launch, lnb_int3 size, int32_t z, "
            f"int32_t y, int64_t block"
        )
        locals = "\n".join(self.block_locals())
        return f"""\
{self.block_function_prefix} void {name}_block({block_parameters}) {{
    if (lnb_launch_stopped(launch)) return;
    const int32_t start = (int32_t)(block * {block});
    const int32_t end = size.x - start > {block} ? start + {block} : size.x;
{locals}
{self.thread_loop()}
}}

{self.kernel_prefix}void {self.launch_name}(const void *packed_arguments, lnb_launch *launch) {{
    {name}_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    if (!lnb_valid_size(a.size, launch)) return;
    const lnb_int3 size = {{(int32_t)a.size[0], (int32_t)a.size[1], (int32_t)a.size[2]}};
    const int64_t blocks = ((int64_t)size.x + {block - 1}) / {block};
    if (a.size[0] * a.size[1] * a.size[2] >= {threshold}) {{
#pragma omp parallel for collapse(3) schedule({schedule})
        {loops}
    }} else {{
        {loops}
    }}
}}"""

    def run_function(self: CEmitter) -> str:
        """Runs one thread with a fresh state and returns its failure code. Simd loops call
        it so that the state is a local of an inlined function, not of the loop (an
        addressable loop local would become an array that stops vectorization)."""
        name = self.entry_name
        parameters = ", ".join([*self.body_parameters()[:-1], "const int32_t *cancel"])
        arguments = ", ".join(["dispatch_id", "dispatch_size", *self.body_argument_names()])
        return f"""\
{self.function_prefix} int32_t {name}_run({parameters}) {{
    lnb_thread state = {{.cancel = cancel}};
    {name}_thread({arguments}, &state);
    return state.failed;
}}"""

    def thread_loop(self: CEmitter) -> str:
        """The loop of one block over its threads ``start <= x < end``.

        Simd loops OR the threads' failure codes; a block that failed re-runs its threads
        in order, writes skipped, to find the first failure (see ``c_checks``). Bodies with
        loops record where a check failed as they run, and stop at the first failing thread.
        """
        arguments = ", ".join(["id", "size", *self.body_argument_names(), "cancel"])
        if self.kernel.has_control_flow:
            return self.first_failure_loop(skip_writes=False)
        if not self.checks:
            return f"""\
#pragma omp simd
    for (int32_t x = start; x < end; ++x) {{
        const lnb_int3 id = {{x, y, z}};
        (void){self.entry_name}_run({arguments});
    }}"""
        rerun = self.first_failure_loop(skip_writes=True).replace("\n", "\n    ")
        return f"""\
    int32_t failed = LNB_OK;
#pragma omp simd reduction(|:failed)
    for (int32_t x = start; x < end; ++x) {{
        const lnb_int3 id = {{x, y, z}};
        failed |= {self.entry_name}_run({arguments});
    }}
    if (failed != LNB_OK) {{
    {rerun}
        const lnb_thread unexplained = {{.failed = LNB_INDEX_ERROR, .buffer = -1}};
        lnb_report(launch, &unexplained, start, y, z);
    }}"""

    def first_failure_loop(self: CEmitter, skip_writes: bool) -> str:
        """Threads one by one, recording where a check failed; the first failure ends the
        block."""
        arguments = ", ".join(["id", "size", *self.body_argument_names(), "&state"])
        skip = ", .skip_writes = 1" if skip_writes else ""
        return f"""\
    for (int32_t x = start; x < end; ++x) {{
        lnb_thread state = {{.details = 1{skip}, .cancel = cancel}};
        const lnb_int3 id = {{x, y, z}};
        {self.entry_name}_thread({arguments});
        if (state.failed != LNB_OK) {{
            lnb_report(launch, &state, x, y, z);
            return;
        }}
    }}"""
