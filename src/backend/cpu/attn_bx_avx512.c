/* The bf16-product attention kernels (AVX-512 BF16, --compute bf16 over a bf16 KV store):
 * Q K^T and P V multiply bf16 pairs on VDPBF16PS and accumulate in f32, as the bf16
 * matmul does, both on one kernel (pv) whose accumulators hold 16 outputs in lanes, so no
 * horizontal sums: P V over the tile's V rows interleaved by pairs of positions (pairs),
 * Q K^T over the tile's K rows transposed by pairs of elements (kt), each output one
 * chain of VDPBF16PS in pair order whichever path or batch calls it. */
#include <immintrin.h>
#include <stdint.h>

#include "backend/cpu/attn_bx.h"

#define UNROLL _Pragma("GCC unroll 8")
#define INLINE static inline __attribute__((always_inline))

/* Tile rows of pointers rows[0..n) (NULL, or j >= n: zeros), 32 bf16 = 16 pairs from
 * element e, as 16 x 16 pairs. */
static inline void load16(__m512i r[16], const uint16_t *const *rows, int j0, int n, int e) {
    for (int i = 0; i < 16; i++)
        r[i] = j0 + i < n && rows[j0 + i] ? _mm512_loadu_si512(rows[j0 + i] + e)
                                          : _mm512_setzero_si512();
}

/* r[c] = column c of the 16 x 16 matrix of 32-bit elements in r (rows in, columns out):
 * pairs within 128-bit lanes, then the 4 x 4 matrix of lanes. */
static inline void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int k = 0; k < 4; k++) { /* r[4 m + k] lane l: column 4 l + k of rows 4 m .. 4 m + 3 */
        __m512i a = _mm512_shuffle_i32x4(r[k], r[4 + k], 0x44),
                b = _mm512_shuffle_i32x4(r[k], r[4 + k], 0xee),
                c = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0x44),
                d = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0xee);
        t[k] = _mm512_shuffle_i32x4(a, c, 0x88);
        t[4 + k] = _mm512_shuffle_i32x4(a, c, 0xdd);
        t[8 + k] = _mm512_shuffle_i32x4(b, d, 0x88);
        t[12 + k] = _mm512_shuffle_i32x4(b, d, 0xdd);
    }
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

static void kt(uint16_t *dst, const uint16_t *const *rows, int n, int hd) {
    int w = (n + 15) / 16 * 16;
    uint32_t *d = (uint32_t *)dst;
    for (int j0 = 0; j0 < w; j0 += 16)
        for (int e = 0; e < hd; e += 32) {
            __m512i r[16];
            load16(r, rows, j0, n, e);
            transpose16(r);
            for (int c = 0; c < 16; c++)
                _mm512_storeu_si512(d + (long)(e / 2 + c) * w + j0, r[c]);
        }
}

static void pairs(uint16_t *dst, const uint16_t *const *rows, int n, int hd) {
    const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40,
                                        8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0),
                  hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16)), z = _mm512_setzero_si512();
    for (int p = 0; p < (n + 1) / 2; p++) {
        const uint16_t *a = rows[2 * p], *b = 2 * p + 1 < n ? rows[2 * p + 1] : NULL;
        uint16_t *d = dst + (long)2 * p * hd;
        for (int i = 0; i < hd; i += 32) {
            __m512i x = a ? _mm512_loadu_si512(a + i) : z, y = b ? _mm512_loadu_si512(b + i) : z;
            _mm512_storeu_si512(d + 2 * i, _mm512_permutex2var_epi16(x, lo, y));
            _mm512_storeu_si512(d + 2 * i + 32, _mm512_permutex2var_epi16(x, hi, y));
        }
    }
}

/* y[0..n) = x rounded to bf16 (nearest even); n a multiple of 16. */
static void round_bf16(uint16_t *y, const float *x, int n) {
    for (int i = 0; i < n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i),
                            (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
}

/* o[r][d0, d0 + 16 NV) += p[r] V for NR queries over np pairs of positions. */
INLINE void pv_chunk(float *const *o, const uint16_t *p, long p_ld, const uint16_t *vp, int np,
                     int hd, int d0, const int NR, const int NV) {
    __m512 acc[4][4];
    UNROLL for (int r = 0; r < NR; r++) UNROLL for (int c = 0; c < NV; c++) acc[r][c] =
        _mm512_loadu_ps(o[r] + d0 + 16 * c);
    for (int j = 0; j < np; j++) {
        __m512i x[4];
        const uint16_t *row = vp + (long)2 * j * hd + 2 * d0;
        UNROLL for (int c = 0; c < NV; c++) x[c] = _mm512_loadu_si512(row + 32 * c);
        UNROLL for (int r = 0; r < NR; r++) {
            int w2;
            __builtin_memcpy(&w2, p + r * p_ld + 2 * j, 4);
            __m512bh w = (__m512bh)_mm512_set1_epi32(w2);
            UNROLL for (int c = 0; c < NV; c++) acc[r][c] =
                _mm512_dpbf16_ps(acc[r][c], w, (__m512bh)x[c]);
        }
    }
    UNROLL for (int r = 0; r < NR; r++) UNROLL for (int c = 0; c < NV; c++)
        _mm512_storeu_ps(o[r] + d0 + 16 * c, acc[r][c]);
}

INLINE void pv_rows(float *const *o, const uint16_t *p, long p_ld, const uint16_t *vp, int np,
                    int hd, const int NR) {
    int d0 = 0;
    for (; d0 + 64 <= hd; d0 += 64)
        pv_chunk(o, p, p_ld, vp, np, hd, d0, NR, 4);
    for (; d0 < hd; d0 += 16)
        pv_chunk(o, p, p_ld, vp, np, hd, d0, NR, 1);
}

static void pv(float *const *o, const uint16_t *p, long p_ld, int n, const uint16_t *vp, int np,
               int hd) {
    int i = 0;
    for (; i + 4 <= n; i += 4)
        pv_rows(o + i, p + i * p_ld, p_ld, vp, np, hd, 4);
    switch (n - i) {
    case 3: pv_rows(o + i, p + i * p_ld, p_ld, vp, np, hd, 3); break;
    case 2: pv_rows(o + i, p + i * p_ld, p_ld, vp, np, hd, 2); break;
    case 1: pv_rows(o + i, p + i * p_ld, p_ld, vp, np, hd, 1); break;
    }
}

const hr_attn_bx hr_attn_bx_avx512 = {kt, pairs, round_bf16, pv};
