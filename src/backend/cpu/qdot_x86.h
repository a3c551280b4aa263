/* The x86 8-bit-activation dot products, written once for AVX2 (qdot_avx2.c) and AVX-512
 * VNNI (qdot_vnni.c): the including file defines dot_us(u, s), eight int32 sums of four
 * unsigned x signed byte products (maddubs + madd, or vpdpbusd; the same integers, as no
 * product pair here reaches maddubs' saturation). Signed weights use the sign trick
 * (|w| times x with w's sign). Each block's integer lanes are scaled and summed into f32
 * lanes, as llama.cpp's ggml_vec_dot_*_q8_0. Each type is one tile function over nt tokens: a
 * weight block is decoded once for all of them, then every token runs the operations the
 * single-token dot would, in the same order; dot (nt = 1) and dot4 (nt = 4) are that function
 * inlined, so a token's result is bit for bit the same in either (batch invariance). */
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

#define TILE static inline __attribute__((always_inline)) void

/* acc[t] += d_w * d_x(t) * (the eight int32 sums of |q| times x(t) with q's sign), for the
 * nt tokens' blocks xb, xb + xs, ... (q: the decoded weight block, signed bytes). */
static inline __attribute__((always_inline)) void acc_signed(__m256 *acc, __m256i q, float dw,
                                                             const hr_q8x *xb, long xs, int nt) {
    __m256i aq = _mm256_sign_epi8(q, q);
    for (int t = 0; t < nt; t++) {
        const hr_q8x *x = xb + t * xs;
        __m256 s = _mm256_cvtepi32_ps(dot_us(aq, _mm256_sign_epi8(load_x(x), q)));
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * x->d), s, acc[t]);
    }
}

static inline __attribute__((always_inline)) void zero(__m256 *acc, int nt) {
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
}

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

TILE tile_q8_0(const void *wv, const hr_q8x *x, long xs, long nb, int nt, float *out) {
    const uint8_t *w = wv;
    __m256 acc[4];
    zero(acc, nt);
    for (long b = 0; b < nb; b++, w += 34)
        acc_signed(acc, _mm256_loadu_si256((const __m256i *)(w + 2)), f16(w), x + b, xs, nt);
    for (int t = 0; t < nt; t++) out[t] = hsum(acc[t]);
}

TILE tile_q4_0(const void *wv, const hr_q8x *x, long xs, long nb, int nt, float *out) {
    const uint8_t *w = wv;
    __m256 acc[4];
    zero(acc, nt);
    for (long b = 0; b < nb; b++, w += 18)
        acc_signed(acc, _mm256_sub_epi8(nibbles(w + 2), _mm256_set1_epi8(8)), f16(w), x + b, xs, nt);
    for (int t = 0; t < nt; t++) out[t] = hsum(acc[t]);
}

TILE tile_q5_0(const void *wv, const hr_q8x *x, long xs, long nb, int nt, float *out) {
    const uint8_t *w = wv;
    __m256 acc[4];
    zero(acc, nt);
    for (long b = 0; b < nb; b++, w += 22) {
        __m256i hi = _mm256_and_si256(bits_to_bytes(w + 2), _mm256_set1_epi8(16));
        __m256i q = _mm256_sub_epi8(_mm256_or_si256(nibbles(w + 6), hi), _mm256_set1_epi8(16));
        acc_signed(acc, q, f16(w), x + b, xs, nt);
    }
    for (int t = 0; t < nt; t++) out[t] = hsum(acc[t]);
}

/* Q4_K's 8 six-bit scales and mins of one super-block (s: its 12 scale bytes), as 8 bytes
 * each: bytes 0-3 are the low 6 bits of words 0 / 1, bytes 4-7 nibbles of word 2 with the
 * top 2 bits of words 0 / 1 above them (four bytes per u32 operation). */
static inline void q4_k_scales(const uint8_t *s, uint8_t *sc, uint8_t *m) {
    uint32_t u[3], r[4];
    memcpy(u, s, 12);
    r[0] = u[0] & 0x3f3f3f3f;
    r[1] = (u[2] & 0x0f0f0f0f) | ((u[0] >> 6) & 0x03030303) << 4;
    r[2] = u[1] & 0x3f3f3f3f;
    r[3] = ((u[2] >> 4) & 0x0f0f0f0f) | ((u[1] >> 6) & 0x03030303) << 4;
    memcpy(sc, r, 8);
    memcpy(m, r + 2, 8);
}

TILE tile_q4_k(const void *wv, const hr_q8x *x, long xs, long nb, int nt, float *out) {
    const uint8_t *w = wv;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc[4];
    float mins[4] = {0, 0, 0, 0};
    zero(acc, nt);
    for (long sb = 0; sb < nb / 8; sb++, w += 144, x += 8) {
        float d = f16(w), dmin = f16(w + 2);
        uint8_t sc[8], m[8];
        q4_k_scales(w + 4, sc, m);
        const uint8_t *qs = w + 16;
        for (int j = 0; j < 8; j += 2) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(qs + j * 16));
            __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            for (int k = 0; k < 2; k++) {
                int jj = j + k;
                for (int t = 0; t < nt; t++) {
                    const hr_q8x *xj = x + t * xs + jj;
                    __m256 p = _mm256_cvtepi32_ps(dot_us(k ? hi : lo, load_x(xj)));
                    acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[jj] * xj->d), p, acc[t]);
                    mins[t] += dmin * (float)m[jj] * xj->d * (float)xj->sum;
                }
            }
        }
    }
    for (int t = 0; t < nt; t++) out[t] = hsum(acc[t]) - mins[t];
}

TILE tile_q6_k(const void *wv, const hr_q8x *x, long xs, long nb, int nt, float *out) {
    const uint8_t *w = wv;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    __m256 acc[4];
    zero(acc, nt);
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
                __m256i aq = _mm256_sign_epi8(q, q);
                for (int t = 0; t < nt; t++) {
                    const hr_q8x *xj = x + t * xs + j;
                    __m256i p = _mm256_mullo_epi32(dot_us(aq, _mm256_sign_epi8(load_x(xj), q)), scv);
                    acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * xj->d), _mm256_cvtepi32_ps(p), acc[t]);
                }
            }
        }
    }
    for (int t = 0; t < nt; t++) out[t] = hsum(acc[t]);
}

/* dot_T (one token) and dot4_T (four, x blocks xs apart) from tile_T. */
#define QDOT_PAIR(T)                                                               \
    static float dot_##T(const void *w, const hr_q8x *x, long nb) {                \
        float o;                                                                   \
        tile_##T(w, x, 0, nb, 1, &o);                                              \
        return o;                                                                  \
    }                                                                              \
    static void dot4_##T(const void *w, const hr_q8x *x, long xs, long nb, float *out) { \
        tile_##T(w, x, xs, nb, 4, out);                                            \
    }
QDOT_PAIR(q8_0)
QDOT_PAIR(q4_0)
QDOT_PAIR(q5_0)
QDOT_PAIR(q4_k)
QDOT_PAIR(q6_k)

#define QDOT_TABLE(NAME)                                                                     \
    {NAME,                                                                                   \
     {[HR_Q8_0] = dot_q8_0, [HR_Q4_0] = dot_q4_0, [HR_Q5_0] = dot_q5_0, [HR_Q4_K] = dot_q4_k, \
      [HR_Q6_K] = dot_q6_k},                                                                 \
     {[HR_Q8_0] = dot4_q8_0, [HR_Q4_0] = dot4_q4_0, [HR_Q5_0] = dot4_q5_0,                   \
      [HR_Q4_K] = dot4_q4_k, [HR_Q6_K] = dot4_q6_k}}
