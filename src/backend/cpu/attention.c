/* CPU paged attention, flash style. Decode-like rows (few tokens): one work item per
 * (token, kv head) covers the query heads of its GQA group, so each K and V row is read
 * once for the whole group. Prefill rows: one item per (block of consecutive tokens,
 * kv head); each K tile is gathered once into contiguous scratch and Q K^T runs on the
 * matmul kernel, then the tile's V rows are gathered into the same scratch for P V.
 * Items are handed out from a shared counter (decode: in chunks through hr_pool_for).
 * Both paths compute the same bits for a query, so a token's output never depends on how
 * its prompt was chunked or batched: positions go in tiles of TJ aligned to multiples of
 * TJ, a score is the level's dot (which sums like its matmul tile), the online softmax of
 * a tile is one function, and P V (the pv kernel) adds each visible position's row in
 * order. KV stored narrow (bf16, f16, q8_0, q4_0) is widened by the level's kv_load into
 * per-thread scratch (exact, so every path still sees the same f32 values); a decode tile's
 * Q K^T runs on the level's qk kernel, which widens in registers and sums each score as its
 * dot does. Rows are found one block-table lookup a block (a block keeps a head's rows
 * adjacent) and fetched ahead of use.
 * With --compute bf16 over a bf16 store (AVX-512 BF16, head_dim a multiple of 32) both
 * products are bf16 pairs on VDPBF16PS instead (attn_bx.h): q and the weights rounded to
 * bf16, K and V read as stored, f32 accumulation; both products run on one kernel that
 * sums each output in one order whoever calls it, so both paths still give the same bits. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/attn_bx.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"

/* A prefill block holds BLOCK_ROWS queries (tokens x the GQA group), at most QB_MAX tokens:
 * each K/V tile read from the store is used by that many queries (blocks of 16 tokens
 * read the scattered K/V rows 8x as often as 128, and those reads were a third of the
 * time at 16k positions). */
enum { TJ = 64, MAX_GROUP = 32, BLOCK_ROWS = 256, QB_MAX = 128, BLOCK_MIN = 8 };

/* Tokens per prefill block for GQA groups of G query heads. */
static int block_tokens(int G) {
    int n = BLOCK_ROWS / G;
    return n > QB_MAX ? QB_MAX : n < 1 ? 1 : n;
}

typedef struct {
    hr_cpu_backend *cb;
    float *out;
    const float *q;
    const hr_kv_store *kv;
    const hr_attn_params *p;
    const hr_cpu_kernels *k;
    size_t rb;            /* bytes of one stored head vector */
    const hr_attn_bx *bx; /* set: bf16 products */
} attn_ctx;

/* Position j's stored row of kv head kvh in K or V (base). */
static const void *kv_raw(const attn_ctx *c, const void *base, const int32_t *bt, int j, int kvh) {
    const hr_kv_store *kv = c->kv;
    return (const char *)base +
           hr_kv_offset(kv, c->p->layer, c->rb, bt[j / kv->block_size], kvh, j % kv->block_size);
}

/* rows[jj] = position j0 + jj's stored row of kv head kvh in K or V (base) for jj < nj,
 * NULL before lo (rows outside a sliding window may be released): one block-table lookup
 * a block, the block's rows of one head being adjacent. */
static void tile_rows(const attn_ctx *c, const void *base, const int32_t *bt, int kvh, int j0,
                      int nj, int lo, const void **rows) {
    int bs = c->kv->block_size;
    for (int jj = 0; jj < nj;) {
        int j = j0 + jj, n = bs - j % bs < nj - jj ? bs - j % bs : nj - jj;
        const char *p = j + n > lo ? kv_raw(c, base, bt, j, kvh) : NULL;
        for (int i = 0; i < n; i++)
            rows[jj + i] = j + i >= lo ? p + (size_t)i * c->rb : NULL;
        jj += n;
    }
}

/* The rows rows[0..n) (NULL: none) fetched into L1; with in_v, rows of K and the V rows of
 * the same positions fetched. Always inlined: GCC takes a function of prefetches alone for
 * one without effects and drops its calls. */
static inline __attribute__((always_inline)) void
fetch_rows(const attn_ctx *c, const void *const *rows, int n, int in_v) {
    for (int jj = 0; jj < n; jj++) {
        const char *r = rows[jj];
        if (!r) continue;
        if (in_v) r = (const char *)c->kv->v + (r - (const char *)c->kv->k);
        for (size_t o = 0; o < c->rb; o += 64)
            __builtin_prefetch(r + o, 0, 3);
    }
}

/* Decode and prefill fetch rows PF_ROWS positions ahead, every PF_STEP positions. */
enum { PF_ROWS = 16, PF_STEP = 4 };

/* K rows of tile positions [j0, j0 + nj) and of dist positions past it (to last) into
 * rows (tile_rows); returns how many were found. */
static int rows_ahead(const attn_ctx *c, const int32_t *bt, int kvh, int j0, int nj, int lo,
                      int last, int dist, const void **rows) {
    int ahead = last - j0 + 1 < nj + dist ? last - j0 + 1 : nj + dist;
    tile_rows(c, c->kv->k, bt, kvh, j0, ahead, lo, rows);
    return ahead;
}

/* Before tile rows [c0, c0 + n) are read (rows as rows_ahead found them, ahead of them): their
 * V rows and the K rows dist positions on. A row walk meets a new 4 KiB page every block,
 * where the hardware prefetchers stop (rows fetched ahead took a 2048-position Q4_0 decode
 * on a 2-core Zen 5 from 31 to 50 tok/s); fetched a few rows at a time between the reads,
 * not a tile at once, which ran prefill attention ~10% slower here. */
static inline __attribute__((always_inline)) void
fetch_step(const attn_ctx *c, const void *const *rows, int c0, int n, int ahead, int dist) {
    int na = ahead - c0 - dist;
    fetch_rows(c, rows + c0, n, 1);
    if (na > 0) fetch_rows(c, rows + c0 + dist, na < n ? na : n, 0);
}

/* v[jj] = rows[jj] as f32 for jj < nj (NULL stays NULL): an f32 store's rows as they are
 * when tile is NULL, else copied or widened into tile (head_dim floats a row), each run of
 * rows adjacent in the store in one call. A narrow store needs the tile. */
static void rows_f32(const attn_ctx *c, const void *const *rows, int nj, float *tile,
                     const float **v) {
    int hd = c->p->head_dim;
    for (int jj = 0; jj < nj;) {
        int e = jj + 1;
        while (rows[jj] && e < nj && rows[e] == (const char *)rows[e - 1] + c->rb)
            e++;
        float *dst = tile ? tile + (long)jj * hd : NULL;
        if (rows[jj] && dst && c->kv->dtype == HR_F32)
            memcpy(dst, rows[jj], sizeof(float) * (size_t)(e - jj) * (size_t)hd);
        else if (rows[jj] && dst)
            c->k->kv_load(dst, rows[jj], c->kv->dtype, (e - jj) * hd);
        for (int i = jj; i < e; i++)
            v[i] = !rows[i] ? NULL : dst ? dst + (long)(i - jj) * hd : rows[i];
        jj = e;
    }
}

/* Scratch of the bf16-product path for up to M queries: q rounded, the K tile transposed
 * by pairs (kt), the V tile by pairs (vp), the weights rounded, tile row and score row
 * pointers. */
typedef struct {
    uint16_t *q, *kt, *vp, *pb;
    const uint16_t **rows;
    float **sp;
} bx_scratch;

static void *bx_alloc(bx_scratch *x, int M, int hd) {
    size_t n = (size_t)M * hd + 2 * (size_t)TJ * hd + (size_t)M * TJ;
    void *mem =
        malloc(sizeof(float *) * (size_t)M + sizeof(uint16_t *) * TJ + sizeof(uint16_t) * n);
    if (!mem) return NULL;
    x->sp = mem;
    x->rows = (const uint16_t **)(x->sp + M);
    x->q = (uint16_t *)(x->rows + TJ);
    x->kt = x->q + (size_t)M * hd;
    x->vp = x->kt + (size_t)TJ * hd;
    x->pb = x->vp + (size_t)TJ * hd;
    return mem;
}

/* Whether any of the n queries weighs tile position jj. */
static int weighed(const float *s, long s_ld, int n, int jj) {
    for (int i = 0; i < n; i++)
        if (s[i * s_ld + jj] != 0) return 1;
    return 0;
}

/* rows[jj] = the V row of tile position j0 + jj when some of the n queries weighs it (s),
 * else NULL: a row no query sees may be released (before a sliding window), never read. */
static void weighed_rows(const attn_ctx *c, const int32_t *bt, int kvh, int j0, int nj, int lo,
                         const float *s, long s_ld, int n, const void **rows) {
    tile_rows(c, c->kv->v, bt, kvh, j0, nj, lo, rows);
    for (int jj = 0; jj < nj; jj++)
        if (rows[jj] && !weighed(s, s_ld, n, jj)) rows[jj] = NULL;
}

/* Raw scores s[i][0, nj) of the n queries (rounded in x->q, rows of head_dim) over tile
 * positions [j0, j0 + nj) with bf16 products: rows before lo (outside the window) are
 * zeros, never read. Prefetches the tile's V rows and the next tile's K rows (to last). */
static void qk_tile_bx(const attn_ctx *c, const int32_t *bt, int kvh, int j0, int nj, int lo,
                       int last, float *s, long s_ld, int n, bx_scratch *x) {
    int hd = c->p->head_dim, w = (nj + 15) / 16 * 16;
    const void *rows[2 * TJ];
    int ahead = rows_ahead(c, bt, kvh, j0, nj, lo, last, TJ, rows);
    for (int jj = 0; jj < nj; jj++) {
        x->rows[jj] = rows[jj];
        fetch_step(c, rows, jj, 1, ahead, TJ);
    }
    c->bx->kt(x->kt, x->rows, nj, hd);
    for (int i = 0; i < n; i++) {
        x->sp[i] = s + i * s_ld;
        memset(x->sp[i], 0, sizeof(float) * (size_t)w);
    }
    c->bx->pv(x->sp, x->q, hd, n, x->kt, hd / 2, w);
}

/* pv_tile with bf16 products: the V rows as stored (zeros for a row no query weighs, which
 * may be released, and for the pad of an odd tile), by pairs, times the rounded weights. */
static void pv_tile_bx(const attn_ctx *c, const int32_t *bt, int kvh, int j0, int nj, int lo,
                       float *const *o, const float *s, long s_ld, int n, bx_scratch *x) {
    int hd = c->p->head_dim, np = (nj + 1) / 2;
    const void *rows[TJ];
    weighed_rows(c, bt, kvh, j0, nj, lo, s, s_ld, n, rows);
    for (int jj = 0; jj < nj; jj++)
        x->rows[jj] = rows[jj];
    c->bx->pairs(x->vp, x->rows, nj, hd);
    for (int i = 0; i < n; i++) {
        c->bx->round(x->pb + i * TJ, s + i * s_ld, (2 * np + 15) / 16 * 16);
        if (nj & 1) x->pb[i * TJ + nj] = 0;
    }
    c->bx->pv(o, x->pb, TJ, n, x->vp, np, hd);
}

/* Floats of per-thread scratch the per-token path needs: a V tile and a K row when the
 * store is narrow, none for f32. */
static size_t token_scratch(const attn_ctx *c) {
    return c->kv->dtype == HR_F32 ? 0 : (size_t)(TJ + 1) * (size_t)c->p->head_dim;
}

/* First position a query at pq sees (the sliding window's start). */
static int first_visible(const hr_attn_params *p, int pq) {
    return p->window > 0 && pq - p->window + 1 > 0 ? pq - p->window + 1 : 0;
}

/* One query's online-softmax step over the raw scores s of positions [j0, j0 + nj): scales,
 * caps and masks them, rescales the running output o when the maximum grows, and leaves
 * exp(score - max) in s (0 where masked). The visible positions are one run [a, b). */
static void softmax_tile(const attn_ctx *c, float *s, int j0, int nj, int pq, float *mx, float *sum,
                         float *o) {
    const hr_attn_params *p = c->p;
    int a = first_visible(p, pq) - j0, b = pq - j0 + 1;
    a = a < 0 ? 0 : a;
    b = b > nj ? nj : b;
    if (b <= a) { /* nothing visible in this tile */
        memset(s, 0, sizeof(float) * (size_t)nj);
        return;
    }
    memset(s, 0, sizeof(float) * (size_t)a);
    memset(s + b, 0, sizeof(float) * (size_t)(nj - b));
    c->k->scale(s + a, p->scale, b - a);
    if (p->softcap > 0)
        for (int jj = a; jj < b; jj++)
            s[jj] = p->softcap * tanhf(s[jj] / p->softcap);
    float m = c->k->max(s + a, b - a);
    if (m > *mx) {
        float corr = expf(*mx - m);
        *sum *= corr;
        c->k->scale(o, corr, p->head_dim);
        *mx = m;
    }
    if (*mx == -INFINITY) { /* every visible score so far is -inf */
        memset(s + a, 0, sizeof(float) * (size_t)(b - a));
        return;
    }
    *sum += c->k->exp_sum(s + a, b - a, *mx);
}

/* o[i] += P[i] V over the tile's positions, each visible position's V row in order, on
 * the pv kernel (rows before a sliding window may be released, so a row no query sees is
 * passed as NULL and never read). With tile set, the rows are first copied (or widened)
 * into it: rows of one kv head lie a whole KV row apart (4 KiB for 8 heads of 128) and
 * would compete for the same few L1 sets while every block of queries walks them again.
 * A narrow store needs the tile. */
static void pv_tile(const attn_ctx *c, const int32_t *bt, int kvh, int j0, int nj, int lo,
                    float *const *o, const float *s, long s_ld, int n, float *tile) {
    const void *rows[TJ];
    const float *v[TJ];
    weighed_rows(c, bt, kvh, j0, nj, lo, s, s_ld, n, rows);
    rows_f32(c, rows, nj, tile, v);
    c->k->pv(o, s, s_ld, n, v, nj, c->p->head_dim);
}

/* Raw scores s[h][0, n) (row stride TJ) of the nq queries q over the K rows rows[0..n)
 * (NULL: 0) on the level's qk, else row by row (rows widened into scr). */
static void score_rows(const attn_ctx *c, const float *const *q, int nq, const void *const *rows,
                       int n, float *s, float *scr) {
    int hd = c->p->head_dim;
    if (hr_cpu_qk_fits(c->k, hd)) {
        c->k->qk(s, TJ, q, nq, rows, c->kv->dtype, n, hd);
        return;
    }
    for (int jj = 0; jj < n; jj++) {
        const float *krow = NULL;
        if (rows[jj]) rows_f32(c, &rows[jj], 1, c->kv->dtype == HR_F32 ? NULL : scr, &krow);
        for (int h = 0; h < nq; h++)
            s[h * TJ + jj] = krow ? c->k->dot(q[h], krow, hd) : 0;
    }
}

/* Raw scores s[h][0, nj) (row stride TJ) of the nq queries q over tile positions
 * [j0, j0 + nj), 0 before lo, fetching rows ahead (to last). */
static void qk_tile(const attn_ctx *c, const int32_t *bt, int kvh, int j0, int nj, int lo, int last,
                    const float *const *q, int nq, float *s, float *scr) {
    const void *rows[TJ + PF_ROWS];
    int ahead = rows_ahead(c, bt, kvh, j0, nj, lo, last, PF_ROWS, rows);
    for (int c0 = 0; c0 < nj; c0 += PF_STEP) {
        int n = nj - c0 < PF_STEP ? nj - c0 : PF_STEP;
        fetch_step(c, rows, c0, n, ahead, PF_ROWS);
        score_rows(c, q, nq, rows + c0, n, s + c0, scr);
    }
}

/* Query heads [h0, h0 + nh) of kv head kvh for token t; scr: token_scratch floats, or x for
 * bf16 products. */
static void attend_group(const attn_ctx *c, int t, int kvh, int h0, int nh, float *scr,
                         bx_scratch *x) {
    const hr_step_meta *m = &c->cb->meta;
    const hr_attn_params *p = c->p;
    int hd = p->head_dim, pos = m->pos[t];
    const int32_t *bt = m->block_table + (long)m->row[t] * m->max_blocks;
    const float *q[MAX_GROUP];
    float *o[MAX_GROUP], mx[MAX_GROUP], sum[MAX_GROUP], s[MAX_GROUP][TJ];
    for (int h = 0; h < nh; h++) {
        long row = (long)t * p->n_heads + h0 + h;
        q[h] = c->q + row * hd;
        o[h] = c->out + row * hd;
        mx[h] = -INFINITY;
        sum[h] = 0;
        for (int i = 0; i < hd; i++)
            o[h][i] = 0;
        if (c->bx) c->bx->round(x->q + (long)h * hd, q[h], hd);
    }
    if (c->bx) memset(s, 0, sizeof s); /* rounding the weights reads up to 16 past a tile */
    int lo = first_visible(p, pos);
    for (int j0 = lo / TJ * TJ; j0 <= pos; j0 += TJ) {
        int nj = pos - j0 + 1 < TJ ? pos - j0 + 1 : TJ;
        if (c->bx)
            qk_tile_bx(c, bt, kvh, j0, nj, lo, pos, &s[0][0], TJ, nh, x);
        else
            qk_tile(c, bt, kvh, j0, nj, lo, pos, q, nh, &s[0][0], scr);
        for (int h = 0; h < nh; h++)
            softmax_tile(c, s[h], j0, nj, pos, &mx[h], &sum[h], o[h]);
        if (c->bx)
            pv_tile_bx(c, bt, kvh, j0, nj, lo, o, &s[0][0], TJ, nh, x);
        else
            pv_tile(c, bt, kvh, j0, nj, lo, o, &s[0][0], TJ, nh, scr ? scr + hd : NULL);
    }
    for (int h = 0; h < nh; h++)
        c->k->scale(o[h], 1.0f / sum[h], hd);
}

/* Scratch of one prefill block item (floats): Q rows, scores, the K tile (then the same
 * positions' V rows), running max and sum; plus the output row pointers. */
typedef struct {
    float *q, *s, *kv, *mx, *sum;
    float **o;
    bx_scratch x; /* the bf16-product path's, when it runs */
} blk_scratch;

static void *blk_alloc(blk_scratch *b, int M, int hd) {
    size_t n = (size_t)M * hd + (size_t)M * TJ + (size_t)TJ * hd + 2 * (size_t)M;
    void *mem = calloc(1, sizeof(float *) * (size_t)M + sizeof(float) * n);
    if (!mem) return NULL;
    b->o = mem;
    b->q = (float *)(b->o + M);
    b->s = b->q + (size_t)M * hd;
    b->kv = b->s + (size_t)M * TJ;
    b->mx = b->kv + (size_t)TJ * hd;
    b->sum = b->mx + M;
    return mem;
}

/* Queries t0..t0+nq-1 (consecutive positions of one row) x the group of kv head kvh; query
 * i * G + h is token t0 + i, head kvh * G + h, accumulated in place in the output. */
static void attend_block(const attn_ctx *c, blk_scratch *b, int t0, int nq, int kvh) {
    const hr_step_meta *m = &c->cb->meta;
    const hr_attn_params *p = c->p;
    int G = p->n_heads / p->n_kv_heads, hd = p->head_dim, M = nq * G, p0 = m->pos[t0];
    const int32_t *bt = m->block_table + (long)m->row[t0] * m->max_blocks;
    for (int i = 0; i < nq; i++)
        for (int h = 0; h < G; h++) {
            long row = (long)(t0 + i) * p->n_heads + kvh * G + h;
            for (int d = 0; d < hd; d++)
                b->q[(long)(i * G + h) * hd + d] = c->q[row * hd + d];
            b->o[i * G + h] = c->out + row * hd;
            for (int d = 0; d < hd; d++)
                b->o[i * G + h][d] = 0;
        }
    for (int i = 0; i < M; i++)
        b->mx[i] = -INFINITY, b->sum[i] = 0;
    if (c->bx) c->bx->round(b->x.q, b->q, M * hd);
    int last = p0 + nq - 1, lo = first_visible(p, p0);
    for (int j0 = lo / TJ * TJ; j0 <= last; j0 += TJ) {
        int nj = last - j0 + 1 < TJ ? last - j0 + 1 : TJ;
        if (c->bx) {
            qk_tile_bx(c, bt, kvh, j0, nj, lo, last, b->s, TJ, M, &b->x);
            for (int i = 0; i < M; i++)
                softmax_tile(c, b->s + (long)i * TJ, j0, nj, p0 + i / G, &b->mx[i], &b->sum[i],
                             b->o[i]);
            pv_tile_bx(c, bt, kvh, j0, nj, lo, b->o, b->s, TJ, M, &b->x);
            continue;
        }
        const void *rows[TJ + PF_ROWS];
        const float *kr[TJ];
        int ahead = rows_ahead(c, bt, kvh, j0, nj, lo, last, PF_ROWS, rows);
        for (int c0 = 0; c0 < nj; c0 += PF_STEP) {
            int n = nj - c0 < PF_STEP ? nj - c0 : PF_STEP;
            fetch_step(c, rows, c0, n, ahead, PF_ROWS);
            rows_f32(c, rows + c0, n, b->kv + (long)c0 * hd, kr + c0);
        }
        for (int jj = 0; jj < nj; jj++)
            if (!kr[jj]) memset(b->kv + (long)jj * hd, 0, sizeof(float) * (size_t)hd);
        c->k->mm_f32(b->s, TJ, b->q, hd, b->kv, hd, M, 0, nj);
        for (int i = 0; i < M; i++)
            softmax_tile(c, b->s + (long)i * TJ, j0, nj, p0 + i / G, &b->mx[i], &b->sum[i],
                         b->o[i]);
        pv_tile(c, bt, kvh, j0, nj, lo, b->o, b->s, TJ, M, b->kv);
    }
    for (int i = 0; i < M; i++)
        c->k->scale(b->o[i], 1.0f / b->sum[i], hd);
}

/* A work item: tokens [t0, t0 + nq) of one row with kv head kvh; nq == 1 (decode-like)
 * uses the per-token path. */
typedef struct {
    int t0, nq, kvh;
} attn_item;

typedef struct {
    attn_ctx c;
    attn_item *items;
    long n_items;
    atomic_long next;
} items_ctx;

static void attend_token(const attn_ctx *c, int tok, int kvh, float *scr, bx_scratch *x) {
    int group = c->p->n_heads / c->p->n_kv_heads;
    for (int h0 = 0; h0 < group; h0 += MAX_GROUP)
        attend_group(c, tok, kvh, kvh * group + h0, group - h0 < MAX_GROUP ? group - h0 : MAX_GROUP,
                     scr, x);
}

/* Per-thread scratch of the per-token path: *scr, token_scratch floats (NULL if none), or x
 * for bf16 products; *mem the memory to free (NULL if none). Returns 0 when out of memory. */
static int token_alloc(const attn_ctx *c, float **scr, bx_scratch *x, void **mem) {
    size_t ns = token_scratch(c);
    *scr = NULL;
    *mem = c->bx ? bx_alloc(x, MAX_GROUP, c->p->head_dim) : ns ? malloc(sizeof(float) * ns) : NULL;
    if (!c->bx) *scr = *mem;
    return *mem || (!c->bx && !ns);
}

static void items_task(void *ctx, int th, int nth) {
    items_ctx *ic = ctx;
    const hr_attn_params *p = ic->c.p;
    blk_scratch b;
    void *mem = NULL, *bmem = NULL;
    int G = p->n_heads / p->n_kv_heads, tried = 0, M = block_tokens(G) * G;
    bx_scratch x;
    float *scr;
    void *tmem;
    if (!token_alloc(&ic->c, &scr, &x, &tmem)) return; /* out of memory: nothing to compute with */
    for (long i; (i = atomic_fetch_add(&ic->next, 1)) < ic->n_items;) {
        const attn_item *it = &ic->items[i];
        if (it->nq > 1 && !tried) { /* block scratch only when this thread gets a block */
            mem = blk_alloc(&b, M, p->head_dim);
            bmem = mem && ic->c.bx ? bx_alloc(&b.x, M, p->head_dim) : NULL;
            if (ic->c.bx && !bmem) free(mem), mem = NULL;
            tried = 1;
        }
        if (it->nq > 1 && mem)
            attend_block(&ic->c, &b, it->t0, it->nq, it->kvh);
        else
            for (int t = it->t0; t < it->t0 + it->nq; t++)
                attend_token(&ic->c, t, it->kvh, scr, &x);
    }
    free(bmem);
    free(mem);
    free(tmem);
}

/* Items of the step: rows with BLOCK_MIN+ tokens in blocks of block_tokens, others token by
 * token.
 * Returns the item count; *blocks says whether any item is a block. */
static long plan_items(const hr_step_meta *m, const hr_attn_params *p, attn_item *items,
                       int *blocks) {
    long n = 0;
    *blocks = 0;
    int blocked = p->n_heads / p->n_kv_heads <= MAX_GROUP;
    for (int t = 0; t < m->n_tokens;) {
        int e = t + 1;
        while (e < m->n_tokens && m->row[e] == m->row[t])
            e++;
        int step = blocked && e - t >= BLOCK_MIN ? block_tokens(p->n_heads / p->n_kv_heads) : 1;
        *blocks |= step > 1;
        for (int b = t; b < e; b += step)
            for (int kvh = 0; kvh < p->n_kv_heads; kvh++)
                items[n++] = (attn_item){b, e - b < step ? e - b : step, kvh};
        t = e;
    }
    return n;
}

/* Items [b, e) of a decode-like step: item i is (token i / kv heads, kv head i % kv heads). */
static void attn_task(void *ctx, int t, long b, long e) {
    attn_ctx *c = ctx;
    bx_scratch x;
    float *scr;
    void *mem;
    if (!token_alloc(c, &scr, &x, &mem)) return; /* out of memory: nothing to compute with */
    for (long i = b; i < e; i++)
        attend_token(c, (int)(i / c->p->n_kv_heads), (int)(i % c->p->n_kv_heads), scr, &x);
    free(mem);
}

void hr_cpu_attention(hr_backend *be, float *out, const float *q, const hr_kv_store *kv,
                      const hr_attn_params *p) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    int bx = cb->opt.compute_bf16 && kv->dtype == HR_BF16 && p->head_dim % 32 == 0 &&
             hr_cpu()->level >= HR_CPU_AVX512 && hr_cpu()->avx512bf16;
    attn_ctx c = {cb,
                  out,
                  q,
                  kv,
                  p,
                  hr_cpu_kernels_get(),
                  hr_kv_row_bytes(kv->dtype, p->head_dim),
                  bx ? &hr_attn_bx_avx512 : NULL};
    items_ctx ic = {
        .c = c,
        .items = malloc(sizeof(attn_item) * (size_t)cb->meta.n_tokens * (size_t)p->n_kv_heads)};
    int blocks = 0;
    if (ic.items) ic.n_items = plan_items(&cb->meta, p, ic.items, &blocks);
    if (!blocks) { /* decode-like step (or out of memory): chunks of (token, kv head) items */
        free(ic.items);
        long items = (long)cb->meta.n_tokens * p->n_kv_heads;
        hr_pool_for(cb->pool, items, hr_pool_grain(cb->pool, items, 1, 4, 0), attn_task, &c);
        return;
    }
    atomic_init(&ic.next, 0);
    hr_pool_run(cb->pool, items_task, &ic);
    free(ic.items);
}
