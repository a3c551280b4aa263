/* The x86 8-bit-activation dot products, written once for AVX2 (qdot_avx2.c) and AVX-512
 * VNNI (qdot_vnni.c): the including file defines dot_us(u, s), eight int32 sums of four
 * unsigned x signed byte products (maddubs + madd, or vpdpbusd; the same integers, as no
 * product pair here reaches maddubs' saturation). Signed weights use the sign trick
 * (|w| times x with w's sign). Each block's integer lanes are scaled and summed into f32
 * lanes, as llama.cpp's ggml_vec_dot_*_q8_0. */
#include <immintrin.h>

#include "backend/cpu/qdot.h"

static inline float f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The eight int32 sums of signed w times signed x. */
static inline __m256i dot_ss(__m256i w, __m256i x) {
    return dot_us(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

static inline __m256i load_x(const hr_q8x *x) { return _mm256_loadu_si256((const __m256i *)x->q); }

/* 16 bytes of nibbles to 32 bytes: low nibbles first, then high ones. */
static inline __m256i nibbles(const uint8_t *p) {
    __m128i t = _mm_loadu_si128((const __m128i *)p);
    __m256i v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(v, _mm256_set1_epi8(15));
}

/* Byte j of the result is 0xff where bit j of the 32 bits at p is set. */
static inline __m256i bits_to_bytes(const uint8_t *p) {
    uint32_t b;
    memcpy(&b, p, 4);
    const __m256i shuf = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
                                            0x0303030303030303);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)b), shuf);
    v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

static float dot_q8_0(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    __m256 acc = _mm256_setzero_ps();
    for (long b = 0; b < nb; b++, w += 34) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(w + 2));
        __m256 s = _mm256_cvtepi32_ps(dot_ss(q, load_x(&x[b])));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w) * x[b].d), s, acc);
    }
    return hsum(acc);
}

static float dot_q4_0(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    __m256 acc = _mm256_setzero_ps();
    for (long b = 0; b < nb; b++, w += 18) {
        __m256i q = _mm256_sub_epi8(nibbles(w + 2), _mm256_set1_epi8(8));
        __m256 s = _mm256_cvtepi32_ps(dot_ss(q, load_x(&x[b])));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w) * x[b].d), s, acc);
    }
    return hsum(acc);
}

static float dot_q5_0(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    __m256 acc = _mm256_setzero_ps();
    for (long b = 0; b < nb; b++, w += 22) {
        __m256i hi = _mm256_and_si256(bits_to_bytes(w + 2), _mm256_set1_epi8(16));
        __m256i q = _mm256_sub_epi8(_mm256_or_si256(nibbles(w + 6), hi), _mm256_set1_epi8(16));
        __m256 s = _mm256_cvtepi32_ps(dot_ss(q, load_x(&x[b])));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w) * x[b].d), s, acc);
    }
    return hsum(acc);
}

static float dot_q4_k(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    for (long sb = 0; sb < nb / 8; sb++, w += 144, x += 8) {
        float d = f16(w), dmin = f16(w + 2);
        const uint8_t *s = w + 4, *qs = w + 16;
        for (int j = 0; j < 8; j += 2) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(qs + j * 16));
            __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            for (int k = 0; k < 2; k++) {
                int jj = j + k;
                int sc = jj < 4 ? s[jj] & 63 : (s[jj + 4] & 15) | (s[jj - 4] >> 6) << 4;
                int m = jj < 4 ? s[jj + 4] & 63 : (s[jj + 4] >> 4) | (s[jj] >> 6) << 4;
                __m256 p = _mm256_cvtepi32_ps(dot_us(k ? hi : lo, load_x(&x[jj])));
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc * x[jj].d), p, acc);
                mins += dmin * (float)m * x[jj].d * (float)x[jj].sum;
            }
        }
    }
    return hsum(acc) - mins;
}

static float dot_q6_k(const void *wv, const hr_q8x *x, long nb) {
    const uint8_t *w = wv;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (long sb = 0; sb < nb / 8; sb++, w += 210, x += 8) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192);
        float d = f16(w + 208);
        for (int h = 0; h < 2; h++) {
            __m256i l0 = _mm256_loadu_si256((const __m256i *)(ql + h * 64));
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + h * 64 + 32));
            __m256i hb = _mm256_loadu_si256((const __m256i *)(qh + h * 32));
            for (int s = 0; s < 4; s++) {
                int j = h * 4 + s;
                __m256i lo = s % 2 ? l1 : l0;
                lo = _mm256_and_si256(s / 2 ? _mm256_srli_epi16(lo, 4) : lo, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * s), m2);
                __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)),
                                            _mm256_set1_epi8(32));
                __m256i scv = _mm256_setr_epi32(sc[2 * j], sc[2 * j], sc[2 * j], sc[2 * j],
                                                sc[2 * j + 1], sc[2 * j + 1], sc[2 * j + 1], sc[2 * j + 1]);
                __m256i p = _mm256_mullo_epi32(dot_ss(q, load_x(&x[j])), scv);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * x[j].d), _mm256_cvtepi32_ps(p), acc);
            }
        }
    }
    return hsum(acc);
}

#define QDOT_TABLE(NAME)                                                                     \
    {NAME,                                                                                   \
     {[HR_Q8_0] = dot_q8_0, [HR_Q4_0] = dot_q4_0, [HR_Q5_0] = dot_q5_0, [HR_Q4_K] = dot_q4_k, \
      [HR_Q6_K] = dot_q6_k}}
