/* CPU ops of the gated DeltaNet layers (qwen3_next / qwen3_5): the causal depthwise conv1d
 * and the gated delta rule, both run token by token in the recurrent form (the reference's
 * chunked prefill computes the same recurrence in another order), reading and updating each
 * row's slot of the recurrent state; plus the small sigmoid-gate helper. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"

void hr_cpu_sigmoid_mul(hr_backend *be, float *y, const float *g, long rows, int w, int g_w) {
    (void)be;
    for (long r = 0; r < rows; r++)
        for (int i = 0; i < w; i++) {
            float gv = g[r * g_w + (g_w == 1 ? 0 : i)];
            y[r * w + i] *= 1.0f / (1.0f + expf(-gv));
        }
}

/* First token of each row of the step: starts[n_rows + 1]. NULL when out of memory. */
static int *row_starts(const hr_step_meta *m) {
    int *s = calloc((size_t)m->n_rows + 1, sizeof(int));
    if (!s) return NULL;
    for (int t = 0; t < m->n_tokens; t++)
        s[m->row[t] + 1]++;
    for (int r = 0; r < m->n_rows; r++)
        s[r + 1] += s[r];
    return s;
}

typedef struct {
    hr_cpu_backend *cb;
    float *x;
    const hr_tensor *w;
    int channels, K;
    float *state; /* this layer's slots */
    long slot_floats;
    const int *starts;
} conv_ctx;

/* Channels [c0, c1) of every row: out[t] = silu(sum_j w[j] * in[t - K + 1 + j]), where inputs
 * before the row's first token come from its state (K - 1 previous inputs per channel). */
static void conv_task(void *ctx, int th, int nth) {
    conv_ctx *c = ctx;
    const hr_step_meta *m = &c->cb->meta;
    long c0, c1;
    hr_split_range(c->channels, 16, th, nth, &c0, &c1);
    int K = c->K;
    float w[16], win[17];
    for (int r = 0; r < m->n_rows; r++) {
        int t0 = c->starts[r], t1 = c->starts[r + 1];
        if (t1 == t0) continue;
        float *st = c->state + m->state_slots[r] * c->slot_floats;
        int fresh = m->pos[t0] == 0;
        for (long ch = c0; ch < c1; ch++) {
            hr_cpu_to_f32(w, c->w, ch * K, K);
            float *s = st + ch * (K - 1);
            for (int j = 0; j < K - 1; j++)
                win[j] = fresh ? 0 : s[j];
            for (int t = t0; t < t1; t++) {
                float *xt = c->x + (long)t * c->channels + ch;
                win[K - 1] = *xt;
                float acc = 0;
                for (int j = 0; j < K; j++)
                    acc += w[j] * win[j];
                *xt = acc / (1.0f + expf(-acc));
                memmove(win, win + 1, sizeof(float) * (size_t)(K - 1));
            }
            memcpy(s, win, sizeof(float) * (size_t)(K - 1));
        }
    }
}

void hr_cpu_conv1d(hr_backend *be, float *x, const hr_tensor *w, int channels, hr_kv_store *kv,
                   int state_layer) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    int *starts = row_starts(&cb->meta);
    if (!starts) return;
    conv_ctx c = {cb,
                  x,
                  w,
                  channels,
                  (int)w->shape[2],
                  (float *)kv->conv + (long)state_layer * kv->n_state_slots * kv->conv_floats,
                  kv->conv_floats,
                  starts};
    hr_pool_run(cb->pool, conv_task, &c);
    free(starts);
}

typedef struct {
    hr_cpu_backend *cb;
    float *out;
    const hr_delta_params *p;
    float *state; /* this layer's slots */
    long slot_floats;
    const int *starts;
    const hr_cpu_kernels *k;
} delta_ctx;

static float softplus(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

/* x[n] / sqrt(sum x^2 + 1e-6) * scale into y. */
static void l2norm(float *y, const float *x, int n, float scale) {
    float ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    float inv = 1.0f / sqrtf(ss + 1e-6f) * scale;
    for (int i = 0; i < n; i++)
        y[i] = x[i] * inv;
}

/* The recurrence of one (row, value head): S <- S * exp(g); S += k (beta (v - S^T k))^T;
 * out = S^T q, with S (k_dim, v_dim): two passes over S per token, on the dispatched
 * scale/axpy kernels. q, k, d are scratch of k_dim, k_dim, v_dim floats. */
static void delta_one(const delta_ctx *c, int r, int h, float *q, float *k, float *d) {
    const hr_cpu_kernels *kn = c->k;
    const hr_step_meta *m = &c->cb->meta;
    const hr_delta_params *p = c->p;
    int dk = p->k_dim, dv = p->v_dim, kh = h / (p->n_v_heads / p->n_k_heads);
    int t0 = c->starts[r], t1 = c->starts[r + 1];
    float *S = c->state + m->state_slots[r] * c->slot_floats + (long)h * dk * dv;
    if (m->pos[t0] == 0) memset(S, 0, sizeof(float) * (size_t)dk * dv);
    float a_log, dt_bias;
    hr_cpu_to_f32(&a_log, p->a_log, h, 1);
    hr_cpu_to_f32(&dt_bias, p->dt_bias, h, 1);
    float A = -expf(a_log);
    for (int t = t0; t < t1; t++) {
        l2norm(q, p->q + t * p->ld + (long)kh * dk, dk, 1.0f / sqrtf((float)dk));
        l2norm(k, p->k + t * p->ld + (long)kh * dk, dk, 1.0f);
        const float *v = p->v + t * p->ld + (long)h * dv;
        float decay = expf(A * softplus(p->a[(long)t * p->n_v_heads + h] + dt_bias));
        float beta = 1.0f / (1.0f + expf(-p->b[(long)t * p->n_v_heads + h]));
        float *o = c->out + ((long)t * p->n_v_heads + h) * dv;
        memset(d, 0, sizeof(float) * (size_t)dv);
        for (int i = 0; i < dk; i++) { /* decay, and d = S^T k */
            kn->scale(S + (long)i * dv, decay, dv);
            kn->axpy(d, k[i], S + (long)i * dv, dv);
        }
        for (int j = 0; j < dv; j++)
            d[j] = (v[j] - d[j]) * beta;
        memset(o, 0, sizeof(float) * (size_t)dv);
        for (int i = 0; i < dk; i++) { /* S += k d^T, and o = S^T q */
            kn->axpy(S + (long)i * dv, k[i], d, dv);
            kn->axpy(o, q[i], S + (long)i * dv, dv);
        }
    }
}

static void delta_task(void *ctx, int th, int nth) {
    delta_ctx *c = ctx;
    long items = (long)c->cb->meta.n_rows * c->p->n_v_heads, b, e;
    hr_split_range(items, 1, th, nth, &b, &e);
    float *qk = malloc(sizeof(float) * (2 * (size_t)c->p->k_dim + (size_t)c->p->v_dim));
    if (!qk) return;
    for (long i = b; i < e; i++) {
        int r = (int)(i / c->p->n_v_heads), h = (int)(i % c->p->n_v_heads);
        if (c->starts[r + 1] > c->starts[r])
            delta_one(c, r, h, qk, qk + c->p->k_dim, qk + 2 * c->p->k_dim);
    }
    free(qk);
}

void hr_cpu_gated_delta(hr_backend *be, float *out, hr_kv_store *kv, const hr_delta_params *p) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    int *starts = row_starts(&cb->meta);
    if (!starts) return;
    float *state = (float *)kv->delta + (long)p->state_layer * kv->n_state_slots * kv->delta_floats;
    delta_ctx c = {cb, out, p, state, kv->delta_floats, starts, hr_cpu_kernels_get()};
    hr_pool_run(cb->pool, delta_task, &c);
    free(starts);
}
