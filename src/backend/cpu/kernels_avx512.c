/* AVX-512 kernels (compiled with -mavx512*; called only when cpuid says so). The matmul
 * microkernel computes a tile of 4 weight rows x 4 tokens with 16 accumulators, walking
 * 16-row blocks of w so a block stays in cache while every token tile passes over it.
 * Weights are widened to f32 (bf16: shift; f16: vcvtph2ps) and accumulated in f32, which
 * is exact with respect to the reference's products. */
#include <immintrin.h>
#include <stdint.h>

#include "backend/cpu/kernels.h"

static inline __m512 ld_f32(const void *p, long i) { return _mm512_loadu_ps((const float *)p + i); }
static inline __m512 ldm_f32(const void *p, long i, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, (const float *)p + i);
}
static inline __m512 ld_bf16(const void *p, long i) {
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 ldm_bf16(const void *p, long i, __mmask16 m) {
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 ld_f16(const void *p, long i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
}
static inline __m512 ldm_f16(const void *p, long i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i));
}

/* One tile: rows nr (1..4) of w starting at wp (element stride K, element size esz) and
 * tokens nt (1..4) of x. Missing rows/tokens alias the first one and are not stored. */
#define DEFINE_TILE(NAME, ESZ, LD, LDM)                                                     \
    static void NAME(float *y, long ldy, const float *x, long ldx, const char *wp, int K,   \
                     int nr, int nt) {                                                      \
        const char *w[4];                                                                   \
        const float *xs[4];                                                                 \
        for (int r = 0; r < 4; r++) w[r] = wp + (r < nr ? r : 0) * (long)K * ESZ;           \
        for (int t = 0; t < 4; t++) xs[t] = x + (t < nt ? t : 0) * ldx;                     \
        __m512 acc[4][4];                                                                   \
        for (int t = 0; t < 4; t++)                                                         \
            for (int r = 0; r < 4; r++) acc[t][r] = _mm512_setzero_ps();                    \
        int k = 0;                                                                          \
        for (; k + 16 <= K; k += 16) {                                                      \
            __m512 wv[4];                                                                   \
            for (int r = 0; r < 4; r++) wv[r] = LD(w[r], k);                                \
            for (int t = 0; t < 4; t++) {                                                   \
                __m512 xv = _mm512_loadu_ps(xs[t] + k);                                     \
                for (int r = 0; r < 4; r++) acc[t][r] = _mm512_fmadd_ps(wv[r], xv, acc[t][r]); \
            }                                                                               \
        }                                                                                   \
        if (k < K) {                                                                        \
            __mmask16 m = (__mmask16)((1u << (K - k)) - 1);                                 \
            __m512 wv[4];                                                                   \
            for (int r = 0; r < 4; r++) wv[r] = LDM(w[r], k, m);                            \
            for (int t = 0; t < 4; t++) {                                                   \
                __m512 xv = _mm512_maskz_loadu_ps(m, xs[t] + k);                            \
                for (int r = 0; r < 4; r++) acc[t][r] = _mm512_fmadd_ps(wv[r], xv, acc[t][r]); \
            }                                                                               \
        }                                                                                   \
        for (int t = 0; t < nt; t++)                                                        \
            for (int r = 0; r < nr; r++) y[t * ldy + r] = _mm512_reduce_add_ps(acc[t][r]);  \
    }

#define DEFINE_MM(NAME, TILE, ESZ)                                                          \
    static void NAME(float *y, long ldy, const float *x, long ldx, const void *w, int K,    \
                     int T, long n0, long n1) {                                             \
        for (long nb = n0; nb < n1; nb += 16) {                                             \
            long ne = nb + 16 < n1 ? nb + 16 : n1;                                          \
            for (int t = 0; t < T; t += 4) {                                                \
                int nt = T - t < 4 ? T - t : 4;                                             \
                for (long n = nb; n < ne; n += 4) {                                         \
                    int nr = ne - n < 4 ? (int)(ne - n) : 4;                                \
                    TILE(y + t * ldy + n, ldy, x + t * ldx, ldx,                            \
                         (const char *)w + n * (long)K * ESZ, K, nr, nt);                   \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }

DEFINE_TILE(tile_f32, 4, ld_f32, ldm_f32)
DEFINE_TILE(tile_bf16, 2, ld_bf16, ldm_bf16)
DEFINE_TILE(tile_f16, 2, ld_f16, ldm_f16)
DEFINE_MM(mm_f32, tile_f32, 4)
DEFINE_MM(mm_bf16, tile_bf16, 2)
DEFINE_MM(mm_f16, tile_f16, 2)

static float dot(const float *a, const float *b, int n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static void axpy(float *y, float a, const float *x, int n) {
    __m512 av = _mm512_set1_ps(a);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 yv = _mm512_maskz_loadu_ps(m, y + i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i), yv));
    }
}

static void scale(float *y, float a, int n) {
    __m512 av = _mm512_set1_ps(a);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(av, _mm512_maskz_loadu_ps(m, y + i)));
    }
}

const hr_cpu_kernels hr_cpu_kernels_avx512 = {"avx512", mm_f32, mm_bf16, mm_f16, dot, axpy, scale};
