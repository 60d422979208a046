/* luisa_nb kernel 'control_flow': generated code. */

#include <stdint.h>
#include <string.h>

typedef struct { int32_t x, y, z; } lnb_int3;

typedef struct {
    int64_t size[3];
    int32_t *b_out;
    int32_t s_n;
} lnb_control_flow_arguments;

static inline int32_t lnb_mod_int32(int32_t a, int32_t b) {
    if (b == 0 || b == -1) return 0;
    int32_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static inline void lnb_control_flow_thread(lnb_int3 dispatch_id, lnb_int3 dispatch_size, int32_t *b_out, int32_t v_n) {
    int32_t v_i = 0;
    int32_t v_total = 0;
    int32_t v_j = 0;
    int32_t v_k = 0;
    int32_t v_count = 0;
    v_i = dispatch_id.x;
    v_total = 0;
    {
        const int32_t lnb_stop0 = v_n;
        for (int32_t lnb_i0 = 0; lnb_i0 < lnb_stop0; lnb_i0 += 1) {
            v_j = lnb_i0;
            if (lnb_mod_int32(v_j, 3) == 0) {
                continue;
            }
            if (v_j > ((2 * v_i) + 5)) {
                break;
            }
            {
                const int32_t lnb_stop1 = 0;
                for (int32_t lnb_i1 = v_j; lnb_i1 > lnb_stop1; lnb_i1 += (-2)) {
                    v_k = lnb_i1;
                    v_total = (v_total + v_k);
                }
            }
        }
    }
    v_count = 0;
    while (1) {
        v_count = (v_count + 1);
        if (v_count >= v_i) {
            break;
        }
    }
    if (v_i == 7) {
        b_out[v_i] = (-1);
        return;
    } else if (v_i == 8) {
    } else {
        v_total = (v_total + 1);
    }
    b_out[v_i] = ((v_total * 100) + v_count);
}

static inline void lnb_control_flow_block(const lnb_control_flow_arguments *a, lnb_int3 size, int64_t z, int64_t y, int64_t block) {
    const int64_t start = block * 64;
    const int64_t end = start + 64 < a->size[0] ? start + 64 : a->size[0];
    for (int64_t x = start; x < end; ++x) {
        const lnb_int3 id = {(int32_t)x, (int32_t)y, (int32_t)z};
        lnb_control_flow_thread(id, size, a->b_out, a->s_n);
    }
}

void lnb_control_flow(const void *packed_arguments) {
    lnb_control_flow_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    const int64_t size_x = a.size[0], size_y = a.size[1], size_z = a.size[2];
    const int64_t blocks = (size_x + 63) / 64;
    const lnb_int3 size = {(int32_t)size_x, (int32_t)size_y, (int32_t)size_z};
    if (size_x * size_y * size_z >= 256) {
#pragma omp parallel for collapse(3) schedule(dynamic)
        for (int64_t z = 0; z < size_z; ++z)
            for (int64_t y = 0; y < size_y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    lnb_control_flow_block(&a, size, z, y, block);
    } else {
        for (int64_t z = 0; z < size_z; ++z)
            for (int64_t y = 0; y < size_y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    lnb_control_flow_block(&a, size, z, y, block);
    }
}
