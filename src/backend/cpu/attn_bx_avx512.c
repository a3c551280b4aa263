/* The bf16-product attention kernels (AVX-512 BF16, --compute bf16 over a bf16 KV store):
 * Q K^T and P V multiply bf16 pairs on VDPBF16PS and accumulate in f32, as the bf16
 * matmul does. dot sums exactly as mm_bx's tiles sum one output, so the per-token path
 * and the blocked prefill path (mm_bx) give a score the same bits; pv takes the tile's V
 * rows interleaved by pairs of positions (pairs) so one VDPBF16PS adds two positions of 16
 * output lanes, and the weights rounded to bf16 (round). */
#include <immintrin.h>
#include <stdint.h>

#include "backend/cpu/attn_bx.h"

#define UNROLL _Pragma("GCC unroll 8")
#define INLINE static inline __attribute__((always_inline))

/* One accumulator over 32-element steps then a masked tail, as tile4_bx / tile1_bx. */
static float dot(const uint16_t *q, const uint16_t *k, int n) {
    __m512 acc = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32)
        acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512(k + i),
                               (__m512bh)_mm512_loadu_si512(q + i));
    if (i < n) {
        __mmask32 m = (__mmask32)((1u << (n - i)) - 1);
        acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_maskz_loadu_epi16(m, k + i),
                               (__m512bh)_mm512_maskz_loadu_epi16(m, q + i));
    }
    return _mm512_reduce_add_ps(acc);
}

/* Rows 2i and 2i + 1 of v [2 np][hd] into dst [np][hd][2]. */
static void pairs(uint16_t *dst, const uint16_t *v, int np, int hd) {
    const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40,
                                        8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0),
                  hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    for (int p = 0; p < np; p++) {
        const uint16_t *a = v + (long)2 * p * hd, *b = a + hd;
        uint16_t *d = dst + (long)2 * p * hd;
        for (int i = 0; i < hd; i += 32) {
            __m512i x = _mm512_loadu_si512(a + i), y = _mm512_loadu_si512(b + i);
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

const hr_attn_bx hr_attn_bx_avx512 = {dot, pairs, round_bf16, pv};
