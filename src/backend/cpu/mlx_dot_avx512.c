/* AVX-512 dot products of MLX 4- and 8-bit rows (mlx_dot.h): 16 f32 lanes, 32 codes per
 * step widened with cvtepu8_epi32; compiled with -mavx512f -mfma. */
#include <immintrin.h>

#include "backend/cpu/mlx_dot.h"

static inline __m512 codes16(__m128i bytes16) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes16));
}

static float dot(const uint8_t *w, const float *s, const float *b, const float *x, const float *xs,
                 long K, int group, int bits) {
    __m512 tot = _mm512_setzero_ps();
    float bias = 0;
    const __m128i m4 = _mm_set1_epi8(15);
    for (long g = 0; g < K / group; g++) {
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        for (long k = g * group; k < (g + 1) * group; k += 32) {
            __m128i c0, c1;
            if (bits == 4) {
                __m128i v = _mm_loadu_si128((const __m128i *)(w + k / 2));
                __m128i lo = _mm_and_si128(v, m4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
                c0 = _mm_unpacklo_epi8(lo, hi);
                c1 = _mm_unpackhi_epi8(lo, hi);
            } else {
                c0 = _mm_loadu_si128((const __m128i *)(w + k));
                c1 = _mm_loadu_si128((const __m128i *)(w + k + 16));
            }
            a0 = _mm512_fmadd_ps(codes16(c0), _mm512_loadu_ps(x + k), a0);
            a1 = _mm512_fmadd_ps(codes16(c1), _mm512_loadu_ps(x + k + 16), a1);
        }
        tot = _mm512_fmadd_ps(_mm512_add_ps(a0, a1), _mm512_set1_ps(s[g]), tot);
        bias += b[g] * xs[g];
    }
    return _mm512_reduce_add_ps(tot) + bias;
}

static float dot4(const uint8_t *w, const float *s, const float *b, const float *x, const float *xs,
                  long K, int group) {
    return dot(w, s, b, x, xs, K, group, 4);
}

static float dot8(const uint8_t *w, const float *s, const float *b, const float *x, const float *xs,
                  long K, int group) {
    return dot(w, s, b, x, xs, K, group, 8);
}

const hr_cpu_mlx_dots hr_cpu_mlx_dots_avx512 = {"avx512", {[4] = dot4, [8] = dot8}};
