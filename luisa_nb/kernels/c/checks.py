"""The C side of launches and checks: the launch record, cancellation, how the threads of
a launch share its blocks (under the fault guard, see ``c.fault_guard``), and the checked
buffer accesses the emitter adds on demand.

Checked accesses are branch-free so that ``omp simd`` loops keep vectorizing: a failed
check ORs a failure code into the thread's ``failed`` with a select, and the access is
masked (a read gives 0, a write is skipped), so no out-of-range memory is ever touched.
Where it failed (line, buffer, index) is recorded only when ``details`` is set: simd
loops only OR the codes together (richer bookkeeping there stopped gcc 12 vectorizing),
and a block that failed re-runs its threads one by one with ``details`` and
``skip_writes`` to find the first failure. The block reports it into the launch record.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from luisa_nb.kernels.checks import (
    STATUS_CANCELLED,
    STATUS_DIVERGED_BARRIERS,
    STATUS_FAULT,
    STATUS_INDEX_ERROR,
    STATUS_INVALID_SIZE,
    STATUS_NON_FINITE,
    STATUS_OK,
)
from luisa_nb.kernels.lang.aggregates import ArrayType, StructType
from luisa_nb.kernels.type_system import KernelType, ScalarType
from luisa_nb.kernels.typing.atomics import ATOMIC_OPERATIONS as ATOMIC_PARAMETERS

#: The status codes and the launch record, the same in the C and the CUDA prelude.
LAUNCH_TYPES = f"""\
enum {{
    LNB_OK = {STATUS_OK},
    LNB_INDEX_ERROR = {STATUS_INDEX_ERROR},
    LNB_NON_FINITE = {STATUS_NON_FINITE},
    LNB_CANCELLED = {STATUS_CANCELLED},
    LNB_INVALID_SIZE = {STATUS_INVALID_SIZE},
    LNB_DIVERGED_BARRIERS = {STATUS_DIVERGED_BARRIERS},
    LNB_FAULT = {STATUS_FAULT}
}};

/* What a launch reports when it stops early; mirrors luisa_nb.kernels.checks.LaunchRecord. */
typedef struct {{
    int32_t status;
    int32_t line;
    int32_t buffer;
    int32_t access;
    int32_t unsigned_index;
    int32_t thread[3];
    int64_t index;
    double value;
    const int32_t *cancel;
    void *guard; /* the fault guard's lnb_guard, or 0 */
}} lnb_launch;"""

THREAD_FIELDS = """\
    int32_t failed;
    int32_t line;
    int32_t buffer;
    int32_t access;
    int32_t unsigned_index;
    int32_t details;
    int32_t skip_writes;
    int64_t index;
    double value;
    const int32_t *cancel;"""
"""The fields of a thread's check state, ``lnb_thread`` (the CUDA prelude adds its own)."""

GUARD_TYPES = """\
/* What each thread running a launch calls: it runs blocks until none is left or the launch
   stops, and stores the number of each block in `running` before running it. */
typedef void (*lnb_run_function)(void *blocks, lnb_launch *launch, volatile int64_t *running);

/* The fault guard's entry (luisa_nb.kernels.c.fault_guard): calls `run`; a memory fault in it
   stops the launch with LNB_FAULT, instead of the process. Returns 1 if it recorded a fault
   in the launch record (all but where: the caller knows its blocks). */
typedef int (*lnb_guard)(lnb_run_function run, void *blocks, lnb_launch *launch,
                         volatile int64_t *running);"""
"""The C types the generated launch and the fault guard share."""

BLOCKS = """\
/* The block function of a kernel: runs the threads of block `block` (its position in
   blocks along each axis). */
typedef void (*lnb_block_function)(const void *arguments, lnb_launch *launch, lnb_int3 size,
                                   lnb_int3 block);

/* The blocks of a launch, numbered along x, then y, then z. The threads running it claim
   `claim` blocks at a time from `next` until none is left or the launch stops, so that a
   cancelled or failed launch of any size ends within one claim per thread. */
typedef struct {
    lnb_block_function run;
    /* Where the host puts the block function of this kernel's optimised build when this is
       its fast build (a tiered compile, luisa_nb.kernels.c.tiers): blocks claimed after
       that run there. Never set in an optimised build. */
    lnb_block_function *optimised;
    const void *arguments;
    lnb_int3 size;  /* threads along each axis */
    lnb_int3 block; /* threads of a block along each axis */
    lnb_int3 count; /* blocks along each axis */
    int64_t total;  /* blocks in all: below 2**63, as the product of the sizes */
    int64_t claim;
    int64_t next;   /* the first block not claimed yet */
} lnb_blocks;

/* Divides a launch of `size` threads into blocks of `block` threads. (Filled in place: a
   struct returned by value was copied through a wide load of narrow stores, ~10 ns.) */
static void lnb_divide(lnb_blocks *blocks, lnb_block_function run,
                       lnb_block_function *optimised, const void *arguments, lnb_int3 size,
                       lnb_int3 block, int64_t claim) {
    blocks->run = run;
    blocks->optimised = optimised;
    blocks->arguments = arguments;
    blocks->size = size;
    blocks->block = block;
    blocks->count.x = (int32_t)(((int64_t)size.x + block.x - 1) / block.x);
    blocks->count.y = (int32_t)(((int64_t)size.y + block.y - 1) / block.y);
    blocks->count.z = (int32_t)(((int64_t)size.z + block.z - 1) / block.z);
    blocks->total = (int64_t)blocks->count.x * blocks->count.y * blocks->count.z;
    blocks->claim = claim;
    blocks->next = 0;
}

/* The position of block `index` (below blocks->total). */
static lnb_int3 lnb_block_at(const lnb_blocks *blocks, int64_t index) {
    if (index < blocks->count.x) return (lnb_int3){(int32_t)index, 0, 0}; /* no division */
    const int64_t row = index / blocks->count.x;
    return (lnb_int3){(int32_t)(index % blocks->count.x), (int32_t)(row % blocks->count.y),
                      (int32_t)(row / blocks->count.y)};
}

/* A thread's share of a launch (an lnb_run_function): claims blocks and runs them. */
static void lnb_run_blocks(void *shared, lnb_launch *launch, volatile int64_t *running) {
    lnb_blocks *blocks = shared;
    for (int64_t end = 0; end < blocks->total && !lnb_launch_stopped(launch);) {
        const int64_t first = __atomic_fetch_add(&blocks->next, blocks->claim, __ATOMIC_RELAXED);
        if (first >= blocks->total) return;
        end = blocks->total - first > blocks->claim ? first + blocks->claim : blocks->total;
        lnb_block_function run = __atomic_load_n(blocks->optimised, __ATOMIC_ACQUIRE);
        if (!run) run = blocks->run;
        lnb_int3 block = lnb_block_at(blocks, first);
        for (int64_t index = first; index < end; ++index) {
            *running = index;
            run(blocks->arguments, launch, blocks->size, block);
            if (++block.x < blocks->count.x) continue;
            block.x = 0;
            if (++block.y < blocks->count.y) continue;
            block.y = 0;
            ++block.z;
        }
    }
}

/* Runs the calling thread's share of a launch, under the fault guard if the record has one;
   after a fault, the record names the first thread of the block that faulted. */
static void lnb_launch_blocks(lnb_blocks *blocks, lnb_launch *launch) {
    volatile int64_t running = 0;
    if (!launch->guard) {
        lnb_run_blocks(blocks, launch, &running);
    } else if (((lnb_guard)launch->guard)(lnb_run_blocks, blocks, launch, &running)) {
        const lnb_int3 block = lnb_block_at(blocks, running);
        launch->thread[0] = block.x * blocks->block.x;
        launch->thread[1] = block.y * blocks->block.y;
        launch->thread[2] = block.z * blocks->block.z;
    }
}"""
"""How the threads of a launch share its blocks (C only: CUDA launches a grid)."""

LAUNCH_PRELUDE = (
    LAUNCH_TYPES
    + """

/* A thread's failed checks. `details`: record the first one and where it was (else the
   codes are only ORed together); `skip_writes`: set while a thread re-runs to find it. */
typedef struct {
"""
    + THREAD_FIELDS
    + """
} lnb_thread;

/* Whether the launch must stop: a thread failed, or the caller set the cancel flag. */
static int lnb_launch_stopped(lnb_launch *launch) {
    if (__atomic_load_n(&launch->status, __ATOMIC_RELAXED) != LNB_OK) return 1;
    if (__atomic_load_n(launch->cancel, __ATOMIC_RELAXED) == 0) return 0;
    int32_t running = LNB_OK;
    __atomic_compare_exchange_n(&launch->status, &running, LNB_CANCELLED, 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return 1;
}

/* Inside a thread's loops: stop when a check failed or the launch was cancelled. */
static inline int lnb_thread_stopped(lnb_thread *state) {
    if (state->failed != LNB_OK) return 1;
    if (__atomic_load_n(state->cancel, __ATOMIC_RELAXED) == 0) return 0;
    state->failed = LNB_CANCELLED;
    return 1;
}

/* Make the failure of thread (x, y, z) the launch's, unless another thread was first. */
static void lnb_report(lnb_launch *launch, const lnb_thread *state,
                       int32_t x, int32_t y, int32_t z) {
    int32_t running = LNB_OK;
    if (!__atomic_compare_exchange_n(&launch->status, &running, state->failed, 0,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
    launch->line = state->line;
    launch->buffer = state->buffer;
    launch->access = state->access;
    launch->unsigned_index = state->unsigned_index;
    launch->index = state->index;
    launch->value = state->value;
    launch->thread[0] = x;
    launch->thread[1] = y;
    launch->thread[2] = z;
}

/* Dispatch sizes must fit the int32 ids and an int64 thread count. */
static int lnb_valid_size(const int64_t size[3], lnb_launch *launch) {
    int64_t total = 1;
    for (int axis = 0; axis < 3; ++axis) {
        if (size[axis] < 0 || size[axis] > INT32_MAX
            || __builtin_mul_overflow(total, size[axis], &total)) {
            launch->status = LNB_INVALID_SIZE;
            return 0;
        }
    }
    return 1;
}

"""
    + GUARD_TYPES
    + "\n\n"
    + BLOCKS
)

NOTE_FUNCTION = """\
/* Note a failed check. Without `details` (simd loops), OR the failure code in: a select
   that vectorizes. With `details`, record the thread's first failure and where it was. */
static inline void lnb_note(lnb_thread *state, _Bool ok, int32_t failure, int32_t line,
                            int32_t buffer, int32_t access, int64_t index,
                            int32_t unsigned_index, double value) {
    if (!state->details) {
        state->failed |= ok ? LNB_OK : failure;
        return;
    }
    if (ok | (state->failed != LNB_OK)) return;
    state->failed = failure;
    state->line = line;
    state->buffer = buffer;
    state->access = access;
    state->index = index;
    state->unsigned_index = unsigned_index;
    state->value = value;
}"""

READ = """\
{prefix} {T} lnb_read_{element}_{index_name}(const {T} *buffer, uint64_t count, {I} index,
        int32_t line, int32_t slot, lnb_thread *state) {{
    const _Bool ok = {in_range};
    lnb_note(state, ok, LNB_INDEX_ERROR, line, slot, 0, (int64_t)index, {unsigned}, 0.0);
    return ok ? buffer[index] : {zero};
}}"""

WRITE = """\
{prefix} void lnb_write_{element}_{index_name}({T} *buffer, uint64_t count, {I} index,
        {T} value, int32_t line, int32_t slot, lnb_thread *state) {{
    const _Bool ok = {in_range};
    lnb_note(state, ok, LNB_INDEX_ERROR, line, slot, 1, (int64_t)index, {unsigned}, 0.0);
    if (ok & !state->skip_writes) buffer[index] = value;
}}"""

WRITE_FINITE = """\
{prefix} void lnb_write_finite_{element}_{index_name}({T} *buffer, uint64_t count,
        {I} index, {T} value, int32_t line, int32_t slot, lnb_thread *state) {{
    const _Bool ok = {in_range};
    const _Bool finite = {finite};
    lnb_note(state, ok, LNB_INDEX_ERROR, line, slot, 1, (int64_t)index, {unsigned}, 0.0);
    lnb_note(state, finite | !ok, LNB_NON_FINITE, line, slot, 1, (int64_t)index, {unsigned},
             (double){reported});
    if (ok & finite & !state->skip_writes) buffer[index] = value;
}}"""

ATOMIC = """\
{prefix} {T} lnb_{access}_{element}_{index_name}({T} *buffer, uint64_t count, {I} index,
        {parameters}, int32_t line, int32_t slot, lnb_thread *state) {{
    const _Bool ok = {in_range};
    lnb_note(state, ok, LNB_INDEX_ERROR, line, slot, 1, (int64_t)index, {unsigned}, 0.0);
    if (!ok | state->skip_writes) return 0;
    return lnb_{access}_{element}(&buffer[index], {arguments});
}}"""

ACCESS_TEMPLATES = {"read": READ, "write": WRITE, "write_finite": WRITE_FINITE}


def in_range_test(index_type: ScalarType) -> str:
    """C for ``0 <= index < count``; int32 indices compare in 32 bits (16 lanes a vector)."""
    if index_type is ScalarType.INT32:
        return "(uint32_t)index < (count < 0x80000000u ? (uint32_t)count : 0x80000000u)"
    return "(uint64_t)index < count"


def access_function_name(access: str, element: KernelType, index_type: ScalarType) -> str:
    """The helper for ``access`` ("read", "write", "write_finite") of one buffer/index type."""
    return f"lnb_{access}_{_label(element)}_{index_type.value}"


def _label(kind: KernelType) -> str:
    """A type's name as part of a C identifier."""
    if isinstance(kind, ScalarType):
        return kind.value
    if isinstance(kind, StructType):  # types compare by identity: so do their names
        return f"struct{kind.number}"
    if isinstance(kind, ArrayType):
        return f"array{kind.size}_{_label(kind.element)}"
    return re.sub(r"\W+", "_", str(kind)).strip("_")


def access_function(
    access: str,
    element: KernelType,
    index_type: ScalarType,
    type_name: Callable[[KernelType], str],
    prefix: str,
    components: list[str] | None = None,
    compound: Callable[[str, str], str] = lambda type_text, items: f"({type_text}){{{items}}}",
) -> str:
    """The C definition of one checked access helper; ``components`` are the C
    expressions of the scalar components of ``value`` for vector and matrix elements
    (all must be finite; the first that is not is reported). An ``atomic_<operation>``
    access checks the index and calls the unchecked helper ``lnb_atomic_<operation>_<T>``
    (``c.atomics``) with its value parameters. ``compound`` writes a value of a type from
    the items of a brace initializer, in the emitter's dialect."""
    finite, reported = "__builtin_isfinite(value)", "value"
    zero = "0"
    if components is not None:
        zero = compound(type_name(element), "0")
        finite = " & ".join(f"__builtin_isfinite({c})" for c in components)
        reported = components[-1]
        for component in reversed(components[:-1]):
            reported = f"(__builtin_isfinite({component}) ? {reported} : {component})"
    parameters = ATOMIC_PARAMETERS.get(access.removeprefix("atomic_"), ())
    template = ATOMIC if access.startswith("atomic_") else ACCESS_TEMPLATES[access]
    return template.format(
        access=access,
        parameters=", ".join(f"{type_name(element)} {name}" for name in parameters),
        arguments=", ".join(parameters),
        prefix=prefix,
        T=type_name(element),
        I=type_name(index_type),
        element=_label(element),
        index_name=index_type.value,
        in_range=in_range_test(index_type),
        unsigned=1 if index_type is ScalarType.UINT64 else 0,
        zero=zero,
        finite=finite,
        reported=reported,
    )
