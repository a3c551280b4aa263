/* CPU paged attention, flash style. Decode-like rows (few tokens): one work item per
 * (token, kv head) covers the query heads of its GQA group, so each K and V row is read
 * once for the whole group; positions [start, pos] (start honours a sliding window) are
 * walked in tiles through the row's block table with the softmax carried across tiles.
 * Prefill rows: one item per (block of QB consecutive tokens, kv head); each K/V tile is
 * gathered once into contiguous scratch and both products (Q K^T and P V) run on the
 * matmul kernels, with causal and window masks applied per query. Items are handed out
 * from a shared counter. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"

enum { TILE = 128, MAX_GROUP = 32, QB = 16, TJ = 64, BLOCK_MIN = 8 };

typedef struct {
    hr_cpu_backend *cb;
    float *out;
    const float *q;
    const hr_kv_store *kv;
    const hr_attn_params *p;
    const hr_cpu_kernels *k;
} attn_ctx;

typedef struct {
    const float *q[MAX_GROUP]; /* query rows of the group's heads (head_dim each) */
    float *o[MAX_GROUP];       /* output rows */
    float mx[MAX_GROUP], sum[MAX_GROUP];
    int n;                     /* heads in this group chunk */
} head_group;

static const float *kv_row(const attn_ctx *c, const void *base, const int32_t *bt, int j, int kvh) {
    const hr_kv_store *kv = c->kv;
    long off = hr_kv_offset(kv, c->p->layer, bt[j / kv->block_size], j % kv->block_size) +
               (long)kvh * hr_kv_head_dim(kv, c->p->layer);
    return (const float *)base + off;
}

/* Scores of positions [j0, j0+len) for every head, then the online-softmax update. */
static void tile(const attn_ctx *c, head_group *g, const int32_t *bt, int kvh, int j0, int len) {
    const hr_attn_params *p = c->p;
    float s[MAX_GROUP][TILE];
    for (int jj = 0; jj < len; jj++) {
        const float *krow = kv_row(c, c->kv->k, bt, j0 + jj, kvh);
        for (int h = 0; h < g->n; h++) {
            float v = c->k->dot(g->q[h], krow, p->head_dim) * p->scale;
            s[h][jj] = p->softcap > 0 ? p->softcap * tanhf(v / p->softcap) : v;
        }
    }
    for (int h = 0; h < g->n; h++) {
        float m = g->mx[h];
        for (int jj = 0; jj < len; jj++) m = fmaxf(m, s[h][jj]);
        if (m > g->mx[h]) {
            float corr = expf(g->mx[h] - m);
            g->sum[h] *= corr;
            c->k->scale(g->o[h], corr, p->head_dim);
            g->mx[h] = m;
        }
        for (int jj = 0; jj < len; jj++) {
            s[h][jj] = expf(s[h][jj] - m);
            g->sum[h] += s[h][jj];
        }
    }
    for (int jj = 0; jj < len; jj++) {
        const float *vrow = kv_row(c, c->kv->v, bt, j0 + jj, kvh);
        for (int h = 0; h < g->n; h++) c->k->axpy(g->o[h], s[h][jj], vrow, p->head_dim);
    }
}

static void attend_group(const attn_ctx *c, int t, int kvh, int h0, int nh) {
    const hr_step_meta *m = &c->cb->meta;
    const hr_attn_params *p = c->p;
    int hd = p->head_dim, pos = m->pos[t];
    int start = p->window > 0 && pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
    const int32_t *bt = m->block_tables[m->row[t]];
    head_group g = {.n = nh};
    for (int h = 0; h < nh; h++) {
        long row = (long)t * p->n_heads + h0 + h;
        g.q[h] = c->q + row * hd;
        g.o[h] = c->out + row * hd;
        g.mx[h] = -INFINITY;
        g.sum[h] = 0;
        for (int i = 0; i < hd; i++) g.o[h][i] = 0;
    }
    for (int j = start; j <= pos; j += TILE) tile(c, &g, bt, kvh, j, pos - j + 1 < TILE ? pos - j + 1 : TILE);
    for (int h = 0; h < nh; h++) c->k->scale(g.o[h], 1.0f / g.sum[h], hd);
}

/* Scratch of one prefill block item (floats): Q rows, scores, K tile, V tile transposed,
 * P V product, output accumulators, running max and sum. */
typedef struct {
    float *q, *s, *k, *vt, *pv, *o, *mx, *sum;
} blk_scratch;

static float *blk_alloc(blk_scratch *b, int M, int hd) {
    size_t n = (size_t)M * hd * 3 + (size_t)M * TJ + (size_t)TJ * hd * 2 + 2 * (size_t)M;
    float *f = malloc(sizeof(float) * n);
    if (!f) return NULL;
    b->q = f;
    b->o = b->q + (size_t)M * hd;
    b->pv = b->o + (size_t)M * hd;
    b->s = b->pv + (size_t)M * hd;
    b->k = b->s + (size_t)M * TJ;
    b->vt = b->k + (size_t)TJ * hd;
    b->mx = b->vt + (size_t)TJ * hd;
    b->sum = b->mx + M;
    return f;
}

/* Masks, softmax-updates and exponentiates one tile of scores for query m at pq. */
static void blk_softmax(const attn_ctx *c, blk_scratch *b, int m, int pq, int j0, int nj, int hd) {
    const hr_attn_params *p = c->p;
    float *s = b->s + (long)m * TJ, mx = -INFINITY;
    for (int jj = 0; jj < nj; jj++) {
        int j = j0 + jj;
        float v = s[jj] * p->scale;
        if (p->softcap > 0) v = p->softcap * tanhf(v / p->softcap);
        s[jj] = j <= pq && (p->window <= 0 || j > pq - p->window) ? v : -INFINITY;
        mx = fmaxf(mx, s[jj]);
    }
    if (mx == -INFINITY) { /* nothing visible in this tile */
        for (int jj = 0; jj < nj; jj++) s[jj] = 0;
        return;
    }
    if (mx > b->mx[m]) {
        float corr = expf(b->mx[m] - mx);
        b->sum[m] *= corr;
        c->k->scale(b->o + (long)m * hd, corr, hd);
        b->mx[m] = mx;
    }
    for (int jj = 0; jj < nj; jj++) {
        s[jj] = s[jj] == -INFINITY ? 0 : expf(s[jj] - b->mx[m]);
        b->sum[m] += s[jj];
    }
}

/* Queries t0..t0+nq-1 (consecutive positions of one row) x the group of kv head kvh. */
static void attend_block(const attn_ctx *c, blk_scratch *b, int t0, int nq, int kvh) {
    const hr_step_meta *m = &c->cb->meta;
    const hr_attn_params *p = c->p;
    int G = p->n_heads / p->n_kv_heads, hd = p->head_dim, M = nq * G, p0 = m->pos[t0];
    const int32_t *bt = m->block_tables[m->row[t0]];
    for (int i = 0; i < nq; i++)
        for (int h = 0; h < G; h++) {
            const float *src = c->q + ((long)(t0 + i) * p->n_heads + kvh * G + h) * hd;
            for (int d = 0; d < hd; d++) b->q[(long)(i * G + h) * hd + d] = src[d];
        }
    for (long i = 0; i < (long)M * hd; i++) b->o[i] = 0;
    for (int i = 0; i < M; i++) b->mx[i] = -INFINITY, b->sum[i] = 0;
    int last = p0 + nq - 1, lo = p->window > 0 && p0 - p->window + 1 > 0 ? p0 - p->window + 1 : 0;
    for (int j0 = lo; j0 <= last; j0 += TJ) {
        int nj = last - j0 + 1 < TJ ? last - j0 + 1 : TJ;
        for (int jj = 0; jj < nj; jj++) {
            const float *kr = kv_row(c, c->kv->k, bt, j0 + jj, kvh), *vr = kv_row(c, c->kv->v, bt, j0 + jj, kvh);
            for (int d = 0; d < hd; d++) {
                b->k[(long)jj * hd + d] = kr[d];
                b->vt[(long)d * nj + jj] = vr[d];
            }
        }
        c->k->mm_f32(b->s, TJ, b->q, hd, b->k, hd, M, 0, nj);
        for (int i = 0; i < M; i++) blk_softmax(c, b, i, p0 + i / G, j0, nj, hd);
        c->k->mm_f32(b->pv, hd, b->s, TJ, b->vt, nj, M, 0, hd);
        for (long i = 0; i < (long)M * hd; i++) b->o[i] += b->pv[i];
    }
    for (int i = 0; i < nq; i++)
        for (int h = 0; h < G; h++) {
            float *dst = c->out + ((long)(t0 + i) * p->n_heads + kvh * G + h) * hd;
            const float *o = b->o + (long)(i * G + h) * hd;
            float inv = 1.0f / b->sum[i * G + h];
            for (int d = 0; d < hd; d++) dst[d] = o[d] * inv;
        }
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

static void attend_token(const attn_ctx *c, int tok, int kvh) {
    int group = c->p->n_heads / c->p->n_kv_heads;
    for (int h0 = 0; h0 < group; h0 += MAX_GROUP)
        attend_group(c, tok, kvh, kvh * group + h0, group - h0 < MAX_GROUP ? group - h0 : MAX_GROUP);
}

static void items_task(void *ctx, int th, int nth) {
    items_ctx *ic = ctx;
    const hr_attn_params *p = ic->c.p;
    blk_scratch b;
    float *mem = NULL;
    int tried = 0;
    for (long i; (i = atomic_fetch_add(&ic->next, 1)) < ic->n_items;) {
        const attn_item *it = &ic->items[i];
        if (it->nq > 1 && !tried) { /* block scratch only when this thread gets a block */
            mem = blk_alloc(&b, QB * (p->n_heads / p->n_kv_heads), p->head_dim);
            tried = 1;
        }
        if (it->nq > 1 && mem) attend_block(&ic->c, &b, it->t0, it->nq, it->kvh);
        else
            for (int t = it->t0; t < it->t0 + it->nq; t++) attend_token(&ic->c, t, it->kvh);
    }
    free(mem);
}

/* Items of the step: rows with BLOCK_MIN+ tokens in blocks of QB, others token by token.
 * Returns the item count; *blocks says whether any item is a block. */
static long plan_items(const hr_step_meta *m, const hr_attn_params *p, attn_item *items, int *blocks) {
    long n = 0;
    *blocks = 0;
    int blocked = p->n_heads / p->n_kv_heads <= MAX_GROUP;
    for (int t = 0; t < m->n_tokens;) {
        int e = t + 1;
        while (e < m->n_tokens && m->row[e] == m->row[t]) e++;
        int step = blocked && e - t >= BLOCK_MIN ? QB : 1;
        *blocks |= step > 1;
        for (int b = t; b < e; b += step)
            for (int kvh = 0; kvh < p->n_kv_heads; kvh++)
                items[n++] = (attn_item){b, e - b < step ? e - b : step, kvh};
        t = e;
    }
    return n;
}



static void attn_task(void *ctx, int t, int nt) {
    attn_ctx *c = ctx;
    long items = (long)c->cb->meta.n_tokens * c->p->n_kv_heads, b, e;
    hr_split_range(items, 1, t, nt, &b, &e);
    for (long i = b; i < e; i++) attend_token(c, (int)(i / c->p->n_kv_heads), (int)(i % c->p->n_kv_heads));
}

void hr_cpu_attention(hr_backend *be, float *out, const float *q, const hr_kv_store *kv,
                      const hr_attn_params *p) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    attn_ctx c = {cb, out, q, kv, p, hr_cpu_kernels_get()};
    items_ctx ic = {.c = c, .items = malloc(sizeof(attn_item) * (size_t)cb->meta.n_tokens * (size_t)p->n_kv_heads)};
    int blocks = 0;
    if (ic.items) ic.n_items = plan_items(&cb->meta, p, ic.items, &blocks);
    if (!blocks) { /* decode-like step (or out of memory): the static per-token split */
        free(ic.items);
        hr_pool_run(cb->pool, attn_task, &c);
        return;
    }
    atomic_init(&ic.next, 0);
    hr_pool_run(cb->pool, items_task, &ic);
    free(ic.items);
}
