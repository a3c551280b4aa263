/* Head vectors of the KV store in narrow dtypes: storing f32 rows as bf16 / f16 (round to
 * nearest even) or Q8_0 (GGML's layout and rounding), and the plain C loader back to f32
 * that the SIMD loaders (kernels_avx2.c, kernels_avx512.c) are tested against. A loaded
 * value is exact (bf16, f16, and an f16 scale times an int8, all fit an f32), so attention
 * computes the same bits from a row whichever loader or path read it. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"

/* One GGML block_q8_0: d = amax / 127 stored as f16, q = round(x / d). */
static void q8_block(uint8_t *dst, const float *x) {
    float amax = 0;
    for (int i = 0; i < HR_Q8_BLOCK; i++) amax = fmaxf(amax, fabsf(x[i]));
    float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
    uint16_t dh = hr_f32_to_f16(d);
    memcpy(dst, &dh, 2);
    for (int i = 0; i < HR_Q8_BLOCK; i++) dst[2 + i] = (uint8_t)(int8_t)roundf(x[i] * id);
}

void hr_kv_row_store(void *row, const float *x, hr_dtype dtype, int n) {
    uint16_t *h = row;
    switch (dtype) {
    case HR_BF16: for (int i = 0; i < n; i++) h[i] = hr_f32_to_bf16(x[i]); break;
    case HR_F16: for (int i = 0; i < n; i++) h[i] = hr_f32_to_f16(x[i]); break;
    case HR_Q8_0:
        for (int b = 0; b < n / HR_Q8_BLOCK; b++)
            q8_block((uint8_t *)row + (size_t)b * HR_Q8_BYTES, x + b * HR_Q8_BLOCK);
        break;
    default: memcpy(row, x, sizeof(float) * (size_t)n); break;
    }
}

void hr_kv_row_load_ref(float *y, const void *row, hr_dtype dtype, int n) {
    const uint16_t *h = row;
    switch (dtype) {
    case HR_BF16: for (int i = 0; i < n; i++) y[i] = hr_bf16_to_f32(h[i]); break;
    case HR_F16: for (int i = 0; i < n; i++) y[i] = hr_f16_to_f32(h[i]); break;
    case HR_Q8_0:
        for (int b = 0; b < n / HR_Q8_BLOCK; b++) {
            const uint8_t *blk = (const uint8_t *)row + (size_t)b * HR_Q8_BYTES;
            uint16_t dh;
            memcpy(&dh, blk, 2);
            float d = hr_f16_to_f32(dh);
            for (int i = 0; i < HR_Q8_BLOCK; i++) y[b * HR_Q8_BLOCK + i] = d * (float)(int8_t)blk[2 + i];
        }
        break;
    default: memcpy(y, row, sizeof(float) * (size_t)n); break;
    }
}
