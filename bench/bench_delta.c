/* The gated delta rule of one DeltaNet layer at Qwen3.5-4B shape (32 value heads, k_dim =
 * v_dim = 128) over a prompt of T tokens, one thread: the recurrent form against the chunked
 * form (64-token chunks). Usage: bench_delta [T ...] (default 64 512 2048). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/delta_rule.h"
#include "base/clock.h"
#include "base/cpu.h"

enum { HEADS = 32, DK = 128, DV = 128 };

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((float)((*s >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

/* Seconds for all heads of one layer; best of 3. */
static double run(int T, int chunked, float *q, float *k, float *v, float *g, float *beta,
                  float *out, float *S, float *scr) {
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        memset(S, 0, sizeof(float) * HEADS * DK * DV);
        uint64_t t0 = hr_now_ns();
        for (int hd = 0; hd < HEADS; hd++) {
            size_t o = (size_t)hd * T;
            hr_delta_head h = {.T = T,
                               .dk = DK,
                               .dv = DV,
                               .q = q + o * DK,
                               .k = k + o * DK,
                               .v = v + hd * DV,
                               .v_ld = HEADS * DV,
                               .g = g + o,
                               .beta = beta + o,
                               .out = out + hd * DV,
                               .out_ld = HEADS * DV};
            float *Sh = S + (size_t)hd * DK * DV;
            if (chunked)
                hr_delta_chunked(&h, Sh, scr);
            else
                hr_delta_recurrent(&h, Sh, scr);
        }
        double s = (double)(hr_now_ns() - t0) * 1e-9;
        if (s < best) best = s;
    }
    return best;
}

static void bench(int T) {
    size_t nqk = (size_t)HEADS * T * DK, nv = (size_t)T * HEADS * DV;
    float *q = malloc(sizeof(float) * nqk), *k = malloc(sizeof(float) * nqk);
    float *v = malloc(sizeof(float) * nv), *out = malloc(sizeof(float) * nv);
    float *g = malloc(sizeof(float) * HEADS * T), *beta = malloc(sizeof(float) * HEADS * T);
    float *S = malloc(sizeof(float) * HEADS * DK * DV);
    float *scr = malloc(sizeof(float) * hr_delta_chunked_scratch(DK, DV));
    unsigned s = 1;
    for (size_t i = 0; i < nqk; i++) {
        q[i] = frand(&s) / sqrtf(DK) / sqrtf(DK / 3.0f);
        k[i] = frand(&s) / sqrtf(DK / 3.0f);
    }
    for (size_t i = 0; i < nv; i++)
        v[i] = frand(&s);
    for (int i = 0; i < HEADS * T; i++) {
        g[i] = -0.1f * (1 + frand(&s));
        beta[i] = 0.5f + 0.4f * frand(&s);
    }
    double rec = run(T, 0, q, k, v, g, beta, out, S, scr);
    double chk = run(T, 1, q, k, v, g, beta, out, S, scr);
    printf("T %5d: recurrent %8.2f ms  chunked %8.2f ms  (chunked/recurrent %.2f)  "
           "recurrent %.2f GFLOP/s\n",
           T, rec * 1e3, chk * 1e3, chk / rec, 4.0 * HEADS * T * DK * DV / rec * 1e-9);
    free(q);
    free(k);
    free(v);
    free(out);
    free(g);
    free(beta);
    free(S);
    free(scr);
}

int main(int argc, char **argv) {
    printf("gated delta rule, one layer at Qwen3.5-4B shape (%d heads, %dx%d state), 1 thread, "
           "%s kernels, best of 3\n",
           HEADS, DK, DV, hr_cpu_level_name(hr_cpu()->level));
    if (argc > 1)
        for (int i = 1; i < argc; i++)
            bench(atoi(argv[i]));
    else
        for (int T = 64; T <= 2048; T *= T == 64 ? 8 : 4)
            bench(T);
    return 0;
}
