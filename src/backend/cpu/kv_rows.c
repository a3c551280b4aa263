/* Head vectors of the KV store in narrow dtypes: storing f32 rows as bf16 / f16 (round to
 * nearest even) or Q8_0 / Q4_0 (GGML's layouts and rounding: tensor/quant.c's quantizers),
 * and the plain C loader back to f32 that the SIMD loaders (kernels_avx2.c, kernels_avx512.c)
 * are tested against. A loaded value is exact (bf16, f16, and an f16 scale times a small
 * integer, all fit an f32), so attention
 * computes the same bits from a row whichever loader or path read it. */
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"
#include "tensor/quant.h"

void hr_kv_row_store(void *row, const float *x, hr_dtype dtype, int n) {
    uint16_t *h = row;
    switch (dtype) {
    case HR_BF16:
        for (int i = 0; i < n; i++)
            h[i] = hr_f32_to_bf16(x[i]);
        break;
    case HR_F16:
        for (int i = 0; i < n; i++)
            h[i] = hr_f32_to_f16(x[i]);
        break;
    case HR_Q8_0:
    case HR_Q4_0: hr_quant_row(dtype, x, row, n); break;
    default: memcpy(row, x, sizeof(float) * (size_t)n); break;
    }
}

void hr_kv_row_load_ref(float *y, const void *row, hr_dtype dtype, int n) {
    const uint16_t *h = row;
    switch (dtype) {
    case HR_BF16:
        for (int i = 0; i < n; i++)
            y[i] = hr_bf16_to_f32(h[i]);
        break;
    case HR_F16:
        for (int i = 0; i < n; i++)
            y[i] = hr_f16_to_f32(h[i]);
        break;
    case HR_Q8_0:
    case HR_Q4_0: hr_dequant_row(dtype, row, y, n); break;
    default: memcpy(y, row, sizeof(float) * (size_t)n); break;
    }
}
