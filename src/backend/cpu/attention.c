/* CPU paged attention, flash style: one work item per (token, kv head) covers the query
 * heads of its GQA group, so each K and V row is read once for the whole group. KV
 * positions [start, pos] (start honours a sliding window) are walked in tiles of TILE
 * through the row's block table; scores of a tile are kept in a small stack buffer and
 * the softmax is carried across tiles with one rescale per tile. */
#include <math.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"

enum { TILE = 128, MAX_GROUP = 32 };

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

static void attn_task(void *ctx, int t, int nt) {
    attn_ctx *c = ctx;
    const hr_attn_params *p = c->p;
    int group = p->n_heads / p->n_kv_heads;
    long items = (long)c->cb->meta.n_tokens * p->n_kv_heads, b, e;
    hr_split_range(items, 1, t, nt, &b, &e);
    for (long i = b; i < e; i++) {
        int tok = (int)(i / p->n_kv_heads), kvh = (int)(i % p->n_kv_heads);
        for (int h0 = 0; h0 < group; h0 += MAX_GROUP)
            attend_group(c, tok, kvh, kvh * group + h0, group - h0 < MAX_GROUP ? group - h0 : MAX_GROUP);
    }
}

void hr_cpu_attention(hr_backend *be, float *out, const float *q, const hr_kv_store *kv,
                      const hr_attn_params *p) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    attn_ctx c = {cb, out, q, kv, p, hr_cpu_kernels_get()};
    hr_pool_run(cb->pool, attn_task, &c);
}
