/* AVX2 8-bit-activation dot products (qdot_x86.h) with maddubs + madd; compiled with -mavx2
 * -mfma -mf16c. */
#include <immintrin.h>
#include <string.h>

static inline __m256i dot_us(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

#include "backend/cpu/qdot_x86.h"

const hr_cpu_qdots hr_cpu_qdots_avx2 = QDOT_TABLE("avx2");
