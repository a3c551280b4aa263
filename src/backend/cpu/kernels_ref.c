/* Plain C reference kernels: the definition of what the SIMD variants must compute, and
 * the fallback on CPUs without AVX2. */
#include <math.h>
#include <stddef.h>

#include "backend/cpu/kernels.h"
#include "tensor/dtype.h"
#include "tensor/tile16.h"

/* Element (n, k) of w sits at AT(n, k): row-major, or in the 4-row tiles of tensor/tile16.h
 * (rows below n1 / 4 * 4 tiled; nt stands for the weight's row count there). */
#define REF_MM(NAME, WT, CONV, AT)                                                                 \
    static void NAME(float *y, long ldy, const float *x, long ldx, const void *wv, int K, int T,   \
                     long n0, long n1) {                                                           \
        const WT *w = wv;                                                                          \
        long nt = n1 % HR_TILE16_ROWS ? n1 : n1 + HR_TILE16_ROWS;                                  \
        (void)nt;                                                                                  \
        for (int t = 0; t < T; t++)                                                                \
            for (long n = n0; n < n1; n++) {                                                       \
                const float *xr = x + t * ldx;                                                     \
                float s = 0;                                                                       \
                for (int k = 0; k < K; k++)                                                        \
                    s += CONV(w[AT(n, k)]) * xr[k];                                                \
                y[t * ldy + n] = s;                                                                \
            }                                                                                      \
    }

#define ROWS_AT(n, k) ((n) * (long)K + (k))
#define TILES_AT(n, k) hr_tile16_off(nt, K, n, k)
#define ID(v) (v)
REF_MM(mm_f32, float, ID, ROWS_AT)
REF_MM(mm_bf16, uint16_t, hr_bf16_to_f32, ROWS_AT)
REF_MM(mm_f16, uint16_t, hr_f16_to_f32, ROWS_AT)
REF_MM(mm_bf16_t4, uint16_t, hr_bf16_to_f32, TILES_AT)
REF_MM(mm_f16_t4, uint16_t, hr_f16_to_f32, TILES_AT)

/* Sums exactly as mm_f32 sums one output (attention relies on it). */
static float dot(const float *a, const float *b, int n) {
    float s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static void axpy(float *y, float a, const float *x, int n) {
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

static void scale(float *y, float a, int n) {
    for (int i = 0; i < n; i++)
        y[i] *= a;
}

/* The definition of pv: one axpy per weight that is not 0. */
static void pv(float *const *o, const float *s, long s_ld, int n, const float *const *v, int nj,
               int hd) {
    for (int jj = 0; jj < nj; jj++)
        for (int i = 0; i < n; i++)
            if (s[i * s_ld + jj] != 0) axpy(o[i], s[i * s_ld + jj], v[jj], hd);
}

static float max(const float *s, int n) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        m = s[i] > m ? s[i] : m;
    return m;
}

static float exp_sum(float *s, int n, float m) {
    float sum = 0;
    for (int i = 0; i < n; i++) {
        s[i] = s[i] == -INFINITY ? 0 : expf(s[i] - m);
        sum += s[i];
    }
    return sum;
}

const hr_cpu_kernels hr_cpu_kernels_ref = {
    .name = "generic",
    .mm_f32 = mm_f32,
    .mm_bf16 = mm_bf16,
    .mm_f16 = mm_f16,
    .mm_bf16_t4 = mm_bf16_t4,
    .mm_f16_t4 = mm_f16_t4,
    .dot = dot,
    .axpy = axpy,
    .scale = scale,
    .pv = pv,
    .kv_load = hr_kv_row_load_ref,
    .max = max,
    .exp_sum = exp_sum,
};

const hr_cpu_kernels *hr_cpu_kernels_get(void) {
    switch (hr_cpu()->level) {
    case HR_CPU_AVX512: return &hr_cpu_kernels_avx512;
    case HR_CPU_AVX2: return &hr_cpu_kernels_avx2;
    default: return &hr_cpu_kernels_ref;
    }
}
