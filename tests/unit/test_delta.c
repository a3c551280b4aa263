/* The chunked gated delta rule against the recurrent one (its reference) on random inputs:
 * lengths below, at and across chunk boundaries, odd head sizes, a non-zero starting state,
 * every kernel level; outputs and final states must agree to float rounding. */
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/delta_rule.h"
#include "base/cpu.h"
#include "harness.h"

static unsigned rng = 4242;
static float frand(void) {
    rng = rng * 1103515245u + 12345u;
    return ((float)((rng >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

static void unit_rows(float *x, int T, int n, float scale) {
    for (int t = 0; t < T; t++) {
        float ss = 1e-6f;
        for (int i = 0; i < n; i++)
            ss += x[t * n + i] * x[t * n + i];
        for (int i = 0; i < n; i++)
            x[t * n + i] *= scale / sqrtf(ss);
    }
}

/* Largest |a - b| relative to max(1, max |b|). */
static float rel_diff(const float *a, const float *b, size_t n) {
    float d = 0, m = 1;
    for (size_t i = 0; i < n; i++) {
        d = fmaxf(d, fabsf(a[i] - b[i]));
        m = fmaxf(m, fabsf(b[i]));
    }
    return d / m;
}

static void check(int T, int dk, int dv) {
    size_t nq = (size_t)T * dk, nv = (size_t)T * (dv + 3), ns = (size_t)dk * dv;
    float *q = malloc(sizeof(float) * nq), *k = malloc(sizeof(float) * nq);
    float *v = malloc(sizeof(float) * nv), *g = malloc(sizeof(float) * T);
    float *beta = malloc(sizeof(float) * T), *o1 = calloc(nv, sizeof(float));
    float *o2 = calloc(nv, sizeof(float)), *S1 = malloc(sizeof(float) * ns);
    float *S2 = malloc(sizeof(float) * ns), *d = malloc(sizeof(float) * dv);
    float *scr = malloc(sizeof(float) * hr_delta_chunked_scratch(dk, dv));
    for (size_t i = 0; i < nq; i++) {
        q[i] = frand();
        k[i] = frand();
    }
    unit_rows(q, T, dk, 1.0f / sqrtf((float)dk));
    unit_rows(k, T, dk, 1.0f);
    for (size_t i = 0; i < nv; i++)
        v[i] = 2 * frand();
    for (int t = 0; t < T; t++) {
        g[t] = -0.3f * (1 + frand()); /* decays between e^-0.6 and 1 */
        beta[t] = 0.5f + 0.5f * frand();
    }
    for (size_t i = 0; i < ns; i++)
        S1[i] = S2[i] = 0.5f * frand();
    hr_delta_head h = {T, dk, dv, q, k, v, dv + 3, g, beta, o1, dv + 3};
    hr_delta_recurrent(&h, S1, d);
    h.out = o2;
    hr_delta_chunked(&h, S2, scr);
    float eo = rel_diff(o2, o1, nv), es = rel_diff(S2, S1, ns);
    HR_CHECK(eo < 2e-5f && es < 2e-5f, "T %d dk %d dv %d: outputs differ by %g, states by %g", T,
             dk, dv, eo, es);
    free(q);
    free(k);
    free(v);
    free(g);
    free(beta);
    free(o1);
    free(o2);
    free(S1);
    free(S2);
    free(d);
    free(scr);
}

static void test_chunked_matches_recurrent(void) {
    hr_cpu_level levels[] = {HR_CPU_GENERIC, HR_CPU_AVX2, HR_CPU_AVX512};
    int Ts[] = {1, 2, 17, 63, 64, 65, 128, 131, 200};
    int shapes[][2] = {{16, 16}, {33, 7}, {8, 40}, {128, 128}};
    for (int l = 0; l < 3; l++) {
        hr_cpu_set_level(levels[l]);
        for (int s = 0; s < 4; s++)
            for (int t = 0; t < 9 && !hr_t_cur_failed; t++)
                if (s < 3 || Ts[t] == 131) check(Ts[t], shapes[s][0], shapes[s][1]);
    }
    hr_cpu_set_level(HR_CPU_AVX512);
}

int main(void) {
    HR_RUN(test_chunked_matches_recurrent);
    return hr_test_summary();
}
