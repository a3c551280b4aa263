/* The x86 repacked tiles (qrepack.h), part of qdot_x86.h (its primitives; built for AVX2
 * and AVX-512 VNNI): 8 rows' block b in one stream, each token's x word broadcast to the 8 rows'
 * lanes, so lane r of the integer sums is row r's dot and one convert and one FMA per block
 * scale all 8 rows. Q4_0: unsigned nibbles times x (vpdpbusd, or maddubs + madd), the -8
 * offsets as -8 sum(x) the sum's start; Q5_0 the same with its fifth bits or-ed in (a
 * shift and a mask per vector, qh re-laid for it) and -16 sum(x). Q8_0 (codes kept XOR 0x80): with
 * VNNI the unsigned codes times x less 128 sum(x); on AVX2, whose maddubs would saturate on
 * unsigned bytes up to 255, the signed codes back and the sign trick. Q4_K / Q5_K / Q6_K: see their
 * tiles. Either way the same integers as qdot_rows_ref.c, then the same float operations in the
 * same order: bit for bit the C tile, and a token's lanes the same whatever the other tokens of
 * rows4 are. With AVX-512 VNNI, four tokens (prefill) also run over two tiles at once
 * (rows_tile2, rows_qk_tile2: 16 rows in 512-bit lanes, every x word broadcast once for both),
 * each lane bit for bit its 8-row tile's. */
#include "backend/cpu/qrepack.h"

/* Token x's 4-byte word at p in all 8 lanes. */
static inline __m256i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

#ifdef __AVX512VNNI__
enum { Q8U_OFFSET = 128 };
static inline __m256i dot_q8u(__m256i acc, __m256i wu, __m256i x) { return dot_usa(acc, wu, x); }
#else
enum { Q8U_OFFSET = 0 };
static inline __m256i dot_q8u(__m256i acc, __m256i wu, __m256i x) {
    return _mm256_add_epi32(acc, dot_ss(_mm256_xor_si256(wu, _mm256_set1_epi8(-128)), x));
}
#endif

/* A tile's nt token accumulators (8 rows in 8 lanes each) zeroed, and stored at out + 8 t. */
TILE acc_zero(__m256 *acc, int nt) {
    UNROLL
    for (int t = 0; t < nt; t++)
        acc[t] = _mm256_setzero_ps();
}

TILE acc_store(float *out, const __m256 *acc, int nt) {
    UNROLL
    for (int t = 0; t < nt; t++)
        _mm256_storeu_ps(out + HR_QROWS * t, acc[t]);
}

/* How many of `have` code vectors of codes up to code_max dot_scaled may take at once: on AVX2 the
 * n maddubs are summed in int16 lanes, exact while n times a maddubs lane's bound (2 x 127 x
 * code_max) stays under 2^15 (4-bit codes: 8, 30480; 5-bit: 4, 31496; 6-bit: 2, 32004). */
static inline int scaled_group(int code_max, int have) {
#ifdef __AVX512VNNI__
    return have;
#else
    int n = 32767 / (2 * 127 * code_max);
    return n < have ? n : have;
#endif
}

/* acc plus sc times the integer dot of n code vectors u[c] with x's words 4c .. (sc: int32
 * lanes in int16 range, the 8 rows' scales of one sub-block; n <= scaled_group of the codes).
 * VNNI: a vpdpbusd chain, then vpmulld. AVX2: the n maddubs summed in int16 lanes, then one
 * madd by sc in both halves of each lane. The same integers either way. */
static inline __m256i dot_scaled(__m256i acc, const __m256i *u, const int8_t *x, int n,
                                 __m256i sc) {
#ifdef __AVX512VNNI__
    __m256i a = _mm256_setzero_si256();
    UNROLL
    for (int c = 0; c < n; c++)
        a = dot_usa(a, u[c], bcast4(x + 4 * c));
    return _mm256_add_epi32(acc, _mm256_mullo_epi32(a, sc));
#else
    __m256i a = _mm256_maddubs_epi16(u[0], bcast4(x));
    UNROLL
    for (int c = 1; c < n; c++)
        a = _mm256_add_epi16(a, _mm256_maddubs_epi16(u[c], bcast4(x + 4 * c)));
    return dot_ws(acc, a, _mm256_blend_epi16(sc, _mm256_slli_epi32(sc, 16), 0xaa));
#endif
}

/* Q5_0's fifth bits of code vector v (elements 4v + k: bit 8k + v of each lane's re-laid
 * qh, qrepack.h) at bit 4 of each byte. */
static inline __m256i q5_0_bits(__m256i qh, int v) {
    __m256i b = v <= 4 ? _mm256_slli_epi32(qh, 4 - v) : _mm256_srli_epi32(qh, v - 4);
    return _mm256_and_si256(b, _mm256_set1_epi8(16));
}

/* Block 8 grp + i of a tile (o: its bytes; f: Q8_0_F, Q4_0_F or Q5_0_F) times the nt tokens
 * into acc[t]. */
static inline __attribute__((always_inline)) void rows_block(int f, const uint8_t *o, const void *x,
                                                             size_t xs, long grp, int i, int nt,
                                                             __m256 *acc) {
    __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o));
    const uint8_t *codes = o + 2 * HR_QROWS + (f == Q5_0_F ? 32 : 0);
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i v[8];
    if (f == Q8_0_F) {
        UNROLL
        for (int c = 0; c < 8; c++)
            v[c] = load32(codes + 32 * c);
    } else {
        UNROLL
        for (int c = 0; c < 4; c++) {
            __m256i p = load32(codes + 32 * c);
            v[c] = _mm256_and_si256(p, m4);
            v[c + 4] = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
        }
        if (f == Q5_0_F) {
            __m256i qh = load32(o + 2 * HR_QROWS);
            UNROLL
            for (int c = 0; c < 8; c++)
                v[c] = _mm256_or_si256(v[c], q5_0_bits(qh, c));
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) {
        const hr_q8x *g = (const hr_q8x *)token(x, xs, t) + grp;
        const int8_t *xq = g->q + hr_q8x_pos(f != Q8_0_F, i, 0);
        __m256i a0, a1 = _mm256_setzero_si256();
        if (f == Q8_0_F) {
            a0 = _mm256_set1_epi32(-Q8U_OFFSET * g->sum[i]);
            UNROLL
            for (int c = 0; c < 8; c += 2) {
                a0 = dot_q8u(a0, v[c], bcast4(xq + 4 * c));
                a1 = dot_q8u(a1, v[c + 1], bcast4(xq + 4 * c + 4));
            }
        } else {
            const __m256i one = _mm256_set1_epi32(1);
            a0 = _mm256_set1_epi32(-(f == Q5_0_F ? 16 : 8) * g->sum[i]);
            a0 = dot_scaled(a0, v, xq, 4, one);
            a1 = dot_scaled(a1, v + 4, xq + 32, 4, one);
        }
        __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(g->d[i]));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a0, a1)), s, acc[t]);
    }
}

/* The n bytes that lie `ahead` bytes past p fetched into L1, a line at a time (never faults,
 * so past a tensor's end is fine). A tile's stream is sequential, yet the hardware prefetchers
 * alone left a 2-core Zen 5's Q4_0 decode at 77-80 tok/s; two groups (super-blocks) ahead,
 * 95-98. always_inline: as a plain inline, GCC 12 -O2 dropped the prefetches altogether. */
static inline __attribute__((always_inline)) void prefetch_ahead(const uint8_t *p, int ahead,
                                                                 int n) {
    for (int l = 0; l < n; l += 64)
        _mm_prefetch((const char *)p + ahead + l, _MM_HINT_T0);
}

TILE rows_tile(int f, const void *tile, const void *x, size_t xs, long nb, int nt, float *out) {
    const uint8_t *o = tile;
    int bb = block_bytes(f);
    __m256 acc[4];
    acc_zero(acc, nt);
    long b = 0;
    /* whole groups of x's 8 blocks with the slot a constant: no index arithmetic per block */
    for (; b + 8 <= nb; b += 8, o += 8 * HR_QROWS * bb) {
        prefetch_ahead(o, 2 * 8 * HR_QROWS * bb, 8 * HR_QROWS * bb);
        UNROLL
        for (int i = 0; i < 8; i++)
            rows_block(f, o + i * HR_QROWS * bb, x, xs, b / 8, i, nt, acc);
    }
    for (; b < nb; b++, o += HR_QROWS * bb)
        rows_block(f, o, x, xs, b / 8, (int)(b % 8), nt, acc);
    acc_store(out, acc, nt);
}

static void rows1_q4_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(Q4_0_F, w, x, 0, nb, 1, out);
}
static void rows4_q4_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(Q4_0_F, w, x, xs, nb, 4, out);
}
static void rows1_q5_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(Q5_0_F, w, x, 0, nb, 1, out);
}
static void rows4_q5_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(Q5_0_F, w, x, xs, nb, 4, out);
}
static void rows1_q8_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(Q8_0_F, w, x, 0, nb, 1, out);
}
static void rows4_q8_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(Q8_0_F, w, x, xs, nb, 4, out);
}

#ifdef __AVX512VNNI__
/* Two tiles as one: A's 32 bytes at a in lanes 0-7, B's at b in lanes 8-15. */
static inline __m512i load2x32(const uint8_t *a, const uint8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load32(a)), load32(b), 1);
}

/* 16 f16 heads, A's 8 at h and B's at h + tb, as f32 lanes. */
static inline __m512 heads2(const uint8_t *h, size_t tb) {
    return _mm512_cvtph_ps(
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)h)),
                                _mm_loadu_si128((const __m128i *)(h + tb)), 1));
}

/* rows_block over tiles A (block at o) and B (tb bytes on) at once, A's 8 rows in lanes 0-7
 * and B's in 8-15 of 512-bit vectors: each x word broadcast once for 16 rows, one vpdpbusd
 * where rows_block takes two. The integer sums are the same integers (summed in another
 * order) and the float steps per lane are rows_block's, so each lane is bit for bit its
 * row's rows_block. */
static inline __attribute__((always_inline)) void rows_block2(int f, const uint8_t *o, size_t tb,
                                                              const void *x, size_t xs, long grp,
                                                              int i, int nt, __m512 *acc) {
    __m512 dw = heads2(o, tb);
    const uint8_t *codes = o + 2 * HR_QROWS + (f == Q5_0_F ? 32 : 0);
    const __m512i m4 = _mm512_set1_epi8(15), b4 = _mm512_set1_epi8(16);
    __m512i v[8];
    if (f == Q8_0_F) {
        UNROLL
        for (int c = 0; c < 8; c++)
            v[c] = load2x32(codes + 32 * c, codes + tb + 32 * c);
    } else {
        UNROLL
        for (int c = 0; c < 4; c++) {
            __m512i p = load2x32(codes + 32 * c, codes + tb + 32 * c);
            v[c] = _mm512_and_si512(p, m4);
            v[c + 4] = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
        }
        if (f == Q5_0_F) {
            __m512i qh = load2x32(o + 2 * HR_QROWS, o + tb + 2 * HR_QROWS);
            UNROLL
            for (int c = 0; c < 8; c++) {
                __m512i h = c <= 4 ? _mm512_slli_epi32(qh, 4 - c) : _mm512_srli_epi32(qh, c - 4);
                v[c] = _mm512_or_si512(v[c], _mm512_and_si512(h, b4));
            }
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) {
        const hr_q8x *g = (const hr_q8x *)token(x, xs, t) + grp;
        const int8_t *xq = g->q + hr_q8x_pos(f != Q8_0_F, i, 0);
        int off = f == Q8_0_F ? Q8U_OFFSET : f == Q5_0_F ? 16 : 8;
        __m512i a0 = _mm512_set1_epi32(-off * g->sum[i]), a1 = _mm512_setzero_si512();
        UNROLL
        for (int c = 0; c < 8; c += 2) {
            int32_t w0, w1; /* x words 4c .., the high nibbles' 16 bytes on for Q4_0 / Q5_0 */
            const int8_t *xc = xq + 4 * c + (f != Q8_0_F && c >= 4 ? 16 : 0);
            memcpy(&w0, xc, 4);
            memcpy(&w1, xc + 4, 4);
            a0 = _mm512_dpbusd_epi32(a0, v[c], _mm512_set1_epi32(w0));
            a1 = _mm512_dpbusd_epi32(a1, v[c + 1], _mm512_set1_epi32(w1));
        }
        __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(g->d[i]));
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a0, a1)), sc, acc[t]);
    }
}

/* rows_tile over two consecutive tiles (16 rows): out[16 t + r], rows 8 .. 15 the second
 * tile's. */
TILE rows_tile2(int f, const void *tile, const void *x, size_t xs, long nb, int nt, float *out) {
    const uint8_t *o = tile;
    int bb = block_bytes(f);
    size_t tb = (size_t)HR_QROWS * (size_t)nb * (size_t)bb;
    __m512 acc[4];
    UNROLL
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    long b = 0;
    for (; b + 8 <= nb; b += 8, o += 8 * HR_QROWS * bb) {
        prefetch_ahead(o, 2 * 8 * HR_QROWS * bb, 8 * HR_QROWS * bb);
        prefetch_ahead(o + tb, 2 * 8 * HR_QROWS * bb, 8 * HR_QROWS * bb);
        UNROLL
        for (int i = 0; i < 8; i++)
            rows_block2(f, o + i * HR_QROWS * bb, tb, x, xs, b / 8, i, nt, acc);
    }
    for (; b < nb; b++, o += HR_QROWS * bb)
        rows_block2(f, o, tb, x, xs, b / 8, (int)(b % 8), nt, acc);
    UNROLL
    for (int t = 0; t < nt; t++)
        _mm512_storeu_ps(out + 2 * HR_QROWS * t, acc[t]);
}

static void rows4x2_q4_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile2(Q4_0_F, w, x, xs, nb, 4, out);
}
static void rows4x2_q5_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile2(Q5_0_F, w, x, xs, nb, 4, out);
}
static void rows4x2_q8_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile2(Q8_0_F, w, x, xs, nb, 4, out);
}
#endif

/* Q4_K's 8 rows' 6-bit scales of sub-block j (int32 lanes) from a repacked super-block h. */
static inline __m256i q4_k_rows_sc(const uint8_t *h, int j) {
    __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(h + 32 + 8 * j)));
    return _mm256_and_si256(b, _mm256_set1_epi32(63));
}

/* And their mins, all 64 at once, sub-blocks 2p, 2p + 1 in the int16 halves of each row's lane
 * (mins[p]): the low 2 bits above the scales (bytes 8j + r), the high 4 in nibble r / 4 of
 * byte 4j + r % 4, the two nibbles' dwords interleaved into the scales' order (8j + r), then
 * per pair of sub-blocks one byte shuffle (row r's two bytes side by side) and a widening. */
static inline void q4_k_rows_mins(const uint8_t *h, __m256i *mins) {
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    __m256i hb = load32(h + 96), lo = _mm256_and_si256(hb, m4),
            hi = _mm256_and_si256(_mm256_srli_epi16(hb, 4), m4);
    __m256i a = _mm256_unpacklo_epi32(lo, hi), b = _mm256_unpackhi_epi32(lo, hi); /* j 0 1 | 4 5 */
    __m256i top[2] = {_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31)};
    const __m256i pair = _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15, 0,
                                          8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    UNROLL
    for (int g = 0; g < 2; g++) {
        __m256i low = _mm256_and_si256(_mm256_srli_epi16(load32(h + 32 + 32 * g), 6), m2);
        __m256i m = _mm256_shuffle_epi8(_mm256_or_si256(low, _mm256_slli_epi16(top[g], 2)), pair);
        mins[2 * g] = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(m));
        mins[2 * g + 1] = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(m, 1));
    }
}

/* Q4_K / Q5_K tile: per super-block, sub-block pair q's 8 chunks of nibbles decoded once
 * (low: sub-block 2q, high: 2q + 1; Q5_K's fifth bits from its 8 chunks of qh), each token's
 * code dots (8 rows in 8 lanes) times the sub-blocks' scales (dot_scaled) summed in integers,
 * the mins times x's sums per 32 likewise (two sub-blocks' mins per lane, one madd /
 * vpdpwssd with x's adjacent int16 sums); then the qdot_rows_ref.c float steps. */
TILE rows_qk_tile(int five, const void *tile, const void *x, size_t xs, long nb, int nt,
                  float *out) {
    const uint8_t *o = tile;
    const __m256i m4 = _mm256_set1_epi8(15), b4 = _mm256_set1_epi8(16);
    __m256 acc[4];
    acc_zero(acc, nt);
    const int sbb = HR_QROWS * (five ? 176 : 144);
    for (long sb = 0; sb < nb / 8; sb++, o += sbb) {
        prefetch_ahead(o, 2 * sbb, sbb);
        const uint8_t *nib = o + 128 + (five ? 256 : 0);
        __m256i isum[4];
        UNROLL
        for (int t = 0; t < nt; t++)
            isum[t] = _mm256_setzero_si256();
        for (int q = 0; q < 4; q++) {
            __m256i lo[8], hi[8];
            UNROLL
            for (int c = 0; c < 8; c++) {
                __m256i p = load32(nib + 32 * (8 * q + c));
                lo[c] = _mm256_and_si256(p, m4);
                hi[c] = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
                if (five) {
                    __m256i hb = load32(o + 128 + 32 * c);
                    __m256i hl = q == 2  ? hb
                                 : q < 2 ? _mm256_slli_epi16(hb, 4 - 2 * q)
                                         : _mm256_srli_epi16(hb, 2);
                    __m256i hh =
                        q < 2 ? _mm256_slli_epi16(hb, 3 - 2 * q) : _mm256_srli_epi16(hb, 2 * q - 3);
                    lo[c] = _mm256_or_si256(lo[c], _mm256_and_si256(hl, b4));
                    hi[c] = _mm256_or_si256(hi[c], _mm256_and_si256(hh, b4));
                }
            }
            __m256i sl = q4_k_rows_sc(o, 2 * q), sh = q4_k_rows_sc(o, 2 * q + 1);
            UNROLL
            for (int t = 0; t < nt; t++) {
                const int8_t *xl = ((const hr_q8k *)token(x, xs, t) + sb)->q + 64 * q;
                int n = scaled_group(five ? 31 : 15, 8);
                UNROLL
                for (int c = 0; c < 8; c += n) {
                    isum[t] = dot_scaled(isum[t], lo + c, xl + 4 * c, n, sl);
                    isum[t] = dot_scaled(isum[t], hi + c, xl + 32 + 4 * c, n, sh);
                }
            }
        }
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o));
        __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16)));
        __m256i mins[4];
        q4_k_rows_mins(o, mins);
        UNROLL
        for (int t = 0; t < nt; t++) {
            const hr_q8k *xk = (const hr_q8k *)token(x, xs, t) + sb;
            __m256i msum = _mm256_setzero_si256();
            UNROLL
            for (int p = 0; p < 4; p++)
                msum = dot_ws(msum, mins[p], bcast4((const int8_t *)(xk->s32 + 2 * p)));
            __m256 xd = _mm256_set1_ps(xk->d);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, xd), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dmin, xd), acc[t]);
        }
    }
    acc_store(out, acc, nt);
}

#ifdef __AVX512VNNI__
/* q4_k_rows_sc of tiles A (heads at h) and B (tb bytes on) in 16 int32 lanes. */
static inline __m512i q4_k_rows_sc2(const uint8_t *h, size_t tb, int j) {
    __m128i b = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(h + 32 + 8 * j)),
                                   _mm_loadl_epi64((const __m128i *)(h + tb + 32 + 8 * j)));
    return _mm512_and_si512(_mm512_cvtepu8_epi32(b), _mm512_set1_epi32(63));
}

/* rows_qk_tile over two consecutive tiles (16 rows, A's in lanes 0-7, B's in 8-15): each x
 * word broadcast once for both, one vpdpbusd where the 8-row tile takes two; the same
 * integers and per lane the same float steps, so bit for bit rows_qk_tile of each tile. */
TILE rows_qk_tile2(int five, const void *tile, const void *x, size_t xs, long nb, int nt,
                   float *out) {
    const uint8_t *o = tile;
    const int sbb = HR_QROWS * (five ? 176 : 144);
    const size_t tb = (size_t)(nb / 8) * (size_t)sbb;
    const __m512i m4 = _mm512_set1_epi8(15), b4 = _mm512_set1_epi8(16);
    __m512 acc[4];
    UNROLL
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (long sb = 0; sb < nb / 8; sb++, o += sbb) {
        prefetch_ahead(o, 2 * sbb, sbb);
        prefetch_ahead(o + tb, 2 * sbb, sbb);
        const uint8_t *nib = o + 128 + (five ? 256 : 0);
        __m512i isum[4];
        UNROLL
        for (int t = 0; t < nt; t++)
            isum[t] = _mm512_setzero_si512();
        for (int q = 0; q < 4; q++) {
            __m512i lo[8], hi[8];
            UNROLL
            for (int c = 0; c < 8; c++) {
                __m512i p = load2x32(nib + 32 * (8 * q + c), nib + tb + 32 * (8 * q + c));
                lo[c] = _mm512_and_si512(p, m4);
                hi[c] = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
                if (five) {
                    __m512i hb = load2x32(o + 128 + 32 * c, o + tb + 128 + 32 * c);
                    __m512i hl = q == 2  ? hb
                                 : q < 2 ? _mm512_slli_epi16(hb, 4 - 2 * q)
                                         : _mm512_srli_epi16(hb, 2);
                    __m512i hh =
                        q < 2 ? _mm512_slli_epi16(hb, 3 - 2 * q) : _mm512_srli_epi16(hb, 2 * q - 3);
                    lo[c] = _mm512_or_si512(lo[c], _mm512_and_si512(hl, b4));
                    hi[c] = _mm512_or_si512(hi[c], _mm512_and_si512(hh, b4));
                }
            }
            __m512i sl = q4_k_rows_sc2(o, tb, 2 * q), sh = q4_k_rows_sc2(o, tb, 2 * q + 1);
            UNROLL
            for (int t = 0; t < nt; t++) {
                const int8_t *xl = ((const hr_q8k *)token(x, xs, t) + sb)->q + 64 * q;
                __m512i al = _mm512_setzero_si512(), ah = _mm512_setzero_si512();
                UNROLL
                for (int c = 0; c < 8; c++) {
                    int32_t wl, wh;
                    memcpy(&wl, xl + 4 * c, 4);
                    memcpy(&wh, xl + 32 + 4 * c, 4);
                    al = _mm512_dpbusd_epi32(al, lo[c], _mm512_set1_epi32(wl));
                    ah = _mm512_dpbusd_epi32(ah, hi[c], _mm512_set1_epi32(wh));
                }
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(al, sl));
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(ah, sh));
            }
        }
        __m512 d = heads2(o, tb), dmin = heads2(o + 16, tb);
        __m256i ma[4], mb[4];
        __m512i mins[4];
        q4_k_rows_mins(o, ma);
        q4_k_rows_mins(o + tb, mb);
        UNROLL
        for (int p = 0; p < 4; p++)
            mins[p] = _mm512_inserti64x4(_mm512_castsi256_si512(ma[p]), mb[p], 1);
        UNROLL
        for (int t = 0; t < nt; t++) {
            const hr_q8k *xk = (const hr_q8k *)token(x, xs, t) + sb;
            __m512i msum = _mm512_setzero_si512();
            UNROLL
            for (int p = 0; p < 4; p++) {
                int32_t w;
                memcpy(&w, xk->s32 + 2 * p, 4);
                msum = _mm512_dpwssd_epi32(msum, mins[p], _mm512_set1_epi32(w));
            }
            __m512 xd = _mm512_set1_ps(xk->d);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, xd), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, xd), acc[t]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++)
        _mm512_storeu_ps(out + 2 * HR_QROWS * t, acc[t]);
}

static void rows4x2_q4_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_qk_tile2(0, w, x, xs, nb, 4, out);
}
static void rows4x2_q5_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_qk_tile2(1, w, x, xs, nb, 4, out);
}
#endif

/* Q6_K tile: per super-block, half h and half u of each sub-block, the 4 chunks of ql's low
 * nibbles (sub-blocks 4h, 4h + 1), their high ones (4h + 2, 4h + 3) and qh's 2-bit pairs
 * decoded once into 16 vectors of 6-bit codes; per token and 16-element sub-block k, the
 * code dot with broadcast x words times the 8 rows' int8 scales of k (dot_scaled); the -32
 * offsets once per super-block, the scales of two sub-blocks per lane times x's adjacent sums
 * per 16 (madd / vpdpwssd), times 32; one FMA by d x_d per super-block, as qdot_rows_ref.c. */
TILE rows_q6_k_tile(const void *tile, const void *x, size_t xs, long nb, int nt, float *out) {
    const uint8_t *o = tile;
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    __m256 acc[4];
    acc_zero(acc, nt);
    for (long sb = 0; sb < nb / 8; sb++, o += HR_QROWS * 210) {
        prefetch_ahead(o, 2 * HR_QROWS * 210, HR_QROWS * 210);
        const uint8_t *ch = o + 144; /* the 48 chunks, 12 per quarter hu */
        __m256i isum[4];
        UNROLL
        for (int t = 0; t < nt; t++)
            isum[t] = _mm256_setzero_si256();
        for (int hu = 0; hu < 4; hu++) {
            int h = hu / 2, u = hu % 2;
            __m256i q[4][4], sc[4];
            const uint8_t *g = ch + 384 * hu; /* ql p = 0, p = 1, qh: 4 chunks each */
            UNROLL
            for (int c = 0; c < 4; c++) {
                __m256i l0 = load32(g + 32 * c), l1 = load32(g + 128 + 32 * c),
                        hb = load32(g + 256 + 32 * c);
                q[0][c] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                          _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
                q[1][c] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                          _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
                q[2][c] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                          _mm256_and_si256(hb, m30));
                q[3][c] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                          _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
            }
            UNROLL
            for (int s = 0; s < 4; s++)
                sc[s] = _mm256_cvtepi8_epi32(
                    _mm_loadl_epi64((const __m128i *)(o + 16 + 8 * (2 * (4 * h + s) + u))));
            int n = scaled_group(63, 4);
            UNROLL
            for (int t = 0; t < nt; t++) {
                const hr_q8k *xk = (const hr_q8k *)token(x, xs, t) + sb;
                UNROLL
                for (int s = 0; s < 4; s++) {
                    const int8_t *xq = xk->q + 32 * (4 * h + s) + 16 * u;
                    UNROLL
                    for (int c = 0; c < 4; c += n)
                        isum[t] = dot_scaled(isum[t], q[s] + c, xq + 4 * c, n, sc[s]);
                }
            }
        }
        __m256i scp[8]; /* sub-blocks 2p, 2p + 1's scales in the int16 halves of each row's lane */
        UNROLL
        for (int p = 0; p < 8; p++) {
            __m128i m = _mm_loadu_si128((const __m128i *)(o + 16 + 16 * p));
            scp[p] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(m, _mm_srli_si128(m, 8)));
        }
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o));
        UNROLL
        for (int t = 0; t < nt; t++) {
            const hr_q8k *xk = (const hr_q8k *)token(x, xs, t) + sb;
            __m256i off = _mm256_setzero_si256();
            UNROLL
            for (int p = 0; p < 8; p++)
                off = dot_ws(off, scp[p], bcast4((const int8_t *)(xk->s16 + 2 * p)));
            isum[t] = _mm256_sub_epi32(isum[t], _mm256_slli_epi32(off, 5));
            __m256 xd = _mm256_set1_ps(xk->d);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, xd), acc[t]);
        }
    }
    acc_store(out, acc, nt);
}

static void rows1_q4_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_qk_tile(0, w, x, 0, nb, 1, out);
}
static void rows4_q4_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_qk_tile(0, w, x, xs, nb, 4, out);
}
static void rows1_q5_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_qk_tile(1, w, x, 0, nb, 1, out);
}
static void rows4_q5_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_qk_tile(1, w, x, xs, nb, 4, out);
}
static void rows1_q6_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_q6_k_tile(w, x, 0, nb, 1, out);
}
static void rows4_q6_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_q6_k_tile(w, x, xs, nb, 4, out);
}

#ifdef __AVX512VNNI__
#define QDOT_ROWS4X2                                                                               \
    {                                                                                              \
        [HR_Q8_0] = rows4x2_q8_0, [HR_Q4_0] = rows4x2_q4_0, [HR_Q5_0] = rows4x2_q5_0,              \
        [HR_Q4_K] = rows4x2_q4_k, [HR_Q5_K] = rows4x2_q5_k                                         \
    }
#else
#define QDOT_ROWS4X2                                                                               \
    { 0 }
#endif
