/* AVX2 8-bit-activation dot products (qdot_x86.h) with maddubs + madd; compiled with -mavx2
 * -mfma -mf16c. */
#include <immintrin.h>
#include <string.h>

static inline __m256i dot_us(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

static inline __m256i dot_usa(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, dot_us(u, s));
}

static inline __m256i dot_ws(__m256i acc, __m256i a, __m256i b) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}

#include "backend/cpu/qdot_x86.h"

const hr_cpu_qdots hr_cpu_qdots_avx2 = QDOT_TABLE("avx2");
