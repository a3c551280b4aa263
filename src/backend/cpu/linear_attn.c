/* CPU ops of the gated DeltaNet layers (qwen3_next / qwen3_5): the causal depthwise conv1d
 * (token by token) and the gated delta rule (recurrent for short rows, chunked for prefill
 * rows of HR_DELTA_CHUNK tokens or more; delta_rule.c), reading and updating each row's slot
 * of the recurrent state; plus the small sigmoid-gate helper. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/delta_rule.h"
#include "backend/cpu/kernels.h"

void hr_cpu_sigmoid_mul(hr_backend *be, float *y, const float *g, long rows, int w, int g_w) {
    (void)be;
    for (long r = 0; r < rows; r++)
        for (int i = 0; i < w; i++) {
            float gv = g[r * g_w + (g_w == 1 ? 0 : i)];
            y[r * w + i] *= 1.0f / (1.0f + expf(-gv));
        }
}

typedef struct {
    hr_cpu_backend *cb;
    float *x;
    const hr_tensor *w;
    int channels, K;
    float *state; /* this layer's slots */
    long slot_floats;
    const int32_t *starts; /* the step's q_start */
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
    conv_ctx c = {cb,
                  x,
                  w,
                  channels,
                  (int)w->shape[2],
                  (float *)kv->conv + (long)state_layer * kv->n_state_slots * kv->conv_floats,
                  kv->conv_floats,
                  cb->meta.q_start};
    hr_pool_run(cb->pool, conv_task, &c);
}

typedef struct {
    hr_cpu_backend *cb;
    float *out;
    const hr_delta_params *p;
    float *state; /* this layer's slots */
    long slot_floats;
    const int32_t *starts; /* the step's q_start */
    int max_len;           /* longest row of the step */
} delta_ctx;

static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* x[n] / sqrt(sum x^2 + 1e-6) * scale into y. */
static void l2norm(float *y, const float *x, int n, float scale) {
    float ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    float inv = 1.0f / sqrtf(ss + 1e-6f) * scale;
    for (int i = 0; i < n; i++)
        y[i] = x[i] * inv;
}

/* Scratch floats of one task: prepared q, k (max_len, dk), g, beta (max_len), and the
 * delta-rule kernels' own scratch. */
static size_t delta_scratch(const delta_ctx *c) {
    size_t dk = (size_t)c->p->k_dim, T = (size_t)c->max_len;
    size_t own = hr_delta_chunked_scratch(c->p->k_dim, c->p->v_dim);
    return 2 * T * dk + 2 * T + (own > (size_t)c->p->v_dim ? own : (size_t)c->p->v_dim);
}

/* One (row, value head): prepares q, k (l2-normalised, q scaled), the log decay
 * A softplus(a + dt_bias) and beta = sigmoid(b), then runs the delta rule from the row's
 * state: chunked for rows of at least HR_DELTA_CHUNK tokens (prefill), else recurrent. */
static void delta_one(const delta_ctx *c, int r, int h, float *scr) {
    const hr_step_meta *m = &c->cb->meta;
    const hr_delta_params *p = c->p;
    int dk = p->k_dim, dv = p->v_dim, kh = h / (p->n_v_heads / p->n_k_heads);
    int t0 = c->starts[r], T = c->starts[r + 1] - t0;
    float *S = c->state + m->state_slots[r] * c->slot_floats + (long)h * dk * dv;
    if (m->pos[t0] == 0) memset(S, 0, sizeof(float) * (size_t)dk * dv);
    float a_log, dt_bias;
    hr_cpu_to_f32(&a_log, p->a_log, h, 1);
    hr_cpu_to_f32(&dt_bias, p->dt_bias, h, 1);
    float A = -expf(a_log);
    float *q = scr, *k = q + (long)T * dk, *g = k + (long)T * dk, *beta = g + T, *own = beta + T;
    for (int t = 0; t < T; t++) {
        long row = (long)(t0 + t) * p->ld + (long)kh * dk, ab = (long)(t0 + t) * p->n_v_heads + h;
        l2norm(q + (long)t * dk, p->q + row, dk, 1.0f / sqrtf((float)dk));
        l2norm(k + (long)t * dk, p->k + row, dk, 1.0f);
        g[t] = A * softplus(p->a[ab] + dt_bias);
        beta[t] = 1.0f / (1.0f + expf(-p->b[ab]));
    }
    hr_delta_head hd = {.T = T,
                        .dk = dk,
                        .dv = dv,
                        .q = q,
                        .k = k,
                        .g = g,
                        .beta = beta,
                        .v = p->v + (long)t0 * p->ld + (long)h * dv,
                        .v_ld = p->ld,
                        .out = c->out + ((long)t0 * p->n_v_heads + h) * dv,
                        .out_ld = (long)p->n_v_heads * dv};
    if (T >= HR_DELTA_CHUNK)
        hr_delta_chunked(&hd, S, own);
    else
        hr_delta_recurrent(&hd, S, own);
}

static void delta_task(void *ctx, int th, int nth) {
    delta_ctx *c = ctx;
    long items = (long)c->cb->meta.n_rows * c->p->n_v_heads, b, e;
    hr_split_range(items, 1, th, nth, &b, &e);
    if (b >= e) return;
    float *scr = malloc(sizeof(float) * delta_scratch(c));
    if (!scr) return;
    for (long i = b; i < e; i++) {
        int r = (int)(i / c->p->n_v_heads), h = (int)(i % c->p->n_v_heads);
        if (c->starts[r + 1] > c->starts[r]) delta_one(c, r, h, scr);
    }
    free(scr);
}

void hr_cpu_gated_delta(hr_backend *be, float *out, hr_kv_store *kv, const hr_delta_params *p) {
    hr_cpu_backend *cb = (hr_cpu_backend *)be;
    const int32_t *starts = cb->meta.q_start;
    float *state = (float *)kv->delta + (long)p->state_layer * kv->n_state_slots * kv->delta_floats;
    delta_ctx c = {cb, out, p, state, kv->delta_floats, starts, 0};
    for (int r = 0; r < cb->meta.n_rows; r++)
        if (starts[r + 1] - starts[r] > c.max_len) c.max_len = starts[r + 1] - starts[r];
    hr_pool_run(cb->pool, delta_task, &c);
}
