/* The x86 8-bit-activation dot products and activation quantizers, written once for AVX2
 * (qdot_avx2.c) and AVX-512 VNNI (qdot_vnni.c): the including file defines dot_us(u, s),
 * eight int32 sums of four unsigned x signed byte products (maddubs + madd, or vpdpbusd; the
 * same integers, as no product pair here reaches maddubs' saturation), dot_usa(acc, u, s),
 * acc plus those, and dot_ws(acc, a, b), acc plus the eight int32 sums of two int16 products
 * (madd + add, or vpdpwssd). Q8_0 uses the sign trick (|w| times x with w's sign), the other
 * types unsigned codes with their offsets taken apart (docs/quant.md). Each type is one tile
 * function over nt tokens: a weight block is decoded once for all of them, then every token
 * runs the operations the single-token dot would, in the same order; dot (nt = 1) and dot4
 * (nt = 4) are that function inlined, so a token's result is bit for bit the same in either
 * (batch invariance). The repacked tiles (qdot_rows_x86.h) are built from the same
 * primitives. */
#include <immintrin.h>
#include <math.h>

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

static inline __m256i load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Token t's activations: xs bytes apart. */
static inline const void *token(const void *x, size_t xs, int t) {
    return (const char *)x + (size_t)t * xs;
}

#define TILE static inline __attribute__((always_inline)) void
/* -O2 does not unroll: the token and sub-block loops must be, for their accumulators to
 * stay in registers. An instrumented (ASan) build cannot always honor the annotation (GCC
 * warns) and its speed does not matter: there it is left out. */
#ifdef __SANITIZE_ADDRESS__
#define UNROLL
#else
#define UNROLL _Pragma("GCC unroll 8")
#endif

/* Byte j of the result is 0xff where bit j of b is set. */
static inline __m256i bits_to_bytes(uint32_t b) {
    const __m256i shuf =
        _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)b), shuf);
    v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

/* The formats with a scale per 32: Q8_0's codes are signed (|w| times x with w's sign), one
 * block per unit of integer lanes; Q4_0 / Q5_0's unsigned, two blocks per unit (one 16-byte
 * load of nibbles, x paired to match), their offsets (8 or 16 times x's sum) summed apart. */
enum { Q8_0_F, Q4_0_F, Q5_0_F };

static inline int block_bytes(int f) { return f == Q8_0_F ? 34 : f == Q4_0_F ? 18 : 22; }

/* The f16 scales of n blocks bb bytes apart (zero past n). */
static inline short scale_at(const uint8_t *w, int bb, int n, int i) {
    uint16_t u = 0;
    if (i < n) memcpy(&u, w + i * bb, 2);
    return (short)u;
}

static inline __m256 scales(const uint8_t *w, int bb, int n) {
    return _mm256_cvtph_ps(_mm_setr_epi16(scale_at(w, bb, n, 0), scale_at(w, bb, n, 1),
                                          scale_at(w, bb, n, 2), scale_at(w, bb, n, 3),
                                          scale_at(w, bb, n, 4), scale_at(w, bb, n, 5),
                                          scale_at(w, bb, n, 6), scale_at(w, bb, n, 7)));
}

/* Blocks i, i + 1 of a Q4_0 / Q5_0 group (w: block i; one: block i alone) as [low 16 of i,
 * low 16 of i + 1] (lo) and the high 16 (hi): codes 0..15 / 0..31. */
static inline void nib_pair(int f, const uint8_t *w, int bb, int one, __m256i *lo, __m256i *hi) {
    const uint8_t *qs = w + (f == Q4_0_F ? 2 : 6);
    __m128i a = _mm_loadu_si128((const __m128i *)qs);
    __m128i b = one ? _mm_setzero_si128() : _mm_loadu_si128((const __m128i *)(qs + bb));
    __m256i v = _mm256_set_m128i(b, a), m4 = _mm256_set1_epi8(15);
    *lo = _mm256_and_si256(v, m4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if (f == Q5_0_F) {
        uint32_t h0, h1 = 0;
        memcpy(&h0, w + 2, 4);
        if (!one) memcpy(&h1, w + bb + 2, 4);
        __m256i b4 = _mm256_set1_epi8(16);
        *lo = _mm256_or_si256(*lo, _mm256_and_si256(bits_to_bytes((h0 & 0xffff) | h1 << 16), b4));
        *hi = _mm256_or_si256(*hi,
                              _mm256_and_si256(bits_to_bytes(h0 >> 16 | (h1 & 0xffff0000u)), b4));
    }
}

typedef struct {
    __m256 acc[4][2]; /* per token: integer lanes times scales, two chains */
    __m256 off[4];    /* per token: scales times x's sums (Q4_0 / Q5_0) */
} acc32;

/* One group of n (<= 8) blocks at w times the nt tokens' group g: the 8 weight scales times
 * x's in one product, a unit's lanes scaled by their block's lane of it (permps). */
static inline __attribute__((always_inline)) void
group32(int f, const uint8_t *w, int n, const void *x, size_t xs, long g, int nt, acc32 *a) {
    int bb = block_bytes(f);
    __m256 dw = scales(w, bb, n), sc[4];
    UNROLL
    for (int t = 0; t < nt; t++) {
        const hr_q8x *xg = (const hr_q8x *)token(x, xs, t) + g;
        sc[t] = _mm256_mul_ps(dw, _mm256_loadu_ps(xg->d));
        if (f != Q8_0_F)
            a->off[t] = _mm256_fmadd_ps(sc[t], _mm256_cvtepi32_ps(load32(xg->sum)), a->off[t]);
    }
    int per = f == Q8_0_F ? 1 : 2; /* blocks per unit */
    UNROLL
    for (int u = 0; u < 8 / per; u++) {
        if (u * per >= n) break;
        __m256i q, r; /* Q8_0: q and |q|; else low and high codes */
        if (f == Q8_0_F) {
            q = load32(w + u * bb + 2);
            r = _mm256_sign_epi8(q, q);
        } else {
            nib_pair(f, w + 2 * u * bb, bb, 2 * u + 1 >= n, &q, &r);
        }
        int b0 = per * u, b1 = per * u + per - 1; /* lanes 0-3: block b0, 4-7: b1 */
        __m256i idx = _mm256_setr_epi32(b0, b0, b0, b0, b1, b1, b1, b1);
        UNROLL
        for (int t = 0; t < nt; t++) {
            const int8_t *xq = ((const hr_q8x *)token(x, xs, t) + g)->q + 32 * per * u;
            __m256i p = f == Q8_0_F ? dot_us(r, _mm256_sign_epi8(load32(xq), q))
                                    : dot_usa(dot_us(q, load32(xq)), r, load32(xq + 32));
            __m256 s = _mm256_permutevar8x32_ps(sc[t], idx);
            a->acc[t][u % 2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), s, a->acc[t][u % 2]);
        }
    }
}

/* Row w (format f) times nt tokens, group by group; the row's last group may be partial. */
TILE tile_32(int f, const void *wv, const void *x, size_t xs, long nb, int nt, float *out) {
    const uint8_t *w = wv;
    int bb = block_bytes(f);
    acc32 a;
    UNROLL
    for (int t = 0; t < nt; t++)
        a.acc[t][0] = a.acc[t][1] = a.off[t] = _mm256_setzero_ps();
    long g = 0;
    for (; g < nb / 8; g++)
        group32(f, w + g * 8 * bb, 8, x, xs, g, nt, &a);
    if (nb % 8) group32(f, w + g * 8 * bb, (int)(nb % 8), x, xs, g, nt, &a);
    float offset = f == Q4_0_F ? 8.0f : 16.0f;
    UNROLL
    for (int t = 0; t < nt; t++) {
        out[t] = hsum(_mm256_add_ps(a.acc[t][0], a.acc[t][1]));
        if (f != Q8_0_F) out[t] -= offset * hsum(a.off[t]);
    }
}

TILE tile_q8_0(const void *w, const void *x, size_t xs, long nb, int nt, float *out) {
    tile_32(Q8_0_F, w, x, xs, nb, nt, out);
}

TILE tile_q4_0(const void *w, const void *x, size_t xs, long nb, int nt, float *out) {
    tile_32(Q4_0_F, w, x, xs, nb, nt, out);
}

TILE tile_q5_0(const void *w, const void *x, size_t xs, long nb, int nt, float *out) {
    tile_32(Q5_0_F, w, x, xs, nb, nt, out);
}

/* Q4_K's 8 six-bit scales (bytes 0-7) and mins (8-15) of one super-block (s: its 12 scale
 * bytes, read as 16): with u0..u2 its words, the low 6 bits of u0 (scales 0-3) and u1 (mins
 * 0-3), and the nibbles of u2 (scales / mins 4-7) with the top 2 bits of u0 / u1 above them. */
static inline __m128i q4_k_scales(const uint8_t *s) {
    __m128i u = _mm_loadu_si128((const __m128i *)s);
    __m128i v =
        _mm_srlv_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4));
    __m128i top =
        _mm_slli_epi32(_mm_srli_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0)), 6), 4);
    const __m128i low = _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f);
    const __m128i high = _mm_setr_epi32(0, 0x30303030, 0, 0x30303030);
    return _mm_or_si128(_mm_and_si128(v, low), _mm_and_si128(top, high));
}

/* The int16 pair j of s (eight int16 in each 128-bit half) in every pair of its half. */
static inline __m256i pair(__m256i s, int j) {
    return _mm256_shuffle_epi8(s, _mm256_set1_epi16((short)(0x0100 + 0x0202 * j)));
}

static inline int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* A super-block's 8 sub-blocks of unsigned codes q times x's codes (maddubs), times the
 * sub-blocks' scales sc into int32 (dot_ws), in two accumulators (even and odd sub-blocks). */
static inline void scaled_codes(const __m256i q[8], const hr_q8k *xk, __m256i sc, __m256i *a0,
                                __m256i *a1) {
    *a0 = _mm256_setzero_si256(), *a1 = _mm256_setzero_si256();
    UNROLL
    for (int j = 0; j < 8; j += 2) {
        *a0 = dot_ws(*a0, _mm256_maddubs_epi16(q[j], load32(xk->q + 32 * j)), pair(sc, j));
        *a1 = dot_ws(*a1, _mm256_maddubs_epi16(q[j + 1], load32(xk->q + 32 * j + 32)),
                     pair(sc, j + 1));
    }
}

/* Q4_K / Q5_K super-block: the 8 sub-blocks' codes (unsigned; Q5_K's fifth bit j of qh[l]
 * for sub-block j) times x in 16-bit pairs (maddubs), times their scales into int32
 * (dot_ws), and the mins times x's sums per 32; one integer each per super-block, as the
 * reference. */
TILE tile_qk(int five, const void *wv, const void *x, size_t xs, long nb, int nt, float *out) {
    const uint8_t *w = wv;
    const __m256i m4 = _mm256_set1_epi8(15), b4 = _mm256_set1_epi8(16);
    float acc[4] = {0, 0, 0, 0};
    for (long sb = 0; sb < nb / 8; sb++, w += five ? 176 : 144) {
        __m128i scm = q4_k_scales(w + 4);
        __m256i scv = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));
        __m128i mv = _mm_cvtepu8_epi16(_mm_srli_si128(scm, 8));
        __m256i q[8];
        UNROLL
        for (int c = 0; c < 4; c++) {
            __m256i v = load32(w + (five ? 48 : 16) + 32 * c);
            q[2 * c] = _mm256_and_si256(v, m4);
            q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        }
        if (five) {
            __m256i hb = load32(w + 16);
            UNROLL
            for (int j = 0; j < 8; j++) {
                __m256i h = j <= 4 ? _mm256_slli_epi16(hb, 4 - j) : _mm256_srli_epi16(hb, j - 4);
                q[j] = _mm256_or_si256(q[j], _mm256_and_si256(h, b4));
            }
        }
        float d = f16(w), dmin = f16(w + 2);
        UNROLL
        for (int t = 0; t < nt; t++) {
            const hr_q8k *xk = (const hr_q8k *)token(x, xs, t) + sb;
            __m256i a0, a1;
            scaled_codes(q, xk, scv, &a0, &a1);
            __m128i ms = _mm_madd_epi16(mv, _mm_loadu_si128((const __m128i *)xk->s32));
            int32_t isum = hsum_i32(_mm256_add_epi32(a0, a1));
            int32_t msum = hsum_i32(_mm256_set_m128i(_mm_setzero_si128(), ms));
            acc[t] += xk->d * (d * (float)isum - dmin * (float)msum);
        }
    }
    for (int t = 0; t < nt; t++)
        out[t] = acc[t];
}

TILE tile_q4_k(const void *w, const void *x, size_t xs, long nb, int nt, float *out) {
    tile_qk(0, w, x, xs, nb, nt, out);
}

TILE tile_q5_k(const void *w, const void *x, size_t xs, long nb, int nt, float *out) {
    tile_qk(1, w, x, xs, nb, nt, out);
}

/* Q6_K super-block: 6-bit codes (unsigned) times x in 16-bit pairs, times the sub-blocks'
 * int8 scales into int32, less 32 * scale * x's sums per 16; one integer per super-block. */
TILE tile_q6_k(const void *wv, const void *x, size_t xs, long nb, int nt, float *out) {
    const uint8_t *w = wv;
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    float acc[4] = {0, 0, 0, 0};
    for (long sb = 0; sb < nb / 8; sb++, w += 210) {
        const uint8_t *ql = w, *qh = w + 128;
        __m128i sc8 = _mm_loadu_si128((const __m128i *)(w + 192));
        __m256i scn = _mm256_cvtepi8_epi16(sc8); /* the 16 scales in order */
        /* even scales in the low half, odd in the high: pair(sce, j) is sub-blocks 2j, 2j + 1 */
        __m256i sce = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, even_odd));
        __m256i q[8];
        UNROLL
        for (int h = 0; h < 2; h++) {
            __m256i l0 = load32(ql + h * 64), l1 = load32(ql + h * 64 + 32),
                    hb = load32(qh + h * 32);
            /* low nibbles of l0, l1, then high ones; qh's 2-bit pairs 0..3 moved to bits 4-5 */
            __m256i l0h = _mm256_srli_epi16(l0, 4), l1h = _mm256_srli_epi16(l1, 4);
            q[4 * h] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                       _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
            q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                           _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
            q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(l0h, m4), _mm256_and_si256(hb, m30));
            q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(l1h, m4),
                                           _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
        }
        float d = f16(w + 208);
        UNROLL
        for (int t = 0; t < nt; t++) {
            const hr_q8k *xk = (const hr_q8k *)token(x, xs, t) + sb;
            __m256i a0, a1;
            scaled_codes(q, xk, sce, &a0, &a1);
            __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(scn, load32(xk->s16)), 5);
            int32_t isum = hsum_i32(_mm256_sub_epi32(_mm256_add_epi32(a0, a1), off));
            acc[t] += xk->d * (d * (float)isum);
        }
    }
    for (int t = 0; t < nt; t++)
        out[t] = acc[t];
}

/* roundf of each lane, bit for bit (|v| < 2^23): truncated, then one step away from zero
 * where the dropped part is at least a half. */
static inline __m256 round_away(__m256 v) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_and_ps(_mm256_sub_ps(v, t), abs_mask);
    __m256 step = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_andnot_ps(abs_mask, v));
    return _mm256_add_ps(
        t, _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step));
}

static inline float amax32(const float *x) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 32; k += 8)
        m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

/* 32 floats times id, rounded (as hr_q8x_quantize), as int8 in order; *sum their sum. */
static inline __m256i q8_32(const float *x, float id, int32_t *sum) {
    __m256i v[4];
    for (int k = 0; k < 4; k++)
        v[k] = _mm256_cvtps_epi32(
            round_away(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), _mm256_set1_ps(id))));
    *sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(v[0], v[1]), _mm256_add_epi32(v[2], v[3])));
    /* the packs interleave 4-byte groups per 128-bit half: 0, 2, 4, 6, 1, 3, 5, 7 */
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline float scale_of(float am, float *id) {
    float d = am / 127.0f;
    *id = d == 0 ? 0.0f : 1.0f / d;
    return d;
}

static void quantize_q8x(const float *x, hr_q8x *out, long K, int paired) {
    long nb = K / 32;
    if (nb % 8) memset(out + nb / 8, 0, sizeof *out);
    for (long b = 0; b < nb; b++, x += 32) {
        hr_q8x *g = out + b / 8;
        int i = (int)(b % 8);
        float id;
        g->d[i] = scale_of(amax32(x), &id);
        __m256i q = q8_32(x, id, &g->sum[i]);
        if (paired) {
            int8_t *p = g->q + hr_q8x_pos(1, i, 0);
            _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(q));
            _mm_storeu_si128((__m128i *)(p + 32), _mm256_extracti128_si256(q, 1));
        } else {
            _mm256_storeu_si256((__m256i *)(g->q + 32 * i), q);
        }
    }
}

/* The sums of the two 16-element halves of the int8 in q. */
static inline void sums16(__m256i q, int16_t *s) {
    __m256i p =
        _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
    __m128i lo = _mm256_castsi256_si128(p), hi = _mm256_extracti128_si256(p, 1);
    __m128i h = _mm_hadd_epi32(lo, hi);
    h = _mm_hadd_epi32(h, h);
    s[0] = (int16_t)_mm_cvtsi128_si32(h);
    s[1] = (int16_t)_mm_extract_epi32(h, 1);
}

static void quantize_q8k(const float *x, hr_q8k *out, long K) {
    for (long b = 0; b < K / 256; b++, x += 256, out++) {
        float am = 0, id;
        for (int j = 0; j < 8; j++)
            am = fmaxf(am, amax32(x + 32 * j));
        out->d = scale_of(am, &id);
        for (int j = 0; j < 8; j++) {
            int32_t s;
            __m256i q = q8_32(x + 32 * j, id, &s);
            _mm256_storeu_si256((__m256i *)(out->q + 32 * j), q);
            sums16(q, out->s16 + 2 * j);
            out->s32[j] = (int16_t)s;
        }
    }
}

static void quantize_x(hr_dtype t, const float *x, void *out, long K) {
    if (hr_qdot_q8k(t))
        quantize_q8k(x, out, K);
    else
        quantize_q8x(x, out, K, hr_qdot_paired(t));
}

/* The repacked tiles' rows1_T / rows4_T. */
#include "backend/cpu/qdot_rows_x86.h"

/* dot_T (one token) and dot4_T (four, x blocks xs apart) from tile_T. */
#define QDOT_PAIR(T)                                                                               \
    static float dot_##T(const void *w, const void *x, long nb) {                                  \
        float o;                                                                                   \
        tile_##T(w, x, 0, nb, 1, &o);                                                              \
        return o;                                                                                  \
    }                                                                                              \
    static void dot4_##T(const void *w, const void *x, size_t xs, long nb, float *out) {           \
        tile_##T(w, x, xs, nb, 4, out);                                                            \
    }
QDOT_PAIR(q8_0)
QDOT_PAIR(q4_0)
QDOT_PAIR(q5_0)
QDOT_PAIR(q4_k)
QDOT_PAIR(q5_k)
QDOT_PAIR(q6_k)

#define QDOT_TABLE(NAME)                                                                           \
    {                                                                                              \
        NAME, {[HR_Q8_0] = dot_q8_0, [HR_Q4_0] = dot_q4_0, [HR_Q5_0] = dot_q5_0,                   \
               [HR_Q4_K] = dot_q4_k, [HR_Q5_K] = dot_q5_k, [HR_Q6_K] = dot_q6_k},                  \
            {[HR_Q8_0] = dot4_q8_0, [HR_Q4_0] = dot4_q4_0, [HR_Q5_0] = dot4_q5_0,                  \
             [HR_Q4_K] = dot4_q4_k, [HR_Q5_K] = dot4_q5_k, [HR_Q6_K] = dot4_q6_k},                 \
            {[HR_Q8_0] = rows1_q8_0, [HR_Q4_0] = rows1_q4_0, [HR_Q5_0] = rows1_q5_0,               \
             [HR_Q4_K] = rows1_q4_k, [HR_Q5_K] = rows1_q5_k, [HR_Q6_K] = rows1_q6_k},              \
            {[HR_Q8_0] = rows4_q8_0, [HR_Q4_0] = rows4_q4_0, [HR_Q5_0] = rows4_q5_0,               \
             [HR_Q4_K] = rows4_q4_k, [HR_Q5_K] = rows4_q5_k, [HR_Q6_K] = rows4_q6_k},              \
            QDOT_ROWS4X2, quantize_x                                                               \
    }
