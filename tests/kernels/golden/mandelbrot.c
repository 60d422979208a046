/* luisa_nb kernel 'mandelbrot': generated code. */

#include <stdint.h>
#include <string.h>

typedef struct { int32_t x, y, z; } lnb_int3;

typedef struct {
    int64_t size[3];
    int32_t *b_image;
    int32_t s_width;
    int32_t s_height;
    int32_t s_max_iterations;
} lnb_mandelbrot_arguments;

static inline void lnb_mandelbrot_thread(lnb_int3 dispatch_id, lnb_int3 dispatch_size, int32_t *b_image, int32_t v_width, int32_t v_height, int32_t v_max_iterations) {
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
        v_t = (((v_zx * v_zx) - (v_zy * v_zy)) + v_cx);
        v_zy = (((2.0f * v_zx) * v_zy) + v_cy);
        v_zx = v_t;
        v_iteration = (v_iteration + 1);
    }
    b_image[((v_py * v_width) + v_px)] = v_iteration;
}

static inline void lnb_mandelbrot_block(const lnb_mandelbrot_arguments *a, lnb_int3 size, int64_t z, int64_t y, int64_t block) {
    const int64_t start = block * 64;
    const int64_t end = start + 64 < a->size[0] ? start + 64 : a->size[0];
    for (int64_t x = start; x < end; ++x) {
        const lnb_int3 id = {(int32_t)x, (int32_t)y, (int32_t)z};
        lnb_mandelbrot_thread(id, size, a->b_image, a->s_width, a->s_height, a->s_max_iterations);
    }
}

void lnb_mandelbrot(const void *packed_arguments) {
    lnb_mandelbrot_arguments a;
    memcpy(&a, packed_arguments, sizeof a);
    const int64_t size_x = a.size[0], size_y = a.size[1], size_z = a.size[2];
    const int64_t blocks = (size_x + 63) / 64;
    const lnb_int3 size = {(int32_t)size_x, (int32_t)size_y, (int32_t)size_z};
    if (size_x * size_y * size_z >= 256) {
#pragma omp parallel for collapse(3) schedule(dynamic)
        for (int64_t z = 0; z < size_z; ++z)
            for (int64_t y = 0; y < size_y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    lnb_mandelbrot_block(&a, size, z, y, block);
    } else {
        for (int64_t z = 0; z < size_z; ++z)
            for (int64_t y = 0; y < size_y; ++y)
                for (int64_t block = 0; block < blocks; ++block)
                    lnb_mandelbrot_block(&a, size, z, y, block);
    }
}
