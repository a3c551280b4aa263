/* AVX-512 VNNI 8-bit-activation dot products (qdot_x86.h) on 256-bit vpdpbusd; compiled with
 * -mavx512vnni -mavx512vl, used only where cpuid has VNNI. */
#include <immintrin.h>
#include <string.h>

static inline __m256i dot_us(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
}

static inline __m256i dot_usa(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
}

static inline __m256i dot_ws(__m256i acc, __m256i a, __m256i b) {
    return _mm256_dpwssd_epi32(acc, a, b);
}

#include "backend/cpu/qdot_x86.h"

const hr_cpu_qdots hr_cpu_qdots_vnni = QDOT_TABLE("avx512-vnni");
