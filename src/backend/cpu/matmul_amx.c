/* bf16 matmul on Intel AMX tiles (the `--compute bf16` mode): y[T,N] = x[T,K] w[N,K]^T with
 * x rounded to bf16, exact bf16 products and f32 accumulation. The weight is the tile A
 * operand as it lies in memory (16 rows of 32 elements, stride K); x is packed into B tiles
 * (16 k-pairs x 16 tokens), so a C tile holds 16 output columns x 16 tokens and is written
 * back transposed. Each output element's accumulation order depends only on K, never on
 * the batch: a token computes the same bits alone or among others. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/cpu/matmul_bf16.h"
#include "base/cpu.h"

enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
enum { TN = 16, TK = 32 }; /* tile: 16 rows (columns of y / tokens) by 32 bf16 of k */

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

int hr_amx_init(void) {
    static int state = -1; /* -1 unknown, 0 unusable, 1 usable */
    if (state >= 0) return state;
    state = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
    return state;
}

int hr_amx_fits(long N, long K) {
    return hr_cpu()->amx && K % 32 == 0 && N % 16 == 0 && hr_amx_init();
}

static void load_config(void) {
    tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 8; i++) {
        c.rows[i] = TN;
        c.colsb[i] = TK * 2;
    }
    _tile_loadconfig(&c);
}

long hr_amx_pack_elems(int T, int K) { return (long)(T + TN - 1) / TN * (K / TK) * TN * TK; }

/* Token group g (16 tokens) of x into its K/32 B tiles: element (r, t, j) of tile kb is
 * x[16g + t][32kb + 2r + j] rounded to bf16; tokens past T are zero. */
void hr_amx_pack(uint16_t *xp, const float *x, long ldx, int K, int T, int g0, int g1) {
    int nkb = K / TK;
    for (int g = g0; g < g1; g++) {
        uint32_t *tiles = (uint32_t *)(xp + (long)g * nkb * TN * TK);
        for (int t = 0; t < TN; t++) {
            int tok = g * TN + t;
            for (int kb = 0; kb < nkb; kb++) {
                uint32_t *dst = tiles + (long)kb * TN * TN + t;
                if (tok >= T) {
                    for (int r = 0; r < TN; r++)
                        dst[r * TN] = 0;
                    continue;
                }
                const float *src = x + tok * ldx + kb * TK;
                __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src));
                uint32_t pairs[TN];
                _mm512_storeu_si512(pairs, (__m512i)v);
                for (int r = 0; r < TN; r++)
                    dst[r * TN] = pairs[r];
            }
        }
    }
}

/* Writes tokens [0, nt) of C tile buf (16 columns x 16 tokens) to y at column n: token t
 * is column t of buf, gathered into one 16-float row of y. */
static void store_c(float *y, long ldy, const float *buf, long n, int nt) {
    const __m512i idx =
        _mm512_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240);
    for (int t = 0; t < nt; t++)
        _mm512_storeu_ps(y + t * ldy + n, _mm512_i32gather_ps(idx, buf + t, 4));
}

#define W_AT(w, n, K, kb) ((const char *)(w) + ((long)(n) * (K) + (long)(kb)*TK) * 2)
#define X_AT(xp, g, nkb, kb) ((const char *)(xp) + (((long)(g) * (nkb) + (kb)) * TN * TK) * 2)

enum { PF_KB = 1 }; /* k blocks ahead that block22 prefetches into L1 */

/* 2 column tiles x 2 token groups: C in tiles 0-3, w in 4-5, x in 6-7. */
static void block22(float *y, long ldy, const uint16_t *xp, const uint16_t *w, int K, long n, int g,
                    int nt0, int nt1) {
    int nkb = K / TK;
    long wst = (long)K * 2;
    float buf[TN * TN];
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int kb = 0; kb < nkb; kb++) {
        if (kb + PF_KB < nkb) {
            for (int r = 0; r < 2 * TN; r++)
                _mm_prefetch(W_AT(w, n + r, K, kb + PF_KB), _MM_HINT_T0);
            for (int r = 0; r < TN; r++) {
                _mm_prefetch(X_AT(xp, g, nkb, kb + PF_KB) + r * 64, _MM_HINT_T0);
                _mm_prefetch(X_AT(xp, g + 1, nkb, kb + PF_KB) + r * 64, _MM_HINT_T0);
            }
        }
        _tile_loadd(4, W_AT(w, n, K, kb), wst);
        _tile_loadd(5, W_AT(w, n + TN, K, kb), wst);
        _tile_loadd(6, X_AT(xp, g, nkb, kb), TK * 2);
        _tile_loadd(7, X_AT(xp, g + 1, nkb, kb), TK * 2);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 5, 6);
        _tile_dpbf16ps(2, 4, 7);
        _tile_dpbf16ps(3, 5, 7);
    }
    float *y1 = y + (long)TN * ldy;
    _tile_stored(0, buf, TN * 4);
    store_c(y, ldy, buf, n, nt0);
    _tile_stored(1, buf, TN * 4);
    store_c(y, ldy, buf, n + TN, nt0);
    _tile_stored(2, buf, TN * 4);
    store_c(y1, ldy, buf, n, nt1);
    _tile_stored(3, buf, TN * 4);
    store_c(y1, ldy, buf, n + TN, nt1);
}

/* 4 column tiles x 1 token group (the decode shape): C in tiles 0-3, x in 4, w rotating
 * through 5-7. (Software prefetch of the 64 weight rows measured slower.) */
static void block41(float *y, long ldy, const uint16_t *xp, const uint16_t *w, int K, long n, int g,
                    int nt) {
    int nkb = K / TK;
    long wst = (long)K * 2;
    float buf[TN * TN];
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int kb = 0; kb < nkb; kb++) {
        _tile_loadd(4, X_AT(xp, g, nkb, kb), TK * 2);
        _tile_loadd(5, W_AT(w, n, K, kb), wst);
        _tile_loadd(6, W_AT(w, n + TN, K, kb), wst);
        _tile_dpbf16ps(0, 5, 4);
        _tile_loadd(7, W_AT(w, n + 2 * TN, K, kb), wst);
        _tile_dpbf16ps(1, 6, 4);
        _tile_loadd(5, W_AT(w, n + 3 * TN, K, kb), wst);
        _tile_dpbf16ps(2, 7, 4);
        _tile_dpbf16ps(3, 5, 4);
    }
    for (int i = 0; i < 4; i++) {
        switch (i) {
        case 0: _tile_stored(0, buf, TN * 4); break;
        case 1: _tile_stored(1, buf, TN * 4); break;
        case 2: _tile_stored(2, buf, TN * 4); break;
        default: _tile_stored(3, buf, TN * 4); break;
        }
        store_c(y, ldy, buf, n + i * TN, nt);
    }
}

/* 1 column tile x 1 token group: the leftovers. */
static void block11(float *y, long ldy, const uint16_t *xp, const uint16_t *w, int K, long n, int g,
                    int nt) {
    int nkb = K / TK;
    float buf[TN * TN];
    _tile_zero(0);
    for (int kb = 0; kb < nkb; kb++) {
        _tile_loadd(4, W_AT(w, n, K, kb), (long)K * 2);
        _tile_loadd(6, X_AT(xp, g, nkb, kb), TK * 2);
        _tile_dpbf16ps(0, 4, 6);
    }
    _tile_stored(0, buf, TN * 4);
    store_c(y, ldy, buf, n, nt);
}

static int group_tokens(int T, int g) { return T - g * TN < TN ? T - g * TN : TN; }

/* One token group over columns [n0, n1). */
static void one_group(float *y, long ldy, const uint16_t *xp, const uint16_t *w, int K, int T,
                      int g, long n0, long n1) {
    float *yg = y + (long)g * TN * ldy;
    int nt = group_tokens(T, g);
    long n = n0;
    for (; n + 4 * TN <= n1; n += 4 * TN)
        block41(yg, ldy, xp, w, K, n, g, nt);
    for (; n < n1; n += TN)
        block11(yg, ldy, xp, w, K, n, g, nt);
}

/* Token groups [g0, g1) in pairs over columns [n0, n1). */
static void group_pairs(float *y, long ldy, const uint16_t *xp, const uint16_t *w, int K, int T,
                        int g0, int g1, long n0, long n1) {
    long n = n0;
    for (; n + 2 * TN <= n1; n += 2 * TN)
        for (int g = g0; g < g1; g += 2)
            block22(y + (long)g * TN * ldy, ldy, xp, w, K, n, g, TN, group_tokens(T, g + 1));
    for (; n < n1; n += TN)
        for (int g = g0; g < g1; g++)
            block11(y + (long)g * TN * ldy, ldy, xp, w, K, n, g, group_tokens(T, g));
}

/* Tokens go in blocks of BLOCK_GROUPS groups so that a block's packed x stays in L2 while
 * every column pair of the chunk passes over it (and a column pair's weights stay in L1/L2
 * while the block's groups pass over them). */
enum { BLOCK_GROUPS = 8 };
void hr_amx_mm(float *y, long ldy, const uint16_t *xp, const uint16_t *w, int K, int T, long n0,
               long n1) {
    int G = (T + TN - 1) / TN;
    load_config();
    for (int gb = 0; gb < G; gb += BLOCK_GROUPS) {
        int ge = gb + BLOCK_GROUPS < G ? gb + BLOCK_GROUPS : G, gp = gb + (ge - gb) / 2 * 2;
        group_pairs(y, ldy, xp, w, K, T, gb, gp, n0, n1);
        if (gp < ge) one_group(y, ldy, xp, w, K, T, gp, n0, n1);
    }
    _tile_release();
}
