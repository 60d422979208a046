"""The launch side of the emitted C: the block function running a block of threads, and
the exported entries. A mixin of :class:`~luisa_nb.kernels.c.emitter.CEmitter`.

Threads run in blocks along x with an int32 loop variable (every axis is below 2**31):
with an int64 variable cast to int32, gcc vectorized buffer accesses as gathers and
scatters. Blocks run in parallel with OpenMP from a threshold on. In large dispatches a
block writes the buffers :mod:`~luisa_nb.kernels.c.streaming` picks into tiles, streamed
out with non-temporal stores.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from luisa_nb.kernels.c.streaming import streamed_buffers

if TYPE_CHECKING:
    from luisa_nb.kernels.c.emitter import CEmitter


STREAMING_FUNCTIONS = """\
/* The pointer through which threads writing buffer[x] write tile[x - first]: an integer
   computation, as the pointer may lie outside the tile. */
#define lnb_tile_origin(tile, first) \\
    ((void *)((intptr_t)(tile) - (intptr_t)(first) * (intptr_t)sizeof (tile)[0]))

/* Copies a tile to memory with non-temporal stores of the widest vector the target has,
   which do not read the target's cache lines first. They are ordered by lnb_stream_fence,
   once per OpenMP thread. */
#if defined(__AVX512F__)
typedef long long lnb_stream_unit __attribute__((vector_size(64)));
#define lnb_store_unit(to, unit) __builtin_ia32_movntdq512((to), (unit))
#elif defined(__AVX__)
typedef long long lnb_stream_unit __attribute__((vector_size(32)));
#define lnb_store_unit(to, unit) __builtin_ia32_movntdq256((to), (unit))
#else
typedef long long lnb_stream_unit __attribute__((vector_size(16)));
#define lnb_store_unit(to, unit) __builtin_ia32_movntdq((to), (unit))
#endif
#if defined(__clang__)
#undef lnb_store_unit
#define lnb_store_unit(to, unit) __builtin_nontemporal_store((unit), (to))
#elif !defined(__x86_64__)
#undef lnb_store_unit
#define lnb_store_unit(to, unit) (*(to) = (unit))
#endif

static void lnb_stream_out(void *target, const void *tile, uint64_t nbytes) {
    unsigned char *to = target;
    const unsigned char *from = tile;
    uint64_t done = (uint64_t)(-(intptr_t)to & (sizeof(lnb_stream_unit) - 1));
    if (done > nbytes) done = nbytes;
    if (done) memcpy(to, from, done);
    for (; done + sizeof(lnb_stream_unit) <= nbytes; done += sizeof(lnb_stream_unit)) {
        lnb_stream_unit unit;
        memcpy(&unit, from + done, sizeof unit);
        lnb_store_unit((lnb_stream_unit *)(to + done), unit);
    }
    if (done < nbytes) memcpy(to + done, from + done, nbytes - done);
}

static inline void lnb_stream_fence(void) {
#if defined(__x86_64__)
    __builtin_ia32_sfence();
#endif
}"""


class LaunchEmission:
    """Mixin of :class:`CEmitter` that emits the block function and the entries."""

    def block_locals(self: CEmitter) -> list[str]:
        """The block function's copies of the arguments, named like the thread function's
        parameters. Copied before the thread loop: loads through ``a`` inside an
        ``omp simd`` loop are not hoisted, and stop it from vectorizing."""
        buffers = range(len(self.kernel.buffers))
        lines = [f"    {self.buffer_declaration(i)} = a->{self.buffer_name(i)};" for i in buffers]
        if self.checks.bounds:
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

    def tile_locals(self: CEmitter) -> list[str]:
        """Per streamed buffer: its tile, and whether this block streams it: when the
        dispatch writes at least ``streaming_bytes`` of it."""
        lines = []
        for index in self.streamed:
            tile = self.tile_name(index)
            element = self.type_name(self.kernel.buffers[index].element)
            lines += [
                f"    _Alignas(64) {element} {tile}[{self.tile_threads}];",
                f"    const int {self.streams_flag(index)} = "
                f"(int64_t)size.x * (int64_t)sizeof {tile}[0] >= {self.streaming_bytes};",
            ]
        return lines

    def streamed_simd_loop(self: CEmitter, simd_loop: str) -> str:
        """``simd_loop`` run over parts of ``tile_threads`` threads, each part writing the
        streamed buffers into their tiles, streamed out after it. (With whole-block tiles,
        a block read its inputs, then wrote its output, and the two did not overlap.)"""
        tiles = [
            (self.tile_name(index), self.buffer_name(index), self.streams_flag(index))
            for index in self.streamed
        ]
        aim = "".join(
            f"\n        if ({streams}) {pointer} = lnb_tile_origin({tile}, part);"
            for tile, pointer, streams in tiles
        )
        store = "".join(
            f"\n        if ({streams}) lnb_stream_out(a->{pointer} + part, {tile}, "
            f"(uint64_t)(part_end - part) * sizeof {tile}[0]);"
            for tile, pointer, streams in tiles
        )
        part = self.tile_threads
        loop = simd_loop.replace("x = start; x < end", "x = part; x < part_end")
        return f"""\
    for (int32_t part = start; part < end; part += {part}) {{
        const int32_t part_end = end - part > {part} ? part + {part} : end;{aim}
    {loop.replace(chr(10), chr(10) + "    ")}{store}
    }}"""

    @cached_property
    def streamed(self: CEmitter) -> tuple[int, ...]:
        """The buffers blocks write through tiles (see ``kernels/c/streaming.py``)."""
        return streamed_buffers(self.kernel, self.checks)

    def streaming_functions(self: CEmitter) -> list[str]:
        """The tile helpers, where a block streams a buffer."""
        return [STREAMING_FUNCTIONS] if self.streamed else []

    def tile_name(self: CEmitter, index: int) -> str:
        return f"tile_{self.buffer_names[index]}"

    def streams_flag(self: CEmitter, index: int) -> str:
        """Whether the block streams buffer ``index`` (a local of the block function)."""
        return f"streams_{self.buffer_names[index]}"

    def entry(self: CEmitter) -> str:
        """The block function and the exported entry.

        Threads run in blocks along x: ``block_size`` threads in a simd loop when the body
        has no loops or returns, else ``block_size_with_loops``. From the matching
        threshold on, every OpenMP thread claims blocks from the launch's shared counter
        (``lnb_run_blocks``), else the calling thread runs them all. A thread checks
        whether the launch must stop (a failed check, a fault, or the cancel flag) before
        each claim and each block.
        """
        name = self.entry_name
        if self.kernel.has_control_flow:
            block, threshold = self.block_size_with_loops, self.parallel_threshold_with_loops
            claim = self.claim_with_loops
        else:
            block, threshold = self.block_size, self.parallel_threshold
            claim = self.claim
        locals = "\n".join(self.block_locals() + self.tile_locals())
        return f"""\
{self.block_function_prefix} void {name}_block(const void *arguments, lnb_launch *launch,
        lnb_int3 size, lnb_int3 block) {{
    if (lnb_launch_stopped(launch)) return;
    const {name}_arguments *a = arguments;
    const int32_t y = block.y, z = block.z;
    const int32_t start = block.x * {block};
    const int32_t end = size.x - start > {block} ? start + {block} : size.x;
{locals}
{self.thread_loop()}
}}

{self.launch_entry((block, 1, 1), claim, threshold)}"""

    def launch_entry(
        self: CEmitter, block: tuple[int, int, int], claim: int, threshold: int
    ) -> str:
        """The exported entry: blocks of ``block`` threads, claimed ``claim`` at a time, by
        every OpenMP thread from ``threshold`` threads on."""
        name = self.entry_name
        fence = "\n        lnb_stream_fence();" if self.streamed else ""
        bx, by, bz = block
        return f"""\
/* A tiered compile (luisa_nb.kernels.c.tiers) hands a fast build the optimised build's
   block function and launch entry here; this build's own block function, for that. */
{self.kernel_prefix}lnb_block_function {name}_optimised_block;
{self.kernel_prefix}void (*{name}_optimised_launch)(const void *, lnb_launch *);
{self.kernel_prefix}const lnb_block_function {name}_own_block = {name}_block;

{self.kernel_prefix}void {self.launch_name}(const void *packed_arguments, lnb_launch *launch) {{
    void (*optimised)(const void *, lnb_launch *) =
        __atomic_load_n(&{name}_optimised_launch, __ATOMIC_ACQUIRE);
    if (optimised) {{
        optimised(packed_arguments, launch);
        return;
    }}
    {name}_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    if (!lnb_valid_size(a.size, launch)) return;
    const lnb_int3 size = {{(int32_t)a.size[0], (int32_t)a.size[1], (int32_t)a.size[2]}};
    lnb_blocks blocks;
    lnb_divide(&blocks, {name}_block, &{name}_optimised_block, &a, size,
               (lnb_int3){{{bx}, {by}, {bz}}}, {claim});
    if (a.size[0] * a.size[1] * a.size[2] >= {threshold}) {{
#pragma omp parallel
        {{
        lnb_launch_blocks(&blocks, launch);{fence}
        }}
    }} else {{
        lnb_launch_blocks(&blocks, launch);{fence}
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
        in order, writes skipped, to find the first failure (see ``c.checks``). Bodies with
        loops record where a check failed as they run, and stop at the first failing thread.
        """
        arguments = ", ".join(["id", "size", *self.body_argument_names(), "cancel"])
        if self.in_lanes:
            return self.lane_group_loop()
        if self.kernel.has_control_flow:
            return self.first_failure_loop(skip_writes=False)
        if not self.checks.bounds:
            simd_loop = f"""\
#pragma omp simd
    for (int32_t x = start; x < end; ++x) {{
        const lnb_int3 id = {{x, y, z}};
        (void){self.entry_name}_run({arguments});
    }}"""
            return self.streamed_simd_loop(simd_loop) if self.streamed else simd_loop
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
