/* luisa_nb kernel 'mandelbrot': generated code; checks: off. */

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

typedef struct { _Alignas(16) int32_t x; int32_t y, z; } lnb_int3;

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
    int32_t *b_image;
    int32_t s_width;
    int32_t s_height;
    int32_t s_max_iterations;
} lnb_mandelbrot_arguments;

static inline void lnb_mandelbrot_thread(lnb_int3 dispatch_id, lnb_int3 dispatch_size, int32_t *b_image, int32_t v_width, int32_t v_height, int32_t v_max_iterations, lnb_thread *lnb_state) {
    int32_t v_px = 0;
    int32_t v_py = 0;
    float v_cx = 0;
    float v_cy = 0;
    float v_zx = 0;
    float v_zy = 0;
    int32_t v_iteration = 0;
    float v_t = 0;
    v_px = dispatch_id.x;
    v_py = dispatch_id.y;
    v_cx = (((((float)v_px) / ((float)v_width)) * 3.0f) - 2.0f);
    v_cy = (((((float)v_py) / ((float)v_height)) * 2.0f) - 1.0f);
    v_zx = 0.0f;
    v_zy = 0.0f;
    v_iteration = 0;
    while ((v_iteration < v_max_iterations) && (((v_zx * v_zx) + (v_zy * v_zy)) <= 4.0f)) {
        if (lnb_thread_stopped(lnb_state)) return;
        v_t = (((v_zx * v_zx) - (v_zy * v_zy)) + v_cx);
        v_zy = (((2.0f * v_zx) * v_zy) + v_cy);
        v_zx = v_t;
        v_iteration = (v_iteration + 1);
    }
    b_image[((v_py * v_width) + v_px)] = v_iteration;
}

#if defined(__OPTIMIZE__)
/* Whether any of a group's lanes is set in `mask`. */
static inline int32_t lnb_any_lane(const int32_t *mask, int32_t lanes) {
    int32_t any = 0;
    for (int32_t lane = 0; lane < lanes; ++lane) any |= mask[lane];
    return any;
}

static inline void lnb_mandelbrot_lanes(int32_t lnb_x0, int32_t lnb_end, int32_t y, int32_t z, lnb_int3 dispatch_size, int32_t *b_image, int32_t v_width, int32_t v_height, int32_t v_max_iterations, lnb_thread *lnb_state) {
    int32_t v_px[32] = {0};
    int32_t v_py[32] = {0};
    float v_cx[32] = {0};
    float v_cy[32] = {0};
    float v_zx[32] = {0};
    float v_zy[32] = {0};
    int32_t v_iteration[32] = {0};
    float v_t[32] = {0};
    int32_t lnb_m0[32];
#pragma omp simd
    for (int32_t lnb_l = 0; lnb_l < 32; ++lnb_l) {
        const lnb_int3 dispatch_id = {lnb_x0 + lnb_l, y, z};
        lnb_m0[lnb_l] = lnb_x0 + lnb_l < lnb_end;
    }
#pragma omp simd
    for (int32_t lnb_l = 0; lnb_l < 32; ++lnb_l) {
        const lnb_int3 dispatch_id = {lnb_x0 + lnb_l, y, z};
        const int32_t lnb_on = lnb_m0[lnb_l];
        { const int32_t lnb_value = dispatch_id.x; v_px[lnb_l] = lnb_on ? lnb_value : v_px[lnb_l]; }
        { const int32_t lnb_value = dispatch_id.y; v_py[lnb_l] = lnb_on ? lnb_value : v_py[lnb_l]; }
        { const float lnb_value = (((((float)v_px[lnb_l]) / ((float)v_width)) * 3.0f) - 2.0f); v_cx[lnb_l] = lnb_on ? lnb_value : v_cx[lnb_l]; }
        { const float lnb_value = (((((float)v_py[lnb_l]) / ((float)v_height)) * 2.0f) - 1.0f); v_cy[lnb_l] = lnb_on ? lnb_value : v_cy[lnb_l]; }
        { const float lnb_value = 0.0f; v_zx[lnb_l] = lnb_on ? lnb_value : v_zx[lnb_l]; }
        { const float lnb_value = 0.0f; v_zy[lnb_l] = lnb_on ? lnb_value : v_zy[lnb_l]; }
        { const int32_t lnb_value = 0; v_iteration[lnb_l] = lnb_on ? lnb_value : v_iteration[lnb_l]; }
    }
    {
        int32_t lnb_m1[32], lnb_m2[32];
#pragma omp simd
        for (int32_t lnb_l = 0; lnb_l < 32; ++lnb_l) {
            const lnb_int3 dispatch_id = {lnb_x0 + lnb_l, y, z};
            lnb_m1[lnb_l] = lnb_m0[lnb_l];
        }
        for (;;) {
#pragma omp simd
            for (int32_t lnb_l = 0; lnb_l < 32; ++lnb_l) {
                const lnb_int3 dispatch_id = {lnb_x0 + lnb_l, y, z};
                const int32_t lnb_on = lnb_m1[lnb_l];
                const int32_t lnb_taken = lnb_on & ((((v_iteration[lnb_l] < v_max_iterations) && (((v_zx[lnb_l] * v_zx[lnb_l]) + (v_zy[lnb_l] * v_zy[lnb_l])) <= 4.0f))) != 0);
                lnb_m1[lnb_l] = lnb_taken;
                lnb_m2[lnb_l] = lnb_taken;
            }
            if (!lnb_any_lane(lnb_m1, 32)) break;
            if (lnb_thread_stopped(lnb_state)) return;
#pragma omp simd
            for (int32_t lnb_l = 0; lnb_l < 32; ++lnb_l) {
                const lnb_int3 dispatch_id = {lnb_x0 + lnb_l, y, z};
                const int32_t lnb_on = lnb_m2[lnb_l];
                { const float lnb_value = (((v_zx[lnb_l] * v_zx[lnb_l]) - (v_zy[lnb_l] * v_zy[lnb_l])) + v_cx[lnb_l]); v_t[lnb_l] = lnb_on ? lnb_value : v_t[lnb_l]; }
                { const float lnb_value = (((2.0f * v_zx[lnb_l]) * v_zy[lnb_l]) + v_cy[lnb_l]); v_zy[lnb_l] = lnb_on ? lnb_value : v_zy[lnb_l]; }
                { const float lnb_value = v_t[lnb_l]; v_zx[lnb_l] = lnb_on ? lnb_value : v_zx[lnb_l]; }
                { const int32_t lnb_value = (v_iteration[lnb_l] + 1); v_iteration[lnb_l] = lnb_on ? lnb_value : v_iteration[lnb_l]; }
            }
        }
    }
    for (int32_t lnb_l = 0; lnb_l < 32; ++lnb_l) {
        const lnb_int3 dispatch_id = {lnb_x0 + lnb_l, y, z};
        if (!lnb_m0[lnb_l]) continue;
        b_image[((v_py[lnb_l] * v_width) + v_px[lnb_l])] = v_iteration[lnb_l];
    }
}
#endif

static __attribute__((noinline)) void lnb_mandelbrot_block(const void *arguments, lnb_launch *launch,
        lnb_int3 size, lnb_int3 block) {
    if (lnb_launch_stopped(launch)) return;
    const lnb_mandelbrot_arguments *a = arguments;
    const int32_t y = block.y, z = block.z;
    const int32_t start = block.x * 64;
    const int32_t end = size.x - start > 64 ? start + 64 : size.x;
    int32_t *b_image = a->b_image;
    const int32_t v_width = a->s_width;
    const int32_t v_height = a->s_height;
    const int32_t v_max_iterations = a->s_max_iterations;
    const int32_t *const cancel = launch->cancel;
#if defined(__OPTIMIZE__)
    for (int32_t x0 = start; x0 < end; x0 += 32) {
        lnb_thread group = {.cancel = cancel};
        lnb_mandelbrot_lanes(x0, end, y, z, size, b_image, v_width, v_height, v_max_iterations, &group);
        if (group.failed == LNB_OK) continue;
        for (int32_t x = x0; x < end && x < x0 + 32; ++x) {
            lnb_thread state = {.details = 1, .skip_writes = 1, .cancel = cancel};
            const lnb_int3 id = {x, y, z};
            lnb_mandelbrot_thread(id, size, b_image, v_width, v_height, v_max_iterations, &state);
            if (state.failed != LNB_OK) {
                lnb_report(launch, &state, x, y, z);
                return;
            }
        }
        lnb_report(launch, &group, x0, y, z);
        return;
    }
#else
    for (int32_t x = start; x < end; ++x) {
        lnb_thread state = {.details = 1, .cancel = cancel};
        const lnb_int3 id = {x, y, z};
        lnb_mandelbrot_thread(id, size, b_image, v_width, v_height, v_max_iterations, &state);
        if (state.failed != LNB_OK) {
            lnb_report(launch, &state, x, y, z);
            return;
        }
    }
#endif
}

/* A tiered compile (luisa_nb.kernels.c.tiers) hands a fast build the optimised build's
   block function and launch entry here; this build's own block function, for that. */
lnb_block_function lnb_mandelbrot_optimised_block;
void (*lnb_mandelbrot_optimised_launch)(const void *, lnb_launch *);
const lnb_block_function lnb_mandelbrot_own_block = lnb_mandelbrot_block;

void lnb_mandelbrot_launch(const void *packed_arguments, lnb_launch *launch) {
    void (*optimised)(const void *, lnb_launch *) =
        __atomic_load_n(&lnb_mandelbrot_optimised_launch, __ATOMIC_ACQUIRE);
    if (optimised) {
        optimised(packed_arguments, launch);
        return;
    }
    lnb_mandelbrot_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    if (!lnb_valid_size(a.size, launch)) return;
    const lnb_int3 size = {(int32_t)a.size[0], (int32_t)a.size[1], (int32_t)a.size[2]};
    lnb_blocks blocks;
    lnb_divide(&blocks, lnb_mandelbrot_block, &lnb_mandelbrot_optimised_block, &a, size,
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
