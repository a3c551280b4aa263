/* AVX-512 kernels (compiled with -mavx512*; called only when cpuid says so). The matmul
 * microkernel computes a tile of 4 weight rows x 4 tokens with 16 accumulators (8 rows x
 * 1 token for decode), walking 16-row blocks of w so a block stays in cache while every
 * token tile passes over it. The decode tile prefetches each row 256 elements ahead: its
 * eight 2 KiB-row streams are too short for the hardware prefetcher alone (+16% GB/s).
 * Weights are widened to f32 (bf16: shift; f16: vcvtph2ps) and accumulated in f32, which
 * is exact with respect to the reference's products. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/exp_poly.h"
#include "backend/cpu/kernels.h"

static inline __m512 ld_f32(const void *p, long i) { return _mm512_loadu_ps((const float *)p + i); }
static inline __m512 ldm_f32(const void *p, long i, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, (const float *)p + i);
}
static inline __m512 ld_bf16(const void *p, long i) {
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 ldm_bf16(const void *p, long i, __mmask16 m) {
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 ld_f16(const void *p, long i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
}
static inline __m512 ldm_f16(const void *p, long i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i));
}

/* One tile: NR rows of w starting at wp (element stride K, element size ESZ) times NT
 * tokens of x, accumulated in NR*NT registers. Rows beyond nr alias the first row and are
 * not stored. Loops are fully unrolled so the accumulators stay in registers. */
#define UNROLL _Pragma("GCC unroll 8")
enum { PF_AHEAD = 256 }; /* elements ahead that the decode tile prefetches */
#define DEFINE_TILE(NAME, NR, NT, ESZ, LD, LDM)                                                    \
    static void NAME(float *y, long ldy, const float *x, long ldx, const char *wp, int K,          \
                     int nr) {                                                                     \
        const char *w[NR];                                                                         \
        UNROLL for (int r = 0; r < NR; r++) w[r] = wp + (r < nr ? r : 0) * (long)K * ESZ;          \
        __m512 acc[NT][NR];                                                                        \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < NR; r++) acc[t][r] =        \
            _mm512_setzero_ps();                                                                   \
        int k = 0;                                                                                 \
        for (; k + 16 <= K; k += 16) {                                                             \
            __m512 wv[NR];                                                                         \
            if (NT == 1 && (k & 31) == 0)                                                          \
                UNROLL for (int r = 0; r < NR; r++)                                                \
                    _mm_prefetch(w[r] + (long)(k + PF_AHEAD) * ESZ, _MM_HINT_T0);                  \
            UNROLL for (int r = 0; r < NR; r++) wv[r] = LD(w[r], k);                               \
            UNROLL for (int t = 0; t < NT; t++) {                                                  \
                __m512 xv = _mm512_loadu_ps(x + t * ldx + k);                                      \
                UNROLL for (int r = 0; r < NR; r++) acc[t][r] =                                    \
                    _mm512_fmadd_ps(wv[r], xv, acc[t][r]);                                         \
            }                                                                                      \
        }                                                                                          \
        if (k < K) {                                                                               \
            __mmask16 m = (__mmask16)((1u << (K - k)) - 1);                                        \
            __m512 wv[NR];                                                                         \
            UNROLL for (int r = 0; r < NR; r++) wv[r] = LDM(w[r], k, m);                           \
            UNROLL for (int t = 0; t < NT; t++) {                                                  \
                __m512 xv = _mm512_maskz_loadu_ps(m, x + t * ldx + k);                             \
                UNROLL for (int r = 0; r < NR; r++) acc[t][r] =                                    \
                    _mm512_fmadd_ps(wv[r], xv, acc[t][r]);                                         \
            }                                                                                      \
        }                                                                                          \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < NR; r++) if (r < nr)        \
            y[t * ldy + r] = _mm512_reduce_add_ps(acc[t][r]);                                      \
    }

/* The --compute bf16 tile: x is bf16 too and VDPBF16PS multiplies 32 pairs per
 * instruction, accumulating in f32 (2x the f32 FMA's products, no widening of w). */
#define BX_FMA(NR, NT, XLOAD)                                                                      \
    UNROLL for (int t = 0; t < NT; t++) {                                                          \
        __m512bh xv = (__m512bh)(XLOAD);                                                           \
        UNROLL for (int r = 0; r < NR; r++) acc[t][r] =                                            \
            _mm512_dpbf16_ps(acc[t][r], (__m512bh)wv[r], xv);                                      \
    }
#define DEFINE_TILE_BX(NAME, NR, NT)                                                               \
    static void NAME(float *y, long ldy, const uint16_t *x, long ldx, const char *wp, int K,       \
                     int nr) {                                                                     \
        const uint16_t *w[NR];                                                                     \
        UNROLL for (int r = 0; r < NR; r++) w[r] =                                                 \
            (const uint16_t *)wp + (r < nr ? r : 0) * (long)K;                                     \
        __m512 acc[NT][NR];                                                                        \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < NR; r++) acc[t][r] =        \
            _mm512_setzero_ps();                                                                   \
        int k = 0;                                                                                 \
        for (; k + 32 <= K; k += 32) {                                                             \
            __m512i wv[NR];                                                                        \
            if (NT == 1)                                                                           \
                UNROLL for (int r = 0; r < NR; r++)                                                \
                    _mm_prefetch((const char *)(w[r] + k + PF_AHEAD), _MM_HINT_T0);                \
            UNROLL for (int r = 0; r < NR; r++) wv[r] = _mm512_loadu_si512(w[r] + k);              \
            BX_FMA(NR, NT, _mm512_loadu_si512(x + t * ldx + k))                                    \
        }                                                                                          \
        if (k < K) {                                                                               \
            __mmask32 m = (__mmask32)((1u << (K - k)) - 1);                                        \
            __m512i wv[NR];                                                                        \
            UNROLL for (int r = 0; r < NR; r++) wv[r] = _mm512_maskz_loadu_epi16(m, w[r] + k);     \
            BX_FMA(NR, NT, _mm512_maskz_loadu_epi16(m, x + t * ldx + k))                           \
        }                                                                                          \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < NR; r++) if (r < nr)        \
            y[t * ldy + r] = _mm512_reduce_add_ps(acc[t][r]);                                      \
    }

/* Columns [n0, n1) in 16-row blocks; tokens in tiles of 4 (4 rows x 4 tokens), leftover
 * tokens one at a time (8 rows x 1 token, the decode shape). XT is x's element type. */
#define DEFINE_MM(NAME, TILE4, TILE1, ESZ, XT)                                                     \
    static void NAME(float *y, long ldy, const XT *x, long ldx, const void *w, int K, int T,       \
                     long n0, long n1) {                                                           \
        const char *wb = w;                                                                        \
        for (long nb = n0; nb < n1; nb += 16) {                                                    \
            long ne = nb + 16 < n1 ? nb + 16 : n1;                                                 \
            int t = 0;                                                                             \
            for (; t + 4 <= T; t += 4)                                                             \
                for (long n = nb; n < ne; n += 4)                                                  \
                    TILE4(y + t * ldy + n, ldy, x + t * ldx, ldx, wb + n * (long)K * ESZ, K,       \
                          ne - n < 4 ? (int)(ne - n) : 4);                                         \
            for (; t < T; t++)                                                                     \
                for (long n = nb; n < ne; n += 8)                                                  \
                    TILE1(y + t * ldy + n, ldy, x + t * ldx, ldx, wb + n * (long)K * ESZ, K,       \
                          ne - n < 8 ? (int)(ne - n) : 8);                                         \
        }                                                                                          \
    }

DEFINE_TILE(tile4_f32, 4, 4, 4, ld_f32, ldm_f32)
DEFINE_TILE(tile4_bf16, 4, 4, 2, ld_bf16, ldm_bf16)
DEFINE_TILE(tile4_f16, 4, 4, 2, ld_f16, ldm_f16)
DEFINE_TILE(tile1_f32, 8, 1, 4, ld_f32, ldm_f32)
DEFINE_TILE(tile1_bf16, 8, 1, 2, ld_bf16, ldm_bf16)
DEFINE_TILE(tile1_f16, 8, 1, 2, ld_f16, ldm_f16)
DEFINE_TILE_BX(tile4_bx, 4, 4)
DEFINE_TILE_BX(tile1_bx, 8, 1)
DEFINE_MM(mm_f32, tile4_f32, tile1_f32, 4, float)
DEFINE_MM(mm_bf16, tile4_bf16, tile1_bf16, 2, float)
DEFINE_MM(mm_f16, tile4_f16, tile1_f16, 2, float)
DEFINE_MM(mm_bx, tile4_bx, tile1_bx, 2, uint16_t)

/* Sums exactly as a matmul tile sums one output (attention relies on it). */
static float dot(const float *a, const float *b, int n) {
    __m512 s = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16)
        s = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s);
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s);
    }
    return _mm512_reduce_add_ps(s);
}

static void axpy(float *y, float a, const float *x, int n) {
    __m512 av = _mm512_set1_ps(a);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 yv = _mm512_maskz_loadu_ps(m, y + i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i), yv));
    }
}

static void scale(float *y, float a, int n) {
    __m512 av = _mm512_set1_ps(a);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(av, _mm512_maskz_loadu_ps(m, y + i)));
    }
}

/* P V keeps a tile of PV_NR queries x PV_NV vectors of o in registers across the tile's
 * positions and reuses each V load for all its queries; one axpy per (query, position)
 * instead loads and stores o around every FMA and is bound by those. */
enum { PV_NR = 4, PV_NV = 4 };
#define INLINE static inline __attribute__((always_inline))

/* Whether queries [0, nr) all weigh every position of the tile, so nothing is skipped. */
static int pv_dense(const float *s, long s_ld, int nr, int nj) {
    for (int r = 0; r < nr; r++)
        for (int jj = 0; jj < nj; jj += 16) {
            __mmask16 m = nj - jj >= 16 ? 0xffff : (__mmask16)((1u << (nj - jj)) - 1);
            __m512 w = _mm512_maskz_loadu_ps(m, s + r * s_ld + jj);
            if (_mm512_mask_cmpneq_ps_mask(m, w, _mm512_setzero_ps()) != m) return 0;
        }
    return 1;
}

/* o[r][d0, d0 + 16 NV) for NR queries, the last vector's lanes masked by dm. Not dense: a
 * weight of 0 leaves o untouched (an FMA by 0 could turn -0 into +0) and NULL rows are
 * not read. Per lane the same fmadd(w, v, o) as axpy, in the same order. */
INLINE void pv_chunk(float *const *o, const float *s, long s_ld, const float *const *v, int nj,
                     int d0, __mmask16 dm, const int dense, const int NR, const int NV) {
    __m512 acc[PV_NR][PV_NV];
    UNROLL for (int r = 0; r < NR; r++) UNROLL for (int c = 0; c < NV; c++) acc[r][c] =
        _mm512_maskz_loadu_ps(c == NV - 1 ? dm : 0xffff, o[r] + d0 + 16 * c);
    for (int jj = 0; jj < nj; jj++) {
        if (!dense && !v[jj]) continue;
        __m512 x[PV_NV];
        UNROLL for (int c = 0; c < NV; c++) x[c] =
            _mm512_maskz_loadu_ps(c == NV - 1 ? dm : 0xffff, v[jj] + d0 + 16 * c);
        UNROLL for (int r = 0; r < NR; r++) {
            __m512 w = _mm512_set1_ps(s[r * s_ld + jj]);
            __mmask16 k = dense ? 0xffff : _mm512_cmpneq_ps_mask(w, _mm512_setzero_ps());
            UNROLL for (int c = 0; c < NV; c++) acc[r][c] =
                dense ? _mm512_fmadd_ps(w, x[c], acc[r][c])
                      : _mm512_mask3_fmadd_ps(w, x[c], acc[r][c], k);
        }
    }
    UNROLL for (int r = 0; r < NR; r++) UNROLL for (int c = 0; c < NV; c++)
        _mm512_mask_storeu_ps(o[r] + d0 + 16 * c, c == NV - 1 ? dm : 0xffff, acc[r][c]);
}

/* NR queries over all of hd: chunks of PV_NV vectors, then single (last: partial) vectors. */
INLINE void pv_rows(float *const *o, const float *s, long s_ld, const float *const *v, int nj,
                    int hd, const int NR) {
    int dense = pv_dense(s, s_ld, NR, nj), d0 = 0;
    for (; d0 + 16 * PV_NV <= hd; d0 += 16 * PV_NV) {
        if (dense)
            pv_chunk(o, s, s_ld, v, nj, d0, 0xffff, 1, NR, PV_NV);
        else
            pv_chunk(o, s, s_ld, v, nj, d0, 0xffff, 0, NR, PV_NV);
    }
    for (; d0 < hd; d0 += 16) {
        __mmask16 dm = hd - d0 >= 16 ? 0xffff : (__mmask16)((1u << (hd - d0)) - 1);
        if (dense)
            pv_chunk(o, s, s_ld, v, nj, d0, dm, 1, NR, 1);
        else
            pv_chunk(o, s, s_ld, v, nj, d0, dm, 0, NR, 1);
    }
}

static void pv(float *const *o, const float *s, long s_ld, int n, const float *const *v, int nj,
               int hd) {
    int i = 0;
    for (; i + PV_NR <= n; i += PV_NR)
        pv_rows(o + i, s + i * s_ld, s_ld, v, nj, hd, PV_NR);
    switch (n - i) {
    case 3: pv_rows(o + i, s + i * s_ld, s_ld, v, nj, hd, 3); break;
    case 2: pv_rows(o + i, s + i * s_ld, s_ld, v, nj, hd, 2); break;
    case 1: pv_rows(o + i, s + i * s_ld, s_ld, v, nj, hd, 1); break;
    }
}

/* One KV head vector to f32: 16 lanes at a time (masked tail), Q8_0 a block (2 x 16 int8)
 * per scale, Q4_0 its low then its high nibbles. */
static void kv_load(float *y, const void *row, hr_dtype dtype, int n) {
    int i = 0;
    __mmask16 tail = (__mmask16)((1u << (n & 15)) - 1);
    switch (dtype) {
    case HR_BF16:
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(y + i, ld_bf16(row, i));
        if (tail) _mm512_mask_storeu_ps(y + i, tail, ldm_bf16(row, i, tail));
        break;
    case HR_F16:
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(y + i, ld_f16(row, i));
        if (tail) _mm512_mask_storeu_ps(y + i, tail, ldm_f16(row, i, tail));
        break;
    case HR_Q8_0:
        for (int b = 0; b < n / HR_Q8_BLOCK; b++) {
            const uint8_t *blk = (const uint8_t *)row + (long)b * HR_Q8_BYTES;
            uint16_t dh;
            memcpy(&dh, blk, 2);
            __m512 d = _mm512_set1_ps(_cvtsh_ss(dh));
            for (int k = 0; k < HR_Q8_BLOCK; k += 16) {
                __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2 + k));
                __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
                _mm512_storeu_ps(y + b * HR_Q8_BLOCK + k, _mm512_mul_ps(d, f));
            }
        }
        break;
    case HR_Q4_0:
        for (int b = 0; b < n / HR_Q8_BLOCK; b++) {
            const uint8_t *blk = (const uint8_t *)row + (long)b * HR_Q4_BYTES;
            uint16_t dh;
            memcpy(&dh, blk, 2);
            __m512 d = _mm512_set1_ps(_cvtsh_ss(dh));
            __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2)), m15 = _mm_set1_epi8(15),
                    eight = _mm_set1_epi8(8);
            __m128i lo = _mm_sub_epi8(_mm_and_si128(q, m15), eight),
                    hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m15), eight);
            _mm512_storeu_ps(y + b * HR_Q8_BLOCK,
                             _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo))));
            _mm512_storeu_ps(y + b * HR_Q8_BLOCK + 16,
                             _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi))));
        }
        break;
    default:
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(y + i, ld_f32(row, i));
        if (tail) _mm512_mask_storeu_ps(y + i, tail, ldm_f32(row, i, tail));
        break;
    }
}

static float max(const float *s, int n) {
    __m512 m = _mm512_set1_ps(-INFINITY);
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        m = _mm512_mask_max_ps(m, k, m, _mm512_maskz_loadu_ps(k, s + i));
    }
    return _mm512_reduce_max_ps(m);
}

/* exp(x) for x <= 0: x = n ln2 + r (ln2 in two parts), e^r by Cephes' degree-6 polynomial,
 * times 2^n by scalef (which underflows to 0 far below -87). */
static inline __m512 exp_le0(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-110.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(HR_EXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = HR_EXP_REDUCE(n, x, _mm512_fnmadd_ps, _mm512_set1_ps);
    __m512 p = HR_EXP_POLY(r, _mm512_fmadd_ps, _mm512_mul_ps, _mm512_add_ps, _mm512_set1_ps);
    return _mm512_scalef_ps(p, n);
}

static float exp_sum(float *s, int n, float m) {
    __m512 mv = _mm512_set1_ps(m), sum = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 e = exp_le0(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + i), mv));
        _mm512_mask_storeu_ps(s + i, k, e);
        sum = _mm512_mask_add_ps(sum, k, sum, e);
    }
    return _mm512_reduce_add_ps(sum);
}

/* hr_f32_to_bf16 on 16 lanes: round to nearest even by the carry trick, a NaN quieted. */
static void round_bf16(uint16_t *y, const float *x, long n) {
    const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000),
                  half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1),
                  quiet = _mm512_set1_epi32(0x40);
    for (long i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512i u = _mm512_maskz_loadu_epi32(m, x + i);
        __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
        __m512i r = _mm512_add_epi32(
            u, _mm512_add_epi32(half, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
        r = _mm512_mask_or_epi32(_mm512_srli_epi32(r, 16), nan, _mm512_srli_epi32(u, 16), quiet);
        _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(r));
    }
}

const hr_cpu_kernels hr_cpu_kernels_avx512 = {
    .name = "avx512",
    .mm_f32 = mm_f32,
    .mm_bf16 = mm_bf16,
    .mm_f16 = mm_f16,
    .mm_bx = mm_bx,
    .mm_bf16_t4 = hr_avx2_mm_bf16_t4,
    .mm_f16_t4 = hr_avx2_mm_f16_t4,
    .dot = dot,
    .axpy = axpy,
    .scale = scale,
    .pv = pv,
    .kv_load = kv_load,
    .max = max,
    .exp_sum = exp_sum,
    .round_bf16 = round_bf16,
};
