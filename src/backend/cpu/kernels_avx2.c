/* AVX2 + FMA kernels (compiled with -mavx2 -mfma -mf16c; used when cpuid has AVX2 but not
 * AVX-512). Same blocking as the AVX-512 file with a 4 rows x 2 tokens tile (16 ymm
 * registers) and a scalar tail for K not a multiple of 8. */
#include <immintrin.h>
#include <stdint.h>

#include "backend/cpu/kernels.h"
#include "tensor/dtype.h"

static inline __m256 ld_f32(const void *p, long i) { return _mm256_loadu_ps((const float *)p + i); }
static inline __m256 ld_bf16(const void *p, long i) {
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline __m256 ld_f16(const void *p, long i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
}
static inline float sc_f32(const void *p, long i) { return ((const float *)p)[i]; }
static inline float sc_bf16(const void *p, long i) { return hr_bf16_to_f32(((const uint16_t *)p)[i]); }
static inline float sc_f16(const void *p, long i) { return hr_f16_to_f32(((const uint16_t *)p)[i]); }

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define UNROLL _Pragma("GCC unroll 8")
enum { PF_AHEAD = 256 }; /* elements ahead that the decode tile prefetches */
/* NR rows x NT tokens; rows beyond nr alias the first row and are not stored. */
#define DEFINE_TILE(NAME, NR, NT, ESZ, LD, SC)                                              \
    static void NAME(float *y, long ldy, const float *x, long ldx, const char *wp, int K,   \
                     int nr) {                                                              \
        const char *w[NR];                                                                  \
        UNROLL for (int r = 0; r < NR; r++) w[r] = wp + (r < nr ? r : 0) * (long)K * ESZ;   \
        __m256 acc[NT][NR];                                                                 \
        UNROLL for (int t = 0; t < NT; t++)                                                 \
            UNROLL for (int r = 0; r < NR; r++) acc[t][r] = _mm256_setzero_ps();            \
        int k = 0;                                                                          \
        for (; k + 8 <= K; k += 8) {                                                        \
            __m256 wv[NR];                                                                  \
            if (NT == 1 && (k & 31) == 0)                                                   \
                UNROLL for (int r = 0; r < NR; r++)                                         \
                    _mm_prefetch(w[r] + (long)(k + PF_AHEAD) * ESZ, _MM_HINT_T0);           \
            UNROLL for (int r = 0; r < NR; r++) wv[r] = LD(w[r], k);                        \
            UNROLL for (int t = 0; t < NT; t++) {                                           \
                __m256 xv = _mm256_loadu_ps(x + t * ldx + k);                               \
                UNROLL for (int r = 0; r < NR; r++) acc[t][r] = _mm256_fmadd_ps(wv[r], xv, acc[t][r]); \
            }                                                                               \
        }                                                                                   \
        UNROLL for (int t = 0; t < NT; t++)                                                 \
            UNROLL for (int r = 0; r < NR; r++) {                                           \
                if (r >= nr) continue;                                                      \
                float s = hsum(acc[t][r]);                                                  \
                for (int kk = k; kk < K; kk++) s += SC(w[r], kk) * x[t * ldx + kk];         \
                y[t * ldy + r] = s;                                                         \
            }                                                                               \
    }

/* Tokens in pairs (4 rows x 2 tokens), a leftover token alone (4 rows x 1 token). */
#define DEFINE_MM(NAME, TILE2, TILE1, ESZ)                                                  \
    static void NAME(float *y, long ldy, const float *x, long ldx, const void *w, int K,    \
                     int T, long n0, long n1) {                                             \
        const char *wb = w;                                                                 \
        for (long nb = n0; nb < n1; nb += 16) {                                             \
            long ne = nb + 16 < n1 ? nb + 16 : n1;                                          \
            int t = 0;                                                                      \
            for (; t + 2 <= T; t += 2)                                                      \
                for (long n = nb; n < ne; n += 4)                                           \
                    TILE2(y + t * ldy + n, ldy, x + t * ldx, ldx, wb + n * (long)K * ESZ,   \
                          K, ne - n < 4 ? (int)(ne - n) : 4);                               \
            for (; t < T; t++)                                                              \
                for (long n = nb; n < ne; n += 4)                                           \
                    TILE1(y + t * ldy + n, ldy, x + t * ldx, ldx, wb + n * (long)K * ESZ,   \
                          K, ne - n < 4 ? (int)(ne - n) : 4);                               \
        }                                                                                   \
    }

DEFINE_TILE(tile2_f32, 4, 2, 4, ld_f32, sc_f32)
DEFINE_TILE(tile2_bf16, 4, 2, 2, ld_bf16, sc_bf16)
DEFINE_TILE(tile2_f16, 4, 2, 2, ld_f16, sc_f16)
DEFINE_TILE(tile1_f32, 4, 1, 4, ld_f32, sc_f32)
DEFINE_TILE(tile1_bf16, 4, 1, 2, ld_bf16, sc_bf16)
DEFINE_TILE(tile1_f16, 4, 1, 2, ld_f16, sc_f16)
DEFINE_MM(mm_f32, tile2_f32, tile1_f32, 4)
DEFINE_MM(mm_bf16, tile2_bf16, tile1_bf16, 2)
DEFINE_MM(mm_f16, tile2_f16, tile1_f16, 2)

/* Sums exactly as a matmul tile sums one output (attention relies on it). */
static float dot(const float *a, const float *b, int n) {
    __m256 v = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) v = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), v);
    float s = hsum(v);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static void axpy(float *y, float a, const float *x, int n) {
    __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

static void scale(float *y, float a, int n) {
    __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(av, _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] *= a;
}

const hr_cpu_kernels hr_cpu_kernels_avx2 = {"avx2", mm_f32, mm_bf16, mm_f16, NULL, dot, axpy, scale};
