/* CPU inner kernels behind one dispatch table per instruction-set level: the plain C
 * reference (kernels_ref.c) and AVX2 / AVX-512 variants tested against it. A matmul
 * kernel computes output columns [n0, n1) of y[T, ldy] = x[T, K] w[N, K]^T (no bias). */
#ifndef HR_BACKEND_CPU_KERNELS_H
#define HR_BACKEND_CPU_KERNELS_H

#include <stdint.h>

#include "base/cpu.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

/* GGML Q8_0: 32 elements per block, an f16 scale then 32 int8. Q4_0: an f16 scale then 16
 * bytes, element i in the low nibble of byte i and element i + 16 in its high nibble, each
 * stored + 8. */
enum { HR_Q8_BLOCK = 32, HR_Q8_BYTES = 34, HR_Q4_BYTES = 18 };

typedef void (*hr_mm_fn)(float *y, long ldy, const float *x, long ldx, const void *w, int K, int T,
                         long n0, long n1);

/* The same with x already rounded to bf16 (--compute bf16): products of bf16 pairs. */
typedef void (*hr_mm_bx_fn)(float *y, long ldy, const uint16_t *x, long ldx, const void *w, int K,
                            int T, long n0, long n1);

/* The longest head vector the qk kernels take. */
enum { HR_QK_MAX_HD = 512 };

typedef struct {
    const char *name;
    hr_mm_fn mm_f32;   /* w is f32 */
    hr_mm_fn mm_bf16;  /* w is bf16 */
    hr_mm_fn mm_f16;   /* w is IEEE f16 */
    hr_mm_bx_fn mm_bx; /* bf16 x times bf16 w on VDPBF16PS; NULL below AVX-512, use only
                          when hr_cpu()->avx512bf16 */
    /* w is bf16 / f16 in the 4-row tiles of tensor/tile16.h (K a multiple of 8, n0 of 4, n1
       of 4 or the last row); the sums of mm_bf16 / mm_f16 at the same level */
    hr_mm_fn mm_bf16_t4, mm_f16_t4;
    float (*dot)(const float *a, const float *b, int n);
    void (*axpy)(float *y, float a, const float *x, int n); /* y += a * x */
    void (*scale)(float *y, float a, int n);                /* y *= a */
    /* P V of one attention tile: for each position jj < nj in order, for each query i < n
       whose weight w = s[i * s_ld + jj] is not 0, o[i] += w * v[jj] over hd floats, each
       element bit for bit what axpy gives; v[jj] may be NULL where every weight is 0. */
    void (*pv)(float *const *o, const float *s, long s_ld, int n, const float *const *v, int nj,
               int hd);
    /* y[0..n) = one KV head vector stored in dtype (F32, BF16, F16, Q8_0, Q4_0), widened in
       registers; bit for bit hr_kv_row_load_ref. */
    void (*kv_load)(float *y, const void *row, hr_dtype dtype, int n);
    /* Q K^T of one attention tile: s[h * s_ld + jj] = dot(q[h], row jj as kv_load widens
       it, hd) for h < nq, jj < nj, bit for bit the level's dot, and 0 where rows[jj] is
       NULL (never read); rows in dtype as kv_load takes it; hd a multiple of 8 up to
       HR_QK_MAX_HD (hr_cpu_qk_fits). NULL: kv_load and dot row by row. */
    void (*qk)(float *s, long s_ld, const float *const *q, int nq, const void *const *rows,
               hr_dtype dtype, int nj, int hd);
    /* The largest of s[0..n), n >= 1 (-INFINITY if all are). */
    float (*max)(const float *s, int n);
    /* s[i] = exp(s[i] - m) for i < n (s[i] <= m; -INFINITY gives 0); returns their sum. The
       SIMD levels use their own exp (within 2 ulp of expf, tested) and sum in lanes. */
    float (*exp_sum)(float *s, int n, float m);
    /* y[0..n) = x rounded to bf16, bit for bit hr_f32_to_bf16 (denormals kept, which
       VCVTNEPS2BF16 would flush); NULL: that function element by element. */
    void (*round_bf16)(uint16_t *y, const float *x, long n);
} hr_cpu_kernels;

/* The reference KV row loader (kv_rows.c). */
void hr_kv_row_load_ref(float *y, const void *row, hr_dtype dtype, int n);

/* The AVX2 tile kernels, which the AVX-512 level uses too (its own kernels read rows). */
void hr_avx2_mm_bf16_t4(float *y, long ldy, const float *x, long ldx, const void *w, int K, int T,
                        long n0, long n1);
void hr_avx2_mm_f16_t4(float *y, long ldy, const float *x, long ldx, const void *w, int K, int T,
                       long n0, long n1);

/* Whether level k's qk kernel scores head vectors of hd elements. */
static inline int hr_cpu_qk_fits(const hr_cpu_kernels *k, int hd) {
    return k->qk && hd % 8 == 0 && hd <= HR_QK_MAX_HD;
}

/* The kernel for weight w (its dtype, and whether the CPU backend tiled it). */
static inline hr_mm_fn hr_cpu_mm_for(const hr_cpu_kernels *k, const hr_tensor *w) {
    if (w->dtype == HR_BF16) return w->row_tile ? k->mm_bf16_t4 : k->mm_bf16;
    if (w->dtype == HR_F16) return w->row_tile ? k->mm_f16_t4 : k->mm_f16;
    return k->mm_f32;
}

extern const hr_cpu_kernels hr_cpu_kernels_ref;
extern const hr_cpu_kernels hr_cpu_kernels_avx2;
extern const hr_cpu_kernels hr_cpu_kernels_avx512;

/* The kernels for the current hr_cpu() level. */
const hr_cpu_kernels *hr_cpu_kernels_get(void);

#endif
