/* CPU paged attention: for each (token, head) an online-softmax pass over the row's KV
 * positions [start, pos] read through its block table, where start honours a sliding
 * window. Work items (token x head) are split across the pool. */
#include <math.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"

typedef struct {
    hr_cpu_backend *cb;
    float *out;
    const float *q;
    const hr_kv_store *kv;
    const hr_attn_params *p;
    const hr_cpu_kernels *k;
} attn_ctx;

static void attend_one(const attn_ctx *c, int t, int h) {
    const hr_step_meta *m = &c->cb->meta;
    const hr_attn_params *p = c->p;
    const hr_kv_store *kv = c->kv;
    int hd = p->head_dim, kvh = h / (p->n_heads / p->n_kv_heads);
    int pos = m->pos[t], start = p->window > 0 && pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
    const int32_t *bt = m->block_tables[m->row[t]];
    const float *q = c->q + ((long)t * p->n_heads + h) * hd;
    float *o = c->out + ((long)t * p->n_heads + h) * hd;
    for (int i = 0; i < hd; i++) o[i] = 0;
    float mx = -INFINITY, sum = 0;
    for (int j = start; j <= pos; j++) {
        long off = hr_kv_offset(kv, p->layer, bt[j / kv->block_size], j % kv->block_size) +
                   (long)kvh * hd;
        float s = c->k->dot(q, (const float *)kv->k + off, hd) * p->scale;
        if (p->softcap > 0) s = p->softcap * tanhf(s / p->softcap);
        if (s > mx) {
            float corr = expf(mx - s);
            sum *= corr;
            c->k->scale(o, corr, hd);
            mx = s;
        }
        float w = expf(s - mx);
        sum += w;
        c->k->axpy(o, w, (const float *)kv->v + off, hd);
    }
    c->k->scale(o, 1.0f / sum, hd);
}

static void attn_task(void *ctx, int t, int nt) {
    attn_ctx *c = ctx;
    long items = (long)c->cb->meta.n_tokens * c->p->n_heads, b, e;
    hr_split_range(items, 1, t, nt, &b, &e);
    for (long i = b; i < e; i++) attend_one(c, (int)(i / c->p->n_heads), (int)(i % c->p->n_heads));
}

void hr_cpu_attention(hr_backend *be, float *out, const float *q, const hr_kv_store *kv,
                      const hr_attn_params *p) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    attn_ctx c = {cb, out, q, kv, p, hr_cpu_kernels_get()};
    hr_pool_run(cb->pool, attn_task, &c);
}
