/* AVX2 + FMA kernels (compiled with -mavx2 -mfma -mf16c; used when cpuid has AVX2 but not
 * AVX-512). Same blocking as the AVX-512 file with a 4 rows x 2 tokens tile (16 ymm
 * registers) and a scalar tail for K not a multiple of 8. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend/cpu/exp_poly.h"
#include "backend/cpu/kernels.h"
#include "tensor/dtype.h"

static inline __m256 ld_f32(const void *p, long i) { return _mm256_loadu_ps((const float *)p + i); }
static inline __m256 ld_bf16(const void *p, long i) {
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline __m256 ld_f16(const void *p, long i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
}
static inline float sc_f32(const void *p, long i) { return ((const float *)p)[i]; }
static inline float sc_bf16(const void *p, long i) {
    return hr_bf16_to_f32(((const uint16_t *)p)[i]);
}
static inline float sc_f16(const void *p, long i) {
    return hr_f16_to_f32(((const uint16_t *)p)[i]);
}

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define UNROLL _Pragma("GCC unroll 8")
enum { PF_AHEAD = 256 }; /* elements ahead that the decode tile prefetches */
/* NR rows x NT tokens; rows beyond nr alias the first row and are not stored. */
#define DEFINE_TILE(NAME, NR, NT, ESZ, LD, SC)                                                     \
    static void NAME(float *y, long ldy, const float *x, long ldx, const char *wp, int K,          \
                     int nr) {                                                                     \
        const char *w[NR];                                                                         \
        UNROLL for (int r = 0; r < NR; r++) w[r] = wp + (r < nr ? r : 0) * (long)K * ESZ;          \
        __m256 acc[NT][NR];                                                                        \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < NR; r++) acc[t][r] =        \
            _mm256_setzero_ps();                                                                   \
        int k = 0;                                                                                 \
        for (; k + 8 <= K; k += 8) {                                                               \
            __m256 wv[NR];                                                                         \
            if (NT == 1 && (k & 31) == 0)                                                          \
                UNROLL for (int r = 0; r < NR; r++)                                                \
                    _mm_prefetch(w[r] + (long)(k + PF_AHEAD) * ESZ, _MM_HINT_T0);                  \
            UNROLL for (int r = 0; r < NR; r++) wv[r] = LD(w[r], k);                               \
            UNROLL for (int t = 0; t < NT; t++) {                                                  \
                __m256 xv = _mm256_loadu_ps(x + t * ldx + k);                                      \
                UNROLL for (int r = 0; r < NR; r++) acc[t][r] =                                    \
                    _mm256_fmadd_ps(wv[r], xv, acc[t][r]);                                         \
            }                                                                                      \
        }                                                                                          \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < NR; r++) {                  \
            if (r >= nr) continue;                                                                 \
            float s = hsum(acc[t][r]);                                                             \
            for (int kk = k; kk < K; kk++)                                                         \
                s += SC(w[r], kk) * x[t * ldx + kk];                                               \
            y[t * ldy + r] = s;                                                                    \
        }                                                                                          \
    }

/* Prefill (T >= STRIP_MIN_T): each 4-row strip of weights widened once into f32 rows
 * (f32 weights are used where they are), then 4 rows x 3 tokens per tile over them: 12
 * accumulators and 7 loads per 12 FMAs, where the row tiles widen every weight again for
 * every token pair. Blocked as a GEMM: a group of strips (GROUP_BYTES of f32, in L2) is
 * widened once and then swept by blocks of tokens whose x stays in L2 (XBLOCK_BYTES), each
 * strip STRIP_KC columns at a time (16 KiB of it stays in L1 for the block's tokens), the
 * accumulators carried between sweeps. The widened rows' stride is padded so the four rows do
 * not share L1 sets. Each output sums exactly as the row tiles sum it (lane j over k = j mod 8
 * in order, hsum, then the K % 8 tail), so a token's result does not depend on the batch. */
enum {
    STRIP_MIN_T = 3,
    STRIP_PAD = 16,
    STRIP_KC = 1024,
    GROUP_BYTES = 192 << 10,
    GROUP_MAX = 16, /* strips */
    XBLOCK_BYTES = 128 << 10
};

/* wr[0..4) = rows n .. n + 3 of w as f32 (rows past nr alias row n), widened into buf (rows
 * ld floats apart) where w is not f32. */
typedef void (*strip_rows_fn)(const float **wr, float *buf, long ld, const void *w, long n, int K,
                              int nr);

/* Columns [k0, k1) of NT tokens x 4 rows (k0 and k1 multiples of 8 unless k1 = K), carrying
 * the accumulators in part between sweeps; the last sweep (k1 = K) writes y. */
#define DEFINE_STRIP(NAME, NT)                                                                     \
    static void NAME(float *y, long ldy, const float *x, long ldx, const float *const *w, int k0,  \
                     int k1, int K, int nr, __m256 *part) {                                        \
        __m256 acc[NT][4];                                                                         \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < 4; r++) acc[t][r] =         \
            k0 ? part[4 * t + r] : _mm256_setzero_ps();                                            \
        int k = k0;                                                                                \
        for (; k + 8 <= k1; k += 8) {                                                              \
            __m256 xv[NT];                                                                         \
            UNROLL for (int t = 0; t < NT; t++) xv[t] = _mm256_loadu_ps(x + t * ldx + k);          \
            UNROLL for (int r = 0; r < 4; r++) {                                                   \
                __m256 wv = _mm256_loadu_ps(w[r] + k);                                             \
                UNROLL for (int t = 0; t < NT; t++) acc[t][r] =                                    \
                    _mm256_fmadd_ps(wv, xv[t], acc[t][r]);                                         \
            }                                                                                      \
        }                                                                                          \
        if (k1 < K) {                                                                              \
            UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < 4; r++)                 \
                part[4 * t + r] = acc[t][r];                                                       \
            return;                                                                                \
        }                                                                                          \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < 4; r++) {                   \
            if (r >= nr) continue;                                                                 \
            float s = hsum(acc[t][r]);                                                             \
            for (int kk = k; kk < K; kk++)                                                         \
                s += w[r][kk] * x[t * ldx + kk];                                                   \
            y[t * ldy + r] = s;                                                                    \
        }                                                                                          \
    }

DEFINE_STRIP(strip3, 3)
DEFINE_STRIP(strip2, 2)
DEFINE_STRIP(strip1, 1)

/* One sweep of columns [k0, k1) of strip n over tokens [t0, t1), 3 at a time, each group's
 * accumulators in part. */
static void sweep(float *y, long ldy, const float *x, long ldx, const float *const *wr, int k0,
                  int k1, int K, int nr, int t0, int t1, __m256 *part) {
    int t = t0;
    for (; t + 3 <= t1; t += 3, part += 12)
        strip3(y + t * ldy, ldy, x + t * ldx, ldx, wr, k0, k1, K, nr, part);
    if (t1 - t == 2) strip2(y + t * ldy, ldy, x + t * ldx, ldx, wr, k0, k1, K, nr, part);
    if (t1 - t == 1) strip1(y + t * ldy, ldy, x + t * ldx, ldx, wr, k0, k1, K, nr, part);
}

/* Columns [n0, n1) for T tokens through widened strips; 0 (nothing done) when the buffers
 * cannot be had, and the caller's row tiles give the same sums. */
static int strips(float *y, long ldy, const float *x, long ldx, const void *w, int K, int T,
                  long n0, long n1, strip_rows_fn rows, int widen) {
    long ld = (K + 7) / 8 * 8 + STRIP_PAD, g = GROUP_BYTES / (16 * ld);
    g = g < 1 ? 1 : g > GROUP_MAX ? GROUP_MAX : g;
    int tb = XBLOCK_BYTES / (4 * K);
    tb = tb < 3 ? 3 : tb / 3 * 3;
    size_t part_bytes = sizeof(__m256) * 4 * (size_t)(tb + 2);
    char *mem = aligned_alloc(32, part_bytes + (widen ? sizeof(float) * 4 * (size_t)(ld * g) : 0));
    if (!mem) return 0;
    __m256 *part = (__m256 *)mem;
    float *buf = (float *)(mem + part_bytes);
    const float *wr[GROUP_MAX][4];
    for (long nb = n0; nb < n1; nb += 4 * g) {
        int ns = 0; /* strips in this group */
        for (long n = nb; n < n1 && ns < g; n += 4, ns++)
            rows(wr[ns], buf + 4 * ld * ns, ld, w, n, K, n1 - n < 4 ? (int)(n1 - n) : 4);
        for (int t0 = 0; t0 < T; t0 += tb) {
            int t1 = T - t0 < tb ? T : t0 + tb;
            for (int i = 0; i < ns; i++) {
                long n = nb + 4 * i;
                int nr = n1 - n < 4 ? (int)(n1 - n) : 4;
                for (int k0 = 0; k0 < K || k0 == 0; k0 += STRIP_KC)
                    sweep(y + n, ldy, x, ldx, wr[i], k0, K - k0 < STRIP_KC ? K : k0 + STRIP_KC, K,
                          nr, t0, t1, part);
            }
        }
    }
    free(mem);
    return 1;
}

static void rows_f32(const float **wr, float *buf, long ld, const void *w, long n, int K, int nr) {
    (void)buf, (void)ld;
    for (int r = 0; r < 4; r++)
        wr[r] = (const float *)w + (n + (r < nr ? r : 0)) * (long)K;
}

/* Row-major 2-byte weights widened row by row. */
#define DEFINE_ROWS(NAME, LD, SC)                                                                  \
    static void NAME(const float **wr, float *buf, long ld, const void *w, long n, int K,          \
                     int nr) {                                                                     \
        for (int r = 0; r < 4; r++) {                                                              \
            wr[r] = buf + (r < nr ? r : 0) * ld;                                                   \
            if (r >= nr) continue;                                                                 \
            const uint16_t *row = (const uint16_t *)w + (n + r) * (long)K;                         \
            int k = 0;                                                                             \
            for (; k + 8 <= K; k += 8)                                                             \
                _mm256_store_ps(buf + r * ld + k, LD(row, k));                                     \
            for (; k < K; k++)                                                                     \
                buf[r * ld + k] = SC(row, k);                                                      \
        }                                                                                          \
    }

/* A 4-row tile (tensor/tile16.h) widened from its one stream. */
#define DEFINE_ROWS_T4(NAME, LD)                                                                   \
    static void NAME(const float **wr, float *buf, long ld, const void *w, long n, int K,          \
                     int nr) {                                                                     \
        (void)nr;                                                                                  \
        const uint16_t *tile = (const uint16_t *)w + n * (long)K;                                  \
        for (int r = 0; r < 4; r++)                                                                \
            wr[r] = buf + r * ld;                                                                  \
        for (int k = 0; k < K; k += 8, tile += 32)                                                 \
            UNROLL for (int r = 0; r < 4; r++) _mm256_store_ps(buf + r * ld + k, LD(tile, 8 * r)); \
    }

DEFINE_ROWS(rows_bf16, ld_bf16, sc_bf16)
DEFINE_ROWS(rows_f16, ld_f16, sc_f16)
DEFINE_ROWS_T4(rows_t4_bf16, ld_bf16)
DEFINE_ROWS_T4(rows_t4_f16, ld_f16)

/* Prefill through strips; decode in token pairs (4 rows x 2 tokens), a leftover token alone
 * (4 rows x 1 token), 16 rows at a time. */
#define DEFINE_MM(NAME, TILE2, TILE1, ESZ, ROWS, WIDEN)                                            \
    static void NAME(float *y, long ldy, const float *x, long ldx, const void *w, int K, int T,    \
                     long n0, long n1) {                                                           \
        if (T >= STRIP_MIN_T && strips(y, ldy, x, ldx, w, K, T, n0, n1, ROWS, WIDEN)) return;      \
        const char *wb = w;                                                                        \
        for (long nb = n0; nb < n1; nb += 16) {                                                    \
            long ne = nb + 16 < n1 ? nb + 16 : n1;                                                 \
            int t = 0;                                                                             \
            for (; t + 2 <= T; t += 2)                                                             \
                for (long n = nb; n < ne; n += 4)                                                  \
                    TILE2(y + t * ldy + n, ldy, x + t * ldx, ldx, wb + n * (long)K * ESZ, K,       \
                          ne - n < 4 ? (int)(ne - n) : 4);                                         \
            for (; t < T; t++)                                                                     \
                for (long n = nb; n < ne; n += 4)                                                  \
                    TILE1(y + t * ldy + n, ldy, x + t * ldx, ldx, wb + n * (long)K * ESZ, K,       \
                          ne - n < 4 ? (int)(ne - n) : 4);                                         \
        }                                                                                          \
    }

DEFINE_TILE(tile2_f32, 4, 2, 4, ld_f32, sc_f32)
DEFINE_TILE(tile2_bf16, 4, 2, 2, ld_bf16, sc_bf16)
DEFINE_TILE(tile2_f16, 4, 2, 2, ld_f16, sc_f16)
DEFINE_TILE(tile1_f32, 4, 1, 4, ld_f32, sc_f32)
DEFINE_TILE(tile1_bf16, 4, 1, 2, ld_bf16, sc_bf16)
DEFINE_TILE(tile1_f16, 4, 1, 2, ld_f16, sc_f16)
DEFINE_MM(mm_f32, tile2_f32, tile1_f32, 4, rows_f32, 0)
DEFINE_MM(mm_bf16, tile2_bf16, tile1_bf16, 2, rows_bf16, 1)
DEFINE_MM(mm_f16, tile2_f16, tile1_f16, 2, rows_f16, 1)

/* Weights in 4-row tiles (tensor/tile16.h, K a multiple of 8): NT tokens over one tile's
 * sequential stream, summing as the row tiles do (nr is always 4: tiles are whole); the decode
 * tile prefetches T4_PF elements (2 KiB) ahead. */
enum { T4_PF = 1024 };
#define DEFINE_T4TILE(NAME, NT, LD)                                                                \
    static void NAME(float *y, long ldy, const float *x, long ldx, const char *wp, int K,          \
                     int nr) {                                                                     \
        (void)nr;                                                                                  \
        const uint16_t *w = (const uint16_t *)wp;                                                  \
        __m256 acc[NT][4];                                                                         \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < 4; r++) acc[t][r] =         \
            _mm256_setzero_ps();                                                                   \
        for (int k = 0; k < K; k += 8, w += 32) {                                                  \
            __m256 wv[4];                                                                          \
            if (NT == 1) _mm_prefetch((const char *)(w + T4_PF), _MM_HINT_T0);                     \
            UNROLL for (int r = 0; r < 4; r++) wv[r] = LD(w, 8 * r);                               \
            UNROLL for (int t = 0; t < NT; t++) {                                                  \
                __m256 xv = _mm256_loadu_ps(x + t * ldx + k);                                      \
                UNROLL for (int r = 0; r < 4; r++) acc[t][r] =                                     \
                    _mm256_fmadd_ps(wv[r], xv, acc[t][r]);                                         \
            }                                                                                      \
        }                                                                                          \
        UNROLL for (int t = 0; t < NT; t++) UNROLL for (int r = 0; r < 4; r++) y[t * ldy + r] =    \
            hsum(acc[t][r]);                                                                       \
    }

/* Rows in whole tiles [n0, n1 / 4 * 4) through TILES, DEFINE_MM over the tiles (n0 a multiple
 * of 4), the N % 4 row-major rows after them (n1 then the last row) through the row-major
 * kernel MM. */
#define DEFINE_MM_T4(NAME, TILES, MM)                                                              \
    void NAME(float *y, long ldy, const float *x, long ldx, const void *w, int K, int T, long n0,  \
              long n1) {                                                                           \
        long nt = n1 / 4 * 4;                                                                      \
        TILES(y, ldy, x, ldx, w, K, T, n0, nt);                                                    \
        if (nt < n1) MM(y, ldy, x, ldx, w, K, T, nt, n1);                                          \
    }

DEFINE_T4TILE(t4tile2_bf16, 2, ld_bf16)
DEFINE_T4TILE(t4tile1_bf16, 1, ld_bf16)
DEFINE_T4TILE(t4tile2_f16, 2, ld_f16)
DEFINE_T4TILE(t4tile1_f16, 1, ld_f16)
DEFINE_MM(tiles_bf16, t4tile2_bf16, t4tile1_bf16, 2, rows_t4_bf16, 1)
DEFINE_MM(tiles_f16, t4tile2_f16, t4tile1_f16, 2, rows_t4_f16, 1)
DEFINE_MM_T4(hr_avx2_mm_bf16_t4, tiles_bf16, mm_bf16)
DEFINE_MM_T4(hr_avx2_mm_f16_t4, tiles_f16, mm_f16)

/* Sums exactly as a matmul tile sums one output (attention relies on it). */
static float dot(const float *a, const float *b, int n) {
    __m256 v = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8)
        v = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), v);
    float s = hsum(v);
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static void axpy(float *y, float a, const float *x, int n) {
    __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i,
                         _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

static void scale(float *y, float a, int n) {
    __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(av, _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] *= a;
}

/* P V keeps a tile of PV_NR queries x PV_NV vectors of o in registers across the tile's
 * positions and reuses each V load for all its queries (see the AVX-512 file). */
enum { PV_NR = 4, PV_NV = 2 };
#define INLINE static inline __attribute__((always_inline))

/* Whether queries [0, nr) all weigh every position of the tile, so nothing is skipped. */
static int pv_dense(const float *s, long s_ld, int nr, int nj) {
    for (int r = 0; r < nr; r++) {
        const float *w = s + r * s_ld;
        int jj = 0;
        for (; jj + 8 <= nj; jj += 8)
            if (_mm256_movemask_ps(
                    _mm256_cmp_ps(_mm256_loadu_ps(w + jj), _mm256_setzero_ps(), _CMP_EQ_OQ)))
                return 0;
        for (; jj < nj; jj++)
            if (w[jj] == 0) return 0;
    }
    return 1;
}

/* Lanes below n of a maskload / maskstore. */
static inline __m256i lanes_below(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline __m256 ld_part(const float *p, int tail, __m256i m) {
    return tail ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}

/* o[r][d0, d0 + 8 NV) for NR queries; with tail the last vector only has the lanes of dm.
 * Not dense: a weight of 0 leaves o untouched (an FMA by 0 could turn -0 into +0; a branch,
 * as a blend would sit on the accumulators' dependency chain) and NULL rows are not read.
 * Per lane the same fma as axpy (its scalar tail contracts to one), in the same order. */
INLINE void pv_chunk(float *const *o, const float *s, long s_ld, const float *const *v, int nj,
                     int d0, const int tail, __m256i dm, const int dense, const int NR,
                     const int NV) {
    __m256 acc[PV_NR][PV_NV];
    UNROLL for (int r = 0; r < NR; r++) UNROLL for (int c = 0; c < NV; c++) acc[r][c] =
        ld_part(o[r] + d0 + 8 * c, tail && c == NV - 1, dm);
    for (int jj = 0; jj < nj; jj++) {
        if (!dense && !v[jj]) continue;
        __m256 x[PV_NV];
        UNROLL for (int c = 0; c < NV; c++) x[c] =
            ld_part(v[jj] + d0 + 8 * c, tail && c == NV - 1, dm);
        UNROLL for (int r = 0; r < NR; r++) {
            if (!dense && s[r * s_ld + jj] == 0) continue;
            __m256 w = _mm256_set1_ps(s[r * s_ld + jj]);
            UNROLL for (int c = 0; c < NV; c++) acc[r][c] = _mm256_fmadd_ps(w, x[c], acc[r][c]);
        }
    }
    UNROLL for (int r = 0; r < NR; r++) UNROLL for (int c = 0; c < NV; c++) {
        if (tail && c == NV - 1)
            _mm256_maskstore_ps(o[r] + d0 + 8 * c, dm, acc[r][c]);
        else
            _mm256_storeu_ps(o[r] + d0 + 8 * c, acc[r][c]);
    }
}

/* NR queries over all of hd: chunks of PV_NV vectors, then single vectors, the last one
 * partial. */
INLINE void pv_rows(float *const *o, const float *s, long s_ld, const float *const *v, int nj,
                    int hd, const int NR) {
    int dense = pv_dense(s, s_ld, NR, nj), d0 = 0;
    __m256i all = _mm256_set1_epi32(-1);
    for (; d0 + 8 * PV_NV <= hd; d0 += 8 * PV_NV) {
        if (dense)
            pv_chunk(o, s, s_ld, v, nj, d0, 0, all, 1, NR, PV_NV);
        else
            pv_chunk(o, s, s_ld, v, nj, d0, 0, all, 0, NR, PV_NV);
    }
    for (; d0 + 8 <= hd; d0 += 8) {
        if (dense)
            pv_chunk(o, s, s_ld, v, nj, d0, 0, all, 1, NR, 1);
        else
            pv_chunk(o, s, s_ld, v, nj, d0, 0, all, 0, NR, 1);
    }
    if (d0 < hd) {
        __m256i dm = lanes_below(hd - d0);
        if (dense)
            pv_chunk(o, s, s_ld, v, nj, d0, 1, dm, 1, NR, 1);
        else
            pv_chunk(o, s, s_ld, v, nj, d0, 1, dm, 0, NR, 1);
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

/* One KV head vector to f32: 8 lanes at a time, Q8_0 a block (4 x 8 int8) per scale, Q4_0
 * the same from the low and the high nibbles. */
static void kv_load(float *y, const void *row, hr_dtype dtype, int n) {
    int i = 0;
    switch (dtype) {
    case HR_BF16:
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, ld_bf16(row, i));
        for (; i < n; i++)
            y[i] = sc_bf16(row, i);
        break;
    case HR_F16:
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, ld_f16(row, i));
        for (; i < n; i++)
            y[i] = sc_f16(row, i);
        break;
    case HR_Q8_0:
        for (int b = 0; b < n / HR_Q8_BLOCK; b++) {
            const uint8_t *blk = (const uint8_t *)row + (long)b * HR_Q8_BYTES;
            __m256 d = _mm256_set1_ps(sc_f16(blk, 0));
            for (int k = 0; k < HR_Q8_BLOCK; k += 8) {
                __m128i q = _mm_loadl_epi64((const __m128i *)(blk + 2 + k));
                __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
                _mm256_storeu_ps(y + b * HR_Q8_BLOCK + k, _mm256_mul_ps(d, f));
            }
        }
        break;
    case HR_Q4_0:
        for (int b = 0; b < n / HR_Q8_BLOCK; b++) {
            const uint8_t *blk = (const uint8_t *)row + (long)b * HR_Q4_BYTES;
            __m256 d = _mm256_set1_ps(sc_f16(blk, 0));
            __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2)), m15 = _mm_set1_epi8(15),
                    eight = _mm_set1_epi8(8);
            __m128i half[2] = {_mm_sub_epi8(_mm_and_si128(q, m15), eight),
                               _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m15), eight)};
            for (int h = 0; h < 2; h++)
                for (int k = 0; k < 2; k++) {
                    __m128i part = k ? _mm_srli_si128(half[h], 8) : half[h];
                    __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(part));
                    _mm256_storeu_ps(y + b * HR_Q8_BLOCK + h * 16 + k * 8, _mm256_mul_ps(d, f));
                }
        }
        break;
    default:
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, ld_f32(row, i));
        for (; i < n; i++)
            y[i] = sc_f32(row, i);
        break;
    }
}

/* Q K^T: 4 rows x NH query heads (1 or 2) a tile, 4 or 8 independent chains, each the
 * chain of dot (one 8-lane accumulator over the elements in order, then hsum); rows in
 * f32, bf16 or f16, widened in registers as kv_load widens them (exactly). hd % 8 == 0. */
static const float qk_zero_row[HR_QK_MAX_HD];

#define QK_LD(DT, p, i)                                                                            \
    ((DT) == HR_BF16 ? ld_bf16(p, i) : (DT) == HR_F16 ? ld_f16(p, i) : ld_f32(p, i))

INLINE void qk_tile(float *s, long s_ld, const float *const *q, const void *const r[4], int nr,
                    int hd, const hr_dtype DT, const int NH) {
    __m256 acc[2][4];
    UNROLL for (int h = 0; h < NH; h++) UNROLL for (int k = 0; k < 4; k++) acc[h][k] =
        _mm256_setzero_ps();
    for (int i = 0; i < hd; i += 8) {
        __m256 kv[4];
        UNROLL for (int k = 0; k < 4; k++) kv[k] = QK_LD(DT, r[k], i);
        UNROLL for (int h = 0; h < NH; h++) {
            __m256 qv = _mm256_loadu_ps(q[h] + i);
            UNROLL for (int k = 0; k < 4; k++) acc[h][k] = _mm256_fmadd_ps(qv, kv[k], acc[h][k]);
        }
    }
    float r4[2][4]; /* constant indices keep acc in registers */
    UNROLL for (int h = 0; h < NH; h++) UNROLL for (int k = 0; k < 4; k++) r4[h][k] =
        hsum(acc[h][k]);
    for (int h = 0; h < NH; h++)
        for (int k = 0; k < nr; k++)
            s[h * s_ld + k] = r4[h][k];
}

/* Query heads [0, nq) over rows r[0..nr) stored in dt (F32, BF16, F16). */
static void qk_heads(float *s, long s_ld, const float *const *q, int nq, const void *const r[4],
                     int nr, int hd, hr_dtype dt) {
    for (int h = 0; h < nq; h += 2) {
        int two = nq - h >= 2;
        float *sh = s + h * s_ld;
        if (dt == HR_BF16)
            two ? qk_tile(sh, s_ld, q + h, r, nr, hd, HR_BF16, 2)
                : qk_tile(sh, s_ld, q + h, r, nr, hd, HR_BF16, 1);
        else if (dt == HR_F16)
            two ? qk_tile(sh, s_ld, q + h, r, nr, hd, HR_F16, 2)
                : qk_tile(sh, s_ld, q + h, r, nr, hd, HR_F16, 1);
        else
            two ? qk_tile(sh, s_ld, q + h, r, nr, hd, HR_F32, 2)
                : qk_tile(sh, s_ld, q + h, r, nr, hd, HR_F32, 1);
    }
}

static void qk(float *s, long s_ld, const float *const *q, int nq, const void *const *rows,
               hr_dtype dtype, int nj, int hd) {
    float wide[4 * HR_QK_MAX_HD];
    int narrow = dtype != HR_F32 && dtype != HR_BF16 && dtype != HR_F16;
    for (int j0 = 0; j0 < nj; j0 += 4) {
        int nr = nj - j0 < 4 ? nj - j0 : 4;
        const void *r[4];
        for (int k = 0; k < 4; k++) {
            r[k] = k < nr && rows[j0 + k] ? rows[j0 + k] : qk_zero_row;
            if (narrow && r[k] != qk_zero_row) {
                kv_load(wide + k * hd, r[k], dtype, hd);
                r[k] = wide + k * hd;
            }
        }
        qk_heads(s + j0, s_ld, q, nq, r, nr, hd, narrow ? HR_F32 : dtype);
        for (int k = 0; k < nr; k++)
            for (int h = 0; !rows[j0 + k] && h < nq; h++)
                s[h * s_ld + j0 + k] = 0;
    }
}

static float max(const float *s, int n) {
    __m256 m = _mm256_set1_ps(-INFINITY);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        m = _mm256_max_ps(m, _mm256_loadu_ps(s + i));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    float r = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
    for (; i < n; i++)
        r = s[i] > r ? s[i] : r;
    return r;
}

/* exp(x) for x <= 0 as in the AVX-512 file; 2^n is built in the exponent bits, so below
 * -87.3 (2^n not normal) the result is 0. */
static inline __m256 exp_le0(__m256 x) {
    __m256 small = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(HR_EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = HR_EXP_REDUCE(n, x, _mm256_fnmadd_ps, _mm256_set1_ps);
    __m256 p = HR_EXP_POLY(r, _mm256_fmadd_ps, _mm256_mul_ps, _mm256_add_ps, _mm256_set1_ps);
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(small, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

static float exp_sum(float *s, int n, float m) {
    __m256 mv = _mm256_set1_ps(m), sum = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp_le0(_mm256_sub_ps(_mm256_loadu_ps(s + i), mv));
        _mm256_storeu_ps(s + i, e);
        sum = _mm256_add_ps(sum, e);
    }
    if (i < n) {
        __m256i k = lanes_below(n - i);
        __m256 e = exp_le0(_mm256_sub_ps(_mm256_maskload_ps(s + i, k), mv));
        _mm256_maskstore_ps(s + i, k, e);
        sum = _mm256_add_ps(sum, _mm256_and_ps(e, _mm256_castsi256_ps(k)));
    }
    return hsum(sum);
}

const hr_cpu_kernels hr_cpu_kernels_avx2 = {
    .name = "avx2",
    .mm_f32 = mm_f32,
    .mm_bf16 = mm_bf16,
    .mm_f16 = mm_f16,
    .mm_bf16_t4 = hr_avx2_mm_bf16_t4,
    .mm_f16_t4 = hr_avx2_mm_f16_t4,
    .dot = dot,
    .axpy = axpy,
    .scale = scale,
    .pv = pv,
    .kv_load = kv_load,
    .qk = qk,
    .max = max,
    .exp_sum = exp_sum,
};
