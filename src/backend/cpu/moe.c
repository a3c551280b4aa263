/* CPU mixture-of-experts ops. Routing: softmax over the router logits, top-k, optional
 * renormalisation. Experts: tokens are grouped by expert (a counting sort of the (token,
 * slot) pairs), each hit expert gathers its rows and runs three matmuls on them, and the
 * weighted outputs are added back; experts nobody chose cost nothing. hr_cpu_moe_ref is the
 * plain per-token definition the grouped version is tested against. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"

void hr_cpu_moe_route(hr_backend *be, int32_t *ids, float *weights, const float *logits, int T,
                      int n_experts, int k, int renorm) {
    (void)be;
    for (int t = 0; t < T; t++) {
        const float *l = logits + (long)t * n_experts;
        float mx = -INFINITY, sum = 0;
        for (int e = 0; e < n_experts; e++)
            mx = fmaxf(mx, l[e]);
        for (int e = 0; e < n_experts; e++)
            sum += expf(l[e] - mx);
        int32_t *id = ids + (long)t * k;
        float *w = weights + (long)t * k, wsum = 0;
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int e = 0; e < n_experts; e++) {
                int taken = 0;
                for (int i = 0; i < j; i++)
                    taken |= id[i] == e;
                if (!taken && (best < 0 || l[e] > l[best])) best = e;
            }
            id[j] = best;
            w[j] = expf(l[best] - mx) / sum;
            wsum += w[j];
        }
        if (renorm)
            for (int j = 0; j < k; j++)
                w[j] /= wsum;
    }
}

static float act(float g, hr_act_fn fn) {
    if (fn == HR_ACT_FN_SILU) return g / (1.0f + expf(-g));
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * g * (1.0f + tanhf(c * (g + 0.044715f * g * g * g)));
}

/* Scratch of one moe_experts call: pairs sorted by expert and the gathered activations. */
typedef struct {
    int *start;   /* (n_experts + 1) first pair of each expert */
    int *pair;    /* (T*k) token*k + slot, grouped by expert */
    float *xs;    /* (T*k, hidden) gathered rows */
    float *g, *u; /* (T*k, inter) */
    float *o;     /* (T*k, hidden) */
} moe_scratch;

static int scratch_alloc(moe_scratch *s, int T, int k, const hr_moe_weights *w) {
    size_t n = (size_t)T * k;
    s->start = calloc((size_t)w->n_experts + 1, sizeof(int));
    s->pair = malloc(sizeof(int) * n);
    s->xs = malloc(sizeof(float) * n * (size_t)w->hidden);
    s->o = malloc(sizeof(float) * n * (size_t)w->hidden);
    s->g = malloc(sizeof(float) * n * (size_t)w->inter);
    s->u = malloc(sizeof(float) * n * (size_t)w->inter);
    return s->start && s->pair && s->xs && s->o && s->g && s->u;
}

static void scratch_free(moe_scratch *s) {
    free(s->start);
    free(s->pair);
    free(s->xs);
    free(s->o);
    free(s->g);
    free(s->u);
}

/* Counting sort of the (token, slot) pairs by expert; pairs of one expert keep token order. */
static void group(moe_scratch *s, const int32_t *ids, int n, int n_experts) {
    for (int i = 0; i < n; i++)
        s->start[ids[i] + 1]++;
    for (int e = 0; e < n_experts; e++)
        s->start[e + 1] += s->start[e];
    int *fill = malloc(sizeof(int) * (size_t)n_experts);
    if (!fill) return;
    memcpy(fill, s->start, sizeof(int) * (size_t)n_experts);
    for (int i = 0; i < n; i++)
        s->pair[fill[ids[i]]++] = i;
    free(fill);
}

void hr_cpu_moe_experts(hr_backend *be, float *y, const float *x, const int32_t *ids,
                        const float *weights, int T, int k, const hr_moe_weights *w) {
    long H = w->hidden, I = w->inter;
    memset(y, 0, sizeof(float) * (size_t)T * H);
    moe_scratch s = {0};
    if (!scratch_alloc(&s, T, k, w)) {
        /* out of memory: fall back to the per-token reference, which needs no scratch */
        scratch_free(&s);
        hr_cpu_moe_ref(y, x, ids, weights, T, k, w);
        return;
    }
    group(&s, ids, T * k, w->n_experts);
    for (int e = 0; e < w->n_experts; e++) {
        int b = s.start[e], n = s.start[e + 1] - b;
        if (n == 0) continue;
        for (int i = 0; i < n; i++)
            memcpy(s.xs + i * H, x + (s.pair[b + i] / k) * H, sizeof(float) * (size_t)H);
        hr_cpu_matmul(be, s.g, s.xs, w->gate[e], NULL, n);
        hr_cpu_matmul(be, s.u, s.xs, w->up[e], NULL, n);
        for (long i = 0; i < (long)n * I; i++)
            s.g[i] = act(s.g[i], w->act) * s.u[i];
        hr_cpu_matmul(be, s.o, s.g, w->down[e], NULL, n);
        for (int i = 0; i < n; i++) {
            int p = s.pair[b + i];
            float wt = weights[p];
            float *yr = y + (p / k) * H;
            for (long h = 0; h < H; h++)
                yr[h] += wt * s.o[i * H + h];
        }
    }
    scratch_free(&s);
}

/* One expert on one row: out[hidden] = down(act(gate x) * up x); g holds inter floats. */
static void expert_row(float *out, const float *x, const hr_moe_weights *w, int e, float *g) {
    float wr[1];
    for (int i = 0; i < w->inter; i++) {
        float sg = 0, su = 0;
        for (int h = 0; h < w->hidden; h++) {
            hr_cpu_to_f32(wr, w->gate[e], (long)i * w->hidden + h, 1);
            sg += wr[0] * x[h];
            hr_cpu_to_f32(wr, w->up[e], (long)i * w->hidden + h, 1);
            su += wr[0] * x[h];
        }
        g[i] = act(sg, w->act) * su;
    }
    for (int h = 0; h < w->hidden; h++) {
        float s = 0;
        for (int i = 0; i < w->inter; i++) {
            hr_cpu_to_f32(wr, w->down[e], (long)h * w->inter + i, 1);
            s += wr[0] * g[i];
        }
        out[h] = s;
    }
}

void hr_cpu_moe_ref(float *y, const float *x, const int32_t *ids, const float *weights, int T,
                    int k, const hr_moe_weights *w) {
    float *tmp = malloc(sizeof(float) * (size_t)(w->inter + w->hidden));
    if (!tmp) return;
    float *o = tmp + w->inter;
    for (int t = 0; t < T; t++) {
        float *yr = y + (long)t * w->hidden;
        for (int h = 0; h < w->hidden; h++)
            yr[h] = 0;
        for (int j = 0; j < k; j++) {
            expert_row(o, x + (long)t * w->hidden, w, ids[t * k + j], tmp);
            for (int h = 0; h < w->hidden; h++)
                yr[h] += weights[t * k + j] * o[h];
        }
    }
    free(tmp);
}
