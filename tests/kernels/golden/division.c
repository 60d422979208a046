/* luisa_nb kernel 'division': generated code. */

#include <stdint.h>
#include <string.h>
#include <math.h>

typedef struct { int32_t x, y, z; } lnb_int3;

typedef struct {
    int64_t size[3];
    const int32_t *b_a;
    const int32_t *b_b;
    int32_t *b_quotient;
    int32_t *b_remainder;
    float *b_float_quotient;
    float *b_float_remainder;
} lnb_division_arguments;

static inline int32_t lnb_floordiv_int32(int32_t a, int32_t b) {
    if (b == 0) return 0;
    if (b == -1) return -a;
    int32_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static inline int32_t lnb_mod_int32(int32_t a, int32_t b) {
    if (b == 0 || b == -1) return 0;
    int32_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static inline float lnb_floordiv_float32(float a, float b) {
    if (b == 0) return a / b;
    float m = fmodf(a, b);
    float d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
    if (d == 0) return copysignf(0, a / b);
    float f = floorf(d);
    return (d - f > 0.5f) ? f + 1 : f;
}

static inline float lnb_mod_float32(float a, float b) {
    float r = fmodf(a, b);
    if (b == 0) return r;
    if (r != 0) return ((b < 0) != (r < 0)) ? r + b : r;
    return copysignf(0, b);
}

static inline void lnb_division_thread(lnb_int3 dispatch_id, lnb_int3 dispatch_size, const int32_t *b_a, const int32_t *b_b, int32_t *b_quotient, int32_t *b_remainder, float *b_float_quotient, float *b_float_remainder) {
    int32_t v_i = 0;
    float v_fa = 0;
    float v_fb = 0;
    v_i = dispatch_id.x;
    b_quotient[v_i] = lnb_floordiv_int32(b_a[v_i], b_b[v_i]);
    b_remainder[v_i] = lnb_mod_int32(b_a[v_i], b_b[v_i]);
    v_fa = (((float)b_a[v_i]) * 0.5f);
    v_fb = ((float)b_b[v_i]);
    b_float_quotient[v_i] = lnb_floordiv_float32(v_fa, v_fb);
    b_float_remainder[v_i] = lnb_mod_float32(v_fa, v_fb);
}

static inline void lnb_division_block(const lnb_division_arguments *a, lnb_int3 size, int64_t z, int64_t y, int64_t block) {
    const int64_t start = block * 2048;
    const int64_t end = start + 2048 < a->size[0] ? start + 2048 : a->size[0];
#pragma omp simd
    for (int64_t x = start; x < end; ++x) {
        const lnb_int3 id = {(int32_t)x, (int32_t)y, (int32_t)z};
        lnb_division_thread(id, size, a->b_a, a->b_b, a->b_quotient, a->b_remainder, a->b_float_quotient, a->b_float_remainder);
    }
}

void lnb_division(const void *packed_arguments) {
    lnb_division_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    const int64_t size_x = a.size[0], size_y = a.size[1], size_z = a.size[2];
    const int64_t blocks = (size_x + 2047) / 2048;
    const lnb_int3 size = {(int32_t)size_x, (int32_t)size_y, (int32_t)size_z};
    if (size_x * size_y * size_z >= 8192) {
#pragma omp parallel for collapse(3) schedule(static)
        for (int64_t z = 0; z < size_z; ++z)
            for (int64_t y = 0; y < size_y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    lnb_division_block(&a, size, z, y, block);
    } else {
        for (int64_t z = 0; z < size_z; ++z)
            for (int64_t y = 0; y < size_y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    lnb_division_block(&a, size, z, y, block);
    }
}
