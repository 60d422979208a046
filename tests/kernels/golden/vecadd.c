/* luisa_nb kernel 'vecadd': generated code. */

#include <stdint.h>
#include <string.h>

typedef struct { int32_t x, y, z; } lnb_int3;

typedef struct {
    int64_t size[3];
    float *b_buf_z;
    const float *b_x;
    const float *b_y;
} lnb_vecadd_arguments;

static inline void lnb_vecadd_thread(lnb_int3 dispatch_id, lnb_int3 dispatch_size, float *b_buf_z, const float *b_x, const float *b_y) {
    int32_t v_tid = 0;
    v_tid = dispatch_id.x;
    b_buf_z[v_tid] = (b_x[v_tid] + b_y[v_tid]);
}

static inline void lnb_vecadd_block(const lnb_vecadd_arguments *a, lnb_int3 size, int64_t z, int64_t y, int64_t block) {
    const int64_t start = block * 2048;
    const int64_t end = start + 2048 < a->size[0] ? start + 2048 : a->size[0];
#pragma omp simd
    for (int64_t x = start; x < end; ++x) {
        const lnb_int3 id = {(int32_t)x, (int32_t)y, (int32_t)z};
        lnb_vecadd_thread(id, size, a->b_buf_z, a->b_x, a->b_y);
    }
}

void lnb_vecadd(const void *packed_arguments) {
    lnb_vecadd_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    const int64_t size_x = a.size[0], size_y = a.size[1], size_z = a.size[2];
    const int64_t blocks = (size_x + 2047) / 2048;
    const lnb_int3 size = {(int32_t)size_x, (int32_t)size_y, (int32_t)size_z};
    if (size_x * size_y * size_z >= 8192) {
#pragma omp parallel for collapse(3) schedule(static)
        for (int64_t z = 0; z < size_z; ++z)
            for (int64_t y = 0; y < size_y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    lnb_vecadd_block(&a, size, z, y, block);
    } else {
        for (int64_t z = 0; z < size_z; ++z)
            for (int64_t y = 0; y < size_y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    lnb_vecadd_block(&a, size, z, y, block);
    }
}
