/* AVX2 dot products of MLX 4- and 8-bit rows (mlx_dot.h): 8 f32 lanes, 32 codes per step
 * widened with cvtepu8_epi32; compiled with -mavx2 -mfma. */
#include <immintrin.h>

#include "backend/cpu/mlx_dot.h"

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline __m256 codes8(__m128i bytes8) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes8));
}

/* 32 codes as 32 bytes in element order: 4-bit codes are two per byte, low nibble first. */
static inline void step(__m128i lo16, __m128i hi16, const float *x, __m256 *acc) {
    acc[0] = _mm256_fmadd_ps(codes8(lo16), _mm256_loadu_ps(x), acc[0]);
    acc[1] = _mm256_fmadd_ps(codes8(_mm_srli_si128(lo16, 8)), _mm256_loadu_ps(x + 8), acc[1]);
    acc[0] = _mm256_fmadd_ps(codes8(hi16), _mm256_loadu_ps(x + 16), acc[0]);
    acc[1] = _mm256_fmadd_ps(codes8(_mm_srli_si128(hi16, 8)), _mm256_loadu_ps(x + 24), acc[1]);
}

static float dot(const uint8_t *w, const float *s, const float *b, const float *x, const float *xs,
                 long K, int group, int bits) {
    __m256 tot = _mm256_setzero_ps();
    float bias = 0;
    const __m128i m4 = _mm_set1_epi8(15);
    for (long g = 0; g < K / group; g++) {
        __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        for (long k = g * group; k < (g + 1) * group; k += 32) {
            if (bits == 4) {
                __m128i v = _mm_loadu_si128((const __m128i *)(w + k / 2));
                __m128i lo = _mm_and_si128(v, m4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
                step(_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi), x + k, acc);
            } else {
                step(_mm_loadu_si128((const __m128i *)(w + k)),
                     _mm_loadu_si128((const __m128i *)(w + k + 16)), x + k, acc);
            }
        }
        tot = _mm256_fmadd_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_set1_ps(s[g]), tot);
        bias += b[g] * xs[g];
    }
    return hsum(tot) + bias;
}

static float dot4(const uint8_t *w, const float *s, const float *b, const float *x, const float *xs,
                  long K, int group) {
    return dot(w, s, b, x, xs, K, group, 4);
}

static float dot8(const uint8_t *w, const float *s, const float *b, const float *x, const float *xs,
                  long K, int group) {
    return dot(w, s, b, x, xs, K, group, 8);
}

const hr_cpu_mlx_dots hr_cpu_mlx_dots_avx2 = {"avx2", {[4] = dot4, [8] = dot8}};
