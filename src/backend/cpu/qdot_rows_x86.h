/* The x86 repacked tiles (qrepack.h), part of qdot_x86.h (its primitives; built for AVX2
 * and AVX-512 VNNI): 8 rows' block b in one stream, each token's x word broadcast to the 8 rows'
 * lanes, so lane r of the integer sums is row r's dot and one convert and one FMA per block
 * scale all 8 rows. Q4_0: unsigned nibbles times x (vpdpbusd, or maddubs + madd), the -8
 * offsets as -8 sum(x) the sum's start. Q8_0 (codes kept XOR 0x80): with VNNI the unsigned
 * codes times x less 128 sum(x); on AVX2, whose maddubs would saturate on unsigned bytes up
 * to 255, the signed codes back and the sign trick. Q4_K: see its tile. Either way the same
 * integers as qdot_rows_ref.c, then the same float operations in the same order: bit for bit the C
 * tile, and a token's lanes the same whatever the other tokens of rows4 are. */
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

/* Block b of a tile (o: its bytes) times the nt tokens into acc[t]. */
static inline __attribute__((always_inline)) void
rows_block(int q8, const uint8_t *o, const void *x, size_t xs, long b, int nt, __m256 *acc) {
    __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o));
    const uint8_t *codes = o + 2 * HR_QROWS;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i v[8];
    int i = (int)(b % 8);
    if (q8) {
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
    }
    UNROLL
    for (int t = 0; t < nt; t++) {
        const hr_q8x *g = (const hr_q8x *)token(x, xs, t) + b / 8;
        const int8_t *xq = g->q + hr_q8x_pos(!q8, i, 0);
        __m256i a0, a1 = _mm256_setzero_si256();
        if (q8) {
            a0 = _mm256_set1_epi32(-Q8U_OFFSET * g->sum[i]);
            UNROLL
            for (int c = 0; c < 8; c += 2) {
                a0 = dot_q8u(a0, v[c], bcast4(xq + 4 * c));
                a1 = dot_q8u(a1, v[c + 1], bcast4(xq + 4 * c + 4));
            }
        } else {
            a0 = _mm256_set1_epi32(-8 * g->sum[i]);
            UNROLL
            for (int c = 0; c < 4; c++) {
                a0 = dot_usa(a0, v[c], bcast4(xq + 4 * c));
                a1 = dot_usa(a1, v[c + 4], bcast4(xq + 32 + 4 * c));
            }
        }
        __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(g->d[i]));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a0, a1)), s, acc[t]);
    }
}

TILE rows_tile(int q8, const void *tile, const void *x, size_t xs, long nb, int nt, float *out) {
    const uint8_t *o = tile;
    int bb = q8 ? 34 : 18;
    __m256 acc[4];
    UNROLL
    for (int t = 0; t < nt; t++)
        acc[t] = _mm256_setzero_ps();
    for (long b = 0; b < nb; b++, o += HR_QROWS * bb)
        rows_block(q8, o, x, xs, b, nt, acc);
    UNROLL
    for (int t = 0; t < nt; t++)
        _mm256_storeu_ps(out + HR_QROWS * t, acc[t]);
}

static void rows1_q4_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(0, w, x, 0, nb, 1, out);
}
static void rows4_q4_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(0, w, x, xs, nb, 4, out);
}
static void rows1_q8_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(1, w, x, 0, nb, 1, out);
}
static void rows4_q8_0(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_tile(1, w, x, xs, nb, 4, out);
}

/* Q4_K's 8 rows' 6-bit scales of sub-block j (int32 lanes) from a repacked super-block h. */
static inline __m256i q4_k_rows_sc(const uint8_t *h, int j) {
    __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(h + 32 + 8 * j)));
    return _mm256_and_si256(b, _mm256_set1_epi32(63));
}

/* And their mins: low 2 bits above the scales, high 4 in nibble r / 4 of byte r % 4. */
static inline __m256i q4_k_rows_min(const uint8_t *h, int j) {
    __m256i lo = _mm256_srli_epi32(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(h + 32 + 8 * j))), 6);
    int32_t w;
    memcpy(&w, h + 96 + 4 * j, 4);
    __m256i hi = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(_mm_set1_epi32(w)),
                                   _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_or_si256(lo, _mm256_slli_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(15)), 2));
}

/* Q4_K tile: per super-block, sub-block pair q's 8 chunks of nibbles decoded once (low:
 * sub-block 2q, high: 2q + 1), each token's code dots (8 rows in 8 lanes) times the
 * sub-blocks' scales (vpmulld) summed in integers, the mins times x's sums per 32 likewise;
 * then the qdot_rows_ref.c float steps. */
TILE rows_q4_k_tile(const void *tile, const void *x, size_t xs, long nb, int nt, float *out) {
    const uint8_t *o = tile;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc[4];
    UNROLL
    for (int t = 0; t < nt; t++)
        acc[t] = _mm256_setzero_ps();
    for (long sb = 0; sb < nb / 8; sb++, o += HR_QROWS * 144) {
        __m256i isum[4];
        UNROLL
        for (int t = 0; t < nt; t++)
            isum[t] = _mm256_setzero_si256();
        for (int q = 0; q < 4; q++) {
            __m256i lo[8], hi[8];
            UNROLL
            for (int c = 0; c < 8; c++) {
                __m256i p = load32(o + 128 + 32 * (8 * q + c));
                lo[c] = _mm256_and_si256(p, m4);
                hi[c] = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
            }
            __m256i sl = q4_k_rows_sc(o, 2 * q), sh = q4_k_rows_sc(o, 2 * q + 1);
            UNROLL
            for (int t = 0; t < nt; t++) {
                const int8_t *xl = ((const hr_q8k *)token(x, xs, t) + sb)->q + 64 * q;
                __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
                UNROLL
                for (int c = 0; c < 8; c++) {
                    a0 = dot_usa(a0, lo[c], bcast4(xl + 4 * c));
                    a1 = dot_usa(a1, hi[c], bcast4(xl + 32 + 4 * c));
                }
                isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_mullo_epi32(a0, sl),
                                                                     _mm256_mullo_epi32(a1, sh)));
            }
        }
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o));
        __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16)));
        __m256i mins[8];
        UNROLL
        for (int j = 0; j < 8; j++)
            mins[j] = q4_k_rows_min(o, j);
        UNROLL
        for (int t = 0; t < nt; t++) {
            const hr_q8k *xk = (const hr_q8k *)token(x, xs, t) + sb;
            __m256i msum = _mm256_setzero_si256();
            UNROLL
            for (int j = 0; j < 8; j++)
                msum = _mm256_add_epi32(msum,
                                        _mm256_mullo_epi32(mins[j], _mm256_set1_epi32(xk->s32[j])));
            __m256 xd = _mm256_set1_ps(xk->d);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, xd), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dmin, xd), acc[t]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++)
        _mm256_storeu_ps(out + HR_QROWS * t, acc[t]);
}

static void rows1_q4_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_q4_k_tile(w, x, 0, nb, 1, out);
}
static void rows4_q4_k(const void *w, const void *x, size_t xs, long nb, float *out) {
    rows_q4_k_tile(w, x, xs, nb, 4, out);
}
