/* CPU MoE: routing (softmax, top-k, optional renormalisation) and the expert FFNs grouped
 * by expert: each routed expert gathers its tokens, runs its gate, up and down matmuls
 * over them at once, and adds its weighted output back, experts in ascending order (the
 * order transformers accumulates in). Experts nobody chose cost nothing. The interface is
 * the shared MoE op of backend.h (also used by qwen3_moe on the hybrid branch). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"

void hr_cpu_moe_route(hr_backend *be, int32_t *ids, float *weights, const float *logits, int T,
                      int n_experts, int k, int renorm) {
    for (int t = 0; t < T; t++) {
        const float *l = logits + (long)t * n_experts;
        float mx = -INFINITY, sum = 0;
        for (int e = 0; e < n_experts; e++)
            mx = fmaxf(mx, l[e]);
        for (int e = 0; e < n_experts; e++)
            sum += expf(l[e] - mx);
        int32_t *id = ids + (long)t * k;
        float *w = weights + (long)t * k, tot = 0;
        for (int j = 0; j < k; j++) { /* selection: k is small; ties go to the lower index */
            int best = -1;
            for (int e = 0; e < n_experts; e++) {
                int used = 0;
                for (int q = 0; q < j; q++)
                    used |= id[q] == e;
                if (!used && (best < 0 || l[e] > l[best])) best = e;
            }
            id[j] = best;
            w[j] = expf(l[best] - mx) / sum;
            tot += w[j];
        }
        if (renorm)
            for (int j = 0; j < k; j++)
                w[j] /= tot;
    }
}

typedef struct {
    float *xe, *g, *u, *o; /* (n, hidden) (n, inter) x2 (n, hidden) */
    int *rows, *slots;     /* (n) token and top-k slot of each gathered row */
} expert_scratch;

/* Runs expert e over its n gathered tokens and adds the weighted outputs into y. */
static void run_expert(hr_backend *be, float *y, const float *x, const float *weights, int k, int n,
                       const hr_moe_weights *w, int e, const expert_scratch *s) {
    long H = w->hidden, I = w->inter;
    for (int i = 0; i < n; i++)
        memcpy(s->xe + i * H, x + (long)s->rows[i] * H, sizeof(float) * (size_t)H);
    hr_cpu_matmul(be, s->g, s->xe, w->gate[e], NULL, n);
    hr_cpu_matmul(be, s->u, s->xe, w->up[e], NULL, n);
    for (long i = 0; i < (long)n * I; i++)
        s->g[i] = hr_cpu_act(s->g[i], w->act) * s->u[i];
    hr_cpu_matmul(be, s->o, s->g, w->down[e], NULL, n);
    for (int i = 0; i < n; i++) {
        float wt = weights[(long)s->rows[i] * k + s->slots[i]], *yr = y + (long)s->rows[i] * H;
        for (long c = 0; c < H; c++)
            yr[c] += wt * s->o[i * H + c];
    }
}

void hr_cpu_moe_experts(hr_backend *be, float *y, const float *x, const int32_t *ids,
                        const float *weights, int T, int k, const hr_moe_weights *w) {
    long H = w->hidden, I = w->inter;
    memset(y, 0, sizeof(float) * (size_t)T * H);
    expert_scratch s;
    s.rows = malloc(sizeof(int) * (size_t)T * 2);
    s.xe = malloc(sizeof(float) * (size_t)T * (2 * H + 2 * I));
    if (!s.rows || !s.xe) { /* ops cannot fail: make the failure visible in the logits */
        free(s.rows);
        free(s.xe);
        for (long i = 0; i < (long)T * H; i++)
            y[i] = NAN;
        return;
    }
    s.slots = s.rows + T;
    s.g = s.xe + (long)T * H;
    s.u = s.g + (long)T * I;
    s.o = s.u + (long)T * I;
    for (int e = 0; e < w->n_experts; e++) {
        int n = 0; /* a token picks an expert at most once */
        for (int t = 0; t < T; t++)
            for (int j = 0; j < k; j++)
                if (ids[t * k + j] == e) {
                    s.rows[n] = t;
                    s.slots[n++] = j;
                }
        if (n) run_expert(be, y, x, weights, k, n, w, e, &s);
    }
    free(s.rows);
    free(s.xe);
}
