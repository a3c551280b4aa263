/* CPU MoE: routing (softmax, top-k, renormalise, optional per-expert scale) and the expert
 * FFNs grouped by expert: each routed expert gathers its tokens, runs two matmuls over
 * them at once, and adds its weighted output back, experts in ascending order (the order
 * transformers accumulates in). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"

void hr_cpu_moe_route(hr_backend *be, int32_t *idx, float *w, const float *logits, int T, int E,
                      int k, const hr_tensor *expert_scale) {
    for (int t = 0; t < T; t++) {
        const float *l = logits + (long)t * E;
        float mx = -INFINITY, sum = 0;
        for (int e = 0; e < E; e++)
            mx = fmaxf(mx, l[e]);
        for (int e = 0; e < E; e++)
            sum += expf(l[e] - mx);
        int32_t *it = idx + (long)t * k;
        float *wt = w + (long)t * k, tot = 0;
        for (int j = 0; j < k; j++) { /* selection: k is small; ties go to the lower index */
            int best = -1;
            for (int e = 0; e < E; e++) {
                int used = 0;
                for (int q = 0; q < j; q++)
                    used |= it[q] == e;
                if (!used && (best < 0 || l[e] > l[best])) best = e;
            }
            it[j] = best;
            wt[j] = expf(l[best] - mx) / sum;
            tot += wt[j];
        }
        for (int j = 0; j < k; j++) {
            wt[j] /= tot;
            if (expert_scale) {
                float s;
                hr_cpu_to_f32(&s, expert_scale, it[j], 1);
                wt[j] *= s;
            }
        }
    }
}

/* Runs expert e over its n tokens (rows[], slots[] index into x and w). */
static void run_expert(hr_backend *be, float *y, const float *x, const float *w, int k, int n,
                       const int *rows, const int *slots, const hr_tensor *gu, const hr_tensor *dn,
                       hr_act_fn act, float *xe, float *h, float *o) {
    long H = dn->shape[0], I = dn->shape[1];
    for (int i = 0; i < n; i++)
        memcpy(xe + i * H, x + (long)rows[i] * H, sizeof(float) * (size_t)H);
    hr_cpu_matmul(be, h, xe, gu, NULL, n);
    for (int i = 0; i < n; i++) { /* h row: [gate (I) | up (I)] -> act(gate) * up, packed (I) */
        float *r = h + i * 2 * I, *d = h + i * I;
        for (long c = 0; c < I; c++)
            d[c] = hr_cpu_act(r[c], act) * r[I + c];
    }
    hr_cpu_matmul(be, o, h, dn, NULL, n);
    for (int i = 0; i < n; i++) {
        float wt = w[(long)rows[i] * k + slots[i]], *yr = y + (long)rows[i] * H;
        for (long c = 0; c < H; c++)
            yr[c] += wt * o[i * H + c];
    }
}

void hr_cpu_moe_experts(hr_backend *be, float *y, const float *x, const int32_t *idx,
                        const float *w, int T, int k, const hr_tensor *gate_up,
                        const hr_tensor *down, hr_act_fn act) {
    long H = down[0].shape[0], I = down[0].shape[1];
    memset(y, 0, sizeof(float) * (size_t)T * H);
    int n_pairs = T * k, E = 0;
    for (int i = 0; i < n_pairs; i++)
        E = idx[i] + 1 > E ? idx[i] + 1 : E;
    int *rows = malloc(sizeof(int) * (size_t)n_pairs * 2);
    float *buf = malloc(sizeof(float) * (size_t)T * (H + 2 * I + H));
    if (!rows || !buf) { /* ops cannot fail: make the failure visible in the logits */
        free(rows);
        free(buf);
        for (long i = 0; i < (long)T * H; i++)
            y[i] = NAN;
        return;
    }
    int *slots = rows + n_pairs;
    for (int e = 0; e < E; e++) {
        int n = 0;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < k; j++)
                if (idx[t * k + j] == e) {
                    rows[n] = t;
                    slots[n++] = j;
                }
        if (n)
            run_expert(be, y, x, w, k, n, rows, slots, &gate_up[e], &down[e], act, buf,
                       buf + (long)T * H, buf + (long)T * (H + 2 * I));
    }
    free(rows);
    free(buf);
}
