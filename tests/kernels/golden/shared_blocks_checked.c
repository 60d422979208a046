/* luisa_nb kernel 'shared_shift': generated code; checks: indices. */

typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __INTPTR_TYPE__ intptr_t;
#define INT32_MAX __INT32_MAX__
#define memcpy __builtin_memcpy
#define memset __builtin_memset

void *calloc(__SIZE_TYPE__ count, __SIZE_TYPE__ size);
void free(void *pointer);

typedef struct { _Alignas(16) int32_t x; int32_t y, z; } lnb_int3;
typedef struct { float a[64]; } lnb_array0_64;

enum {
    LNB_OK = 0,
    LNB_INDEX_ERROR = 1,
    LNB_NON_FINITE = 2,
    LNB_CANCELLED = 3,
    LNB_INVALID_SIZE = 4,
    LNB_DIVERGED_BARRIERS = 5,
    LNB_FAULT = 6
};

/* What a launch reports when it stops early; mirrors luisa_nb.kernels.checks.LaunchRecord. */
typedef struct {
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
} lnb_launch;

/* A thread's failed checks. `details`: record the first one and where it was (else the
   codes are only ORed together); `skip_writes`: set while a thread re-runs to find it. */
typedef struct {
    int32_t failed;
    int32_t line;
    int32_t buffer;
    int32_t access;
    int32_t unsigned_index;
    int32_t details;
    int32_t skip_writes;
    int64_t index;
    double value;
    const int32_t *cancel;
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

/* What each thread running a launch calls: it runs blocks until none is left or the launch
   stops, and stores the number of each block in `running` before running it. */
typedef void (*lnb_run_function)(void *blocks, lnb_launch *launch, volatile int64_t *running);

/* The fault guard's entry (luisa_nb.kernels.c.fault_guard): calls `run`; a memory fault in it
   stops the launch with LNB_FAULT, instead of the process. Returns 1 if it recorded a fault
   in the launch record (all but where: the caller knows its blocks). */
typedef int (*lnb_guard)(lnb_run_function run, void *blocks, lnb_launch *launch,
                         volatile int64_t *running);

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
}

typedef struct {
    int64_t size[3];
    const float *b_values;
    float *b_out;
    int64_t n_values;
    int64_t n_out;
} lnb_shared_shift_arguments;

typedef struct {
    _Bool lnb_finished;
    int32_t lnb_resume;
    int32_t v_t;
} lnb_shared_shift_locals;

typedef struct {
    char lnb_none;
    lnb_array0_64 v_row;
} lnb_shared_shift_shared;

static inline int32_t lnb_mod_int32(int32_t a, int32_t b) {
    if (b == 0 || b == -1) return 0;
    int32_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static inline float lnb_at_lnb_array0_64(lnb_array0_64 a0, int64_t a1) {
    return (uint64_t)a1 < 64 ? a0.a[a1] : 0;
}

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
}

static inline float lnb_read_float32_int32(const float *buffer, uint64_t count, int32_t index,
        int32_t line, int32_t slot, lnb_thread *state) {
    const _Bool ok = (uint32_t)index < (count < 0x80000000u ? (uint32_t)count : 0x80000000u);
    lnb_note(state, ok, LNB_INDEX_ERROR, line, slot, 0, (int64_t)index, 0, 0.0);
    return ok ? buffer[index] : 0;
}

static inline void lnb_write_float32_int32(float *buffer, uint64_t count, int32_t index,
        float value, int32_t line, int32_t slot, lnb_thread *state) {
    const _Bool ok = (uint32_t)index < (count < 0x80000000u ? (uint32_t)count : 0x80000000u);
    lnb_note(state, ok, LNB_INDEX_ERROR, line, slot, 1, (int64_t)index, 0, 0.0);
    if (ok & !state->skip_writes) buffer[index] = value;
}

static inline void lnb_shared_shift_thread(lnb_int3 dispatch_id, lnb_int3 dispatch_size, const float *b_values, float *b_out, uint64_t n_values, uint64_t n_out, lnb_shared_shift_locals *lnb_l, lnb_shared_shift_shared *lnb_sh, lnb_thread *lnb_state) {
    if (lnb_l->lnb_finished) return;
    switch (lnb_l->lnb_resume) {
    case 1: goto lnb_resume_1;
    }
    lnb_l->v_t = ((lnb_int3){dispatch_id.x % 64, dispatch_id.y % 1, dispatch_id.z % 1}).x;
    if ((uint64_t)(int64_t)(lnb_l->v_t) < 64) lnb_sh->v_row.a[lnb_l->v_t] = lnb_read_float32_int32(b_values, n_values, dispatch_id.x, 153, 0, lnb_state);
    lnb_l->lnb_resume = 1;
    return;
    lnb_resume_1:;
    lnb_write_float32_int32(b_out, n_out, dispatch_id.x, lnb_at_lnb_array0_64(lnb_sh->v_row, (int64_t)lnb_mod_int32((lnb_l->v_t + 1), 64)), 155, 1, lnb_state);
    lnb_l->lnb_finished = 1;
}

/* The source line of each barrier, by number (0: none). */
static const int32_t lnb_shared_shift_barrier_lines[] = {0, 154};

static __attribute__((noinline)) void lnb_shared_shift_block(const void *arguments, lnb_launch *launch,
        lnb_int3 size, lnb_int3 block) {
    if (lnb_launch_stopped(launch)) return;
    const lnb_shared_shift_arguments *a = arguments;
    const float *b_values = a->b_values;
    float *b_out = a->b_out;
    const uint64_t n_values = (uint64_t)a->n_values;
    const uint64_t n_out = (uint64_t)a->n_out;
    const int32_t *const cancel = launch->cancel;
    lnb_shared_shift_locals *locals = calloc(64, sizeof *locals);
    lnb_shared_shift_shared shared;
    memset(&shared, 0, sizeof shared);
    for (int32_t paused = 1; paused;) {
        paused = 0;
        for (int32_t t = 0; t < 64; ++t) {
            const int64_t x = (int64_t)block.x * 64 + t % 64;
            const int64_t y = (int64_t)block.y * 1 + t / 64 % 1;
            const int64_t z = (int64_t)block.z * 1 + t / 64;
            if (x >= size.x || y >= size.y || z >= size.z || locals[t].lnb_finished) continue;
            const lnb_int3 id = {(int32_t)x, (int32_t)y, (int32_t)z};
            lnb_thread state = {.details = 1, .cancel = cancel};
            lnb_shared_shift_thread(id, size, b_values, b_out, n_values, n_out, &locals[t], &shared, &state);
            if (state.failed == LNB_OK && !locals[t].lnb_finished && paused
                && locals[t].lnb_resume != paused) {
                state.failed = LNB_DIVERGED_BARRIERS;
                state.line = lnb_shared_shift_barrier_lines[locals[t].lnb_resume];
                state.index = lnb_shared_shift_barrier_lines[paused];
            }
            if (state.failed != LNB_OK) {
                lnb_report(launch, &state, id.x, id.y, id.z);
                free(locals);
                return;
            }
            if (!locals[t].lnb_finished) paused = locals[t].lnb_resume;
        }
    }
    free(locals);
}

/* A tiered compile (luisa_nb.kernels.c.tiers) hands a fast build the optimised build's
   block function and launch entry here; this build's own block function, for that. */
lnb_block_function lnb_shared_shift_optimised_block;
void (*lnb_shared_shift_optimised_launch)(const void *, lnb_launch *);
const lnb_block_function lnb_shared_shift_own_block = lnb_shared_shift_block;

void lnb_shared_shift_launch(const void *packed_arguments, lnb_launch *launch) {
    void (*optimised)(const void *, lnb_launch *) =
        __atomic_load_n(&lnb_shared_shift_optimised_launch, __ATOMIC_ACQUIRE);
    if (optimised) {
        optimised(packed_arguments, launch);
        return;
    }
    lnb_shared_shift_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    if (!lnb_valid_size(a.size, launch)) return;
    const lnb_int3 size = {(int32_t)a.size[0], (int32_t)a.size[1], (int32_t)a.size[2]};
    lnb_blocks blocks;
    lnb_divide(&blocks, lnb_shared_shift_block, &lnb_shared_shift_optimised_block, &a, size,
               (lnb_int3){64, 1, 1}, 1);
    if (a.size[0] * a.size[1] * a.size[2] >= 256) {
#pragma omp parallel
        {
        lnb_launch_blocks(&blocks, launch);
        }
    } else {
        lnb_launch_blocks(&blocks, launch);
    }
}
