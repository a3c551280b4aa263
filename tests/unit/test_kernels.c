/* CPU kernels: every SIMD variant the machine supports against the plain C reference on
 * random inputs at several sizes, odd ones included; the sampler's distributions. */
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"
#include "engine/sampler.h"
#include "harness.h"
#include "tensor/dtype.h"

static unsigned rng = 12345;
static float frand(void) {
    rng = rng * 1103515245u + 12345u;
    return ((float)((rng >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

static const hr_cpu_kernels *variants[3];
static int n_variants;

static void pick_variants(void) {
    hr_cpu_set_level(HR_CPU_AVX512);
    hr_cpu_level hw = hr_cpu()->level;
    n_variants = 0;
    if (hw >= HR_CPU_AVX2) variants[n_variants++] = &hr_cpu_kernels_avx2;
    if (hw >= HR_CPU_AVX512) variants[n_variants++] = &hr_cpu_kernels_avx512;
}

static void check_mm(const hr_cpu_kernels *k, int T, int K, int N, int dtype) {
    float *x = malloc(sizeof(float) * (size_t)T * K);
    void *w = malloc((size_t)N * K * 4);
    float *y0 = calloc((size_t)T * N, sizeof(float)), *y1 = calloc((size_t)T * N, sizeof(float));
    for (int i = 0; i < T * K; i++)
        x[i] = frand();
    for (int i = 0; i < N * K; i++) {
        float v = frand();
        if (dtype == 0)
            ((float *)w)[i] = v;
        else if (dtype == 1)
            ((uint16_t *)w)[i] = hr_f32_to_bf16(v);
        else
            ((uint16_t *)w)[i] = hr_f32_to_f16(v);
    }
    hr_mm_fn ref = dtype == 0   ? hr_cpu_kernels_ref.mm_f32
                   : dtype == 1 ? hr_cpu_kernels_ref.mm_bf16
                                : hr_cpu_kernels_ref.mm_f16;
    hr_mm_fn fast = dtype == 0 ? k->mm_f32 : dtype == 1 ? k->mm_bf16 : k->mm_f16;
    ref(y0, N, x, K, w, K, T, 0, N);
    /* two halves, as two threads would split it */
    long mid = (N / 2) / 16 * 16;
    fast(y1, N, x, K, w, K, T, 0, mid);
    fast(y1, N, x, K, w, K, T, mid, N);
    float worst = 0;
    for (int i = 0; i < T * N; i++)
        worst = fmaxf(worst, fabsf(y0[i] - y1[i]) / (1.0f + fabsf(y0[i])));
    free(x);
    free(w);
    free(y0);
    free(y1);
    HR_CHECK(worst < 1e-4f, "%s dtype %d T=%d K=%d N=%d: rel diff %g", k->name, dtype, T, K, N,
             worst);
}

static void test_matmul_variants(void) {
    int Ts[] = {1, 2, 3, 5, 9}, Ks[] = {1, 7, 16, 33, 128, 130}, Ns[] = {1, 5, 16, 37, 64};
    for (int v = 0; v < n_variants; v++)
        for (int d = 0; d < 3; d++)
            for (int a = 0; a < 5; a++)
                for (int b = 0; b < 6; b++)
                    for (int c = 0; c < 5; c++) {
                        check_mm(variants[v], Ts[a], Ks[b], Ns[c], d);
                        if (hr_t_cur_failed) return;
                    }
}

static void test_vector_variants(void) {
    int sizes[] = {1, 3, 16, 31, 64, 100, 257};
    for (int v = 0; v < n_variants; v++)
        for (int s = 0; s < 7; s++) {
            int n = sizes[s];
            float a[257], b[257], y0[257], y1[257];
            for (int i = 0; i < n; i++) {
                a[i] = frand();
                b[i] = frand();
                y0[i] = y1[i] = frand();
            }
            float d0 = hr_cpu_kernels_ref.dot(a, b, n), d1 = variants[v]->dot(a, b, n);
            HR_CHECK(fabsf(d0 - d1) < 1e-4f * (1 + fabsf(d0)), "%s dot n=%d", variants[v]->name, n);
            hr_cpu_kernels_ref.axpy(y0, 0.5f, a, n);
            variants[v]->axpy(y1, 0.5f, a, n);
            hr_cpu_kernels_ref.scale(y0, -1.5f, n);
            variants[v]->scale(y1, -1.5f, n);
            for (int i = 0; i < n; i++)
                HR_CHECK(fabsf(y0[i] - y1[i]) < 1e-5f, "%s axpy/scale n=%d", variants[v]->name, n);
        }
}

/* round_bf16, where a level has it, bit for bit hr_f32_to_bf16 on random bit patterns (NaNs,
 * infinities, denormals, ties of the rounding among them) at lengths around the vector width. */
static void test_round_bf16_variants(void) {
    enum { N = 1000 };
    static float x[N];
    static uint16_t y[N + 1];
    for (int v = 0; v < n_variants; v++) {
        if (!variants[v]->round_bf16) continue;
        int bad = 0;
        for (int trial = 0; trial < 50; trial++) {
            int n = trial < 40 ? 1 + trial : N;
            for (int i = 0; i < n; i++) {
                rng = rng * 1103515245u + 12345u;
                uint32_t u = rng ^ (rng << 13);
                if (i % 5 == 1) u = (u & 0x807f0000u) | 0x8000u; /* a tie, denormal or small */
                if (i % 7 == 2) u |= 0x7f800000u;                /* inf or NaN */
                memcpy(&x[i], &u, 4);
            }
            y[n] = 0xbeef;
            variants[v]->round_bf16(y, x, n);
            for (int i = 0; i < n; i++)
                bad += y[i] != hr_f32_to_bf16(x[i]);
            bad += y[n] != 0xbeef; /* nothing written past n */
        }
        HR_CHECK(bad == 0, "%s round_bf16: %d elements differ", variants[v]->name, bad);
    }
}

/* pv at one size: bit for bit one axpy per weight that is not 0 at the same level, and
 * close to the reference level. o starts with some -0, which an FMA by a 0 weight would
 * turn into +0. zeros 0: every weight is positive; 1: rows i % 8 >= 4 have some 0 (+0 and
 * -0) weights; 2: every row has, and some columns are all 0 with a NULL V row. */
static void check_pv(const hr_cpu_kernels *k, int n, int nj, int hd, int zeros) {
    enum { LD = 67 };
    float *s = malloc(sizeof(float) * (size_t)n * LD);
    float *vm = malloc(sizeof(float) * (size_t)nj * hd);
    float *o[3][20], *buf = malloc(sizeof(float) * 3 * 20 * (size_t)hd);
    const float *v[64];
    for (int jj = 0; jj < nj; jj++) {
        int gone = zeros == 2 && nj > 2 && jj % 5 == 1; /* a row no query sees */
        v[jj] = gone ? NULL : vm + (long)jj * hd;
        for (int d = 0; d < hd; d++)
            vm[(long)jj * hd + d] = frand();
        for (int i = 0; i < n; i++) {
            float r = frand();
            int z = zeros == 2 || (zeros == 1 && i % 8 >= 4);
            float w = z && r > 0.7f ? 0 : z && r < -0.9f ? -0.0f : 0.01f + fabsf(r);
            s[i * LD + jj] = gone ? 0 : w;
        }
    }
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < n; i++)
            o[l][i] = buf + (long)(l * 20 + i) * hd;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < hd; d++)
            o[0][i][d] = o[1][i][d] = o[2][i][d] = d % 3 ? frand() : -0.0f;
    k->pv(o[0], s, LD, n, v, nj, hd);
    hr_cpu_kernels_ref.pv(o[2], s, LD, n, v, nj, hd);
    for (int jj = 0; jj < nj; jj++)
        for (int i = 0; i < n; i++)
            if (s[i * LD + jj] != 0) k->axpy(o[1][i], s[i * LD + jj], v[jj], hd);
    int same = 1;
    float worst = 0;
    for (int i = 0; i < n; i++) {
        same &= memcmp(o[0][i], o[1][i], sizeof(float) * (size_t)hd) == 0;
        for (int d = 0; d < hd; d++)
            worst = fmaxf(worst, fabsf(o[0][i][d] - o[2][i][d]));
    }
    free(s);
    free(vm);
    free(buf);
    HR_CHECK(same, "%s pv n=%d nj=%d hd=%d zeros %d: not its axpy's bits", k->name, n, nj, hd,
             zeros);
    HR_CHECK(worst < 1e-4f, "%s pv n=%d nj=%d hd=%d zeros %d: diff %g from ref", k->name, n, nj, hd,
             zeros, worst);
}

static void test_pv_variants(void) {
    int hds[] = {1, 7, 16, 33, 128}, njs[] = {1, 5, 64};
    const hr_cpu_kernels *levels[3] = {&hr_cpu_kernels_ref, variants[0], variants[1]};
    for (int l = 0; l < 1 + n_variants; l++)
        for (int h = 0; h < 5; h++)
            for (int j = 0; j < 3; j++)
                for (int n = 1; n <= 20; n++)
                    for (int z = 0; z < 3; z++) {
                        check_pv(levels[l], n, njs[j], hds[h], z);
                        if (hr_t_cur_failed) return;
                    }
}

/* qk at one size and KV dtype (every head_dim hr_cpu_qk_fits takes): each score bit for
 * bit the level's dot of q and the row as its kv_load widens it, 0 for a NULL row (rows
 * jj % 4 == 2 below jj < nj / 2), nothing written past nj or past nq query rows. */
static void check_qk(const hr_cpu_kernels *k, hr_dtype dt, int nq, int nj, int hd) {
    enum { LD = 70, NQ = 6 };
    size_t rb = hr_kv_row_bytes(dt, hd);
    char *store = malloc(rb * (size_t)nj);
    float *x = malloc(sizeof(float) * (size_t)hd), *wide = malloc(sizeof(float) * (size_t)hd);
    float *qm = malloc(sizeof(float) * NQ * (size_t)hd), s[NQ + 1][LD];
    const float *q[NQ];
    const void *rows[64];
    for (int h = 0; h < nq; h++) {
        q[h] = qm + (long)h * hd;
        for (int d = 0; d < hd; d++)
            qm[(long)h * hd + d] = frand() * 3;
    }
    for (int jj = 0; jj < nj; jj++) {
        for (int d = 0; d < hd; d++)
            x[d] = frand() * (1 + jj % 3);
        hr_kv_row_store(store + rb * (size_t)jj, x, dt, hd);
        rows[jj] = jj % 4 == 2 && jj < nj / 2 ? NULL : store + rb * (size_t)jj;
    }
    for (int h = 0; h <= NQ; h++)
        for (int jj = 0; jj < LD; jj++)
            s[h][jj] = 7.5f;
    k->qk(&s[0][0], LD, q, nq, rows, dt, nj, hd);
    int bad = 0;
    for (int jj = 0; jj < nj; jj++) {
        if (rows[jj]) k->kv_load(wide, rows[jj], dt, hd);
        for (int h = 0; h < nq; h++) {
            float want = rows[jj] ? k->dot(q[h], wide, hd) : 0;
            bad += memcmp(&s[h][jj], &want, sizeof want) != 0;
        }
    }
    for (int h = 0; h <= NQ; h++)
        for (int jj = h < nq ? nj : 0; jj < LD; jj++)
            bad += s[h][jj] != 7.5f;
    free(store), free(x), free(wide), free(qm);
    HR_CHECK(!bad, "%s qk %s nq=%d nj=%d hd=%d: %d scores not its dot's bits", k->name,
             hr_dtype_name(dt), nq, nj, hd, bad);
}

static void test_qk_variants(void) {
    hr_dtype dts[] = {HR_F32, HR_BF16, HR_F16, HR_Q8_0, HR_Q4_0};
    int hds[] = {8, 32, 64, 128, 136, HR_QK_MAX_HD}, njs[] = {1, 3, 4, 7, 64}, tested = 0;
    for (int v = 0; v < n_variants; v++) {
        if (!variants[v]->qk) continue;
        tested++;
        for (int d = 0; d < 5; d++)
            for (int h = 0; h < 6; h++)
                for (int j = 0; j < 5; j++)
                    for (int nq = 1; nq <= 5; nq++) {
                        if ((dts[d] == HR_Q8_0 || dts[d] == HR_Q4_0) && hds[h] % 32) continue;
                        check_qk(variants[v], dts[d], nq, njs[j], hds[h]);
                        if (hr_t_cur_failed) return;
                    }
    }
    if (!tested) printf("  no level here has a qk kernel (attention uses kv_load and dot)\n");
}

/* The softmax pieces of attention at every level: max bit for bit the reference's; exp_sum
 * within 2 ulp of expf over the range scores take (down to -100 below the maximum, where
 * expf is denormal or 0: there within 1e-37), -inf to exactly 0, the sum close. */
static void test_softmax_variants(void) {
    int sizes[] = {1, 5, 16, 31, 64, 100};
    const hr_cpu_kernels *levels[3] = {&hr_cpu_kernels_ref, variants[0], variants[1]};
    for (int l = 0; l < 1 + n_variants; l++)
        for (int z = 0; z < 6; z++) {
            int n = sizes[z];
            float s[100], e[100], m = -INFINITY;
            for (int i = 0; i < n; i++) {
                s[i] = i % 7 == 3 ? -INFINITY : frand() * (i % 3 ? 10.0f : 100.0f);
                m = s[i] > m ? s[i] : m;
            }
            HR_CHECK(levels[l]->max(s, n) == m, "%s max n=%d", levels[l]->name, n);
            memcpy(e, s, sizeof s);
            float sum = levels[l]->exp_sum(e, n, m), want = 0;
            for (int i = 0; i < n; i++) {
                float x = s[i] == -INFINITY ? 0 : expf(s[i] - m);
                want += x;
                HR_CHECK(s[i] == -INFINITY ? e[i] == 0 && !signbit(e[i])
                                           : fabsf(e[i] - x) <= 2.4e-7f * x + 1e-37f,
                         "%s exp_sum n=%d [%d]: exp(%g) = %g, expf %g", levels[l]->name, n, i,
                         (double)(s[i] - m), (double)e[i], (double)x);
            }
            HR_CHECK(fabsf(sum - want) <= 1e-6f * want, "%s exp_sum n=%d: sum %g, want %g",
                     levels[l]->name, n, (double)sum, (double)want);
        }
}

/* temperature, top_p, top_k, min_p, seed; the other filters off */
#define SP(t_, p_, k_, m_, s_)                                                                     \
    ((hr_sampler_params){                                                                          \
        .temperature = (t_), .top_p = (p_), .top_k = (k_), .min_p = (m_), .seed = (s_)})

static void test_sampler_greedy_and_filters(void) {
    float logits[4] = {1.0f, 3.0f, 2.0f, 0.5f};
    hr_sampler s;
    HR_CHECK_OK(hr_sampler_init(&s, &SP(0, 1, 0, 0, 1), 4));
    HR_CHECK(hr_sampler_sample(&s, logits) == 1, "greedy");
    hr_sampler_free(&s);
    HR_CHECK_OK(hr_sampler_init(&s, &SP(1, 1, 1, 0, 7), 4));
    for (int i = 0; i < 50; i++)
        HR_CHECK(hr_sampler_sample(&s, logits) == 1, "top_k 1");
    hr_sampler_free(&s);
    /* probabilities: softmax(1,3,2,0.5) = .0896,.6624,.2437,.0543; top_p .8 keeps {1,2} */
    HR_CHECK_OK(hr_sampler_init(&s, &SP(1, 0.8f, 0, 0, 3), 4));
    int counts[4] = {0};
    for (int i = 0; i < 20000; i++)
        counts[hr_sampler_sample(&s, logits)]++;
    hr_sampler_free(&s);
    HR_CHECK(counts[0] == 0 && counts[3] == 0, "top_p kept excluded tokens");
    double p1 = counts[1] / 20000.0, want = 0.6624 / (0.6624 + 0.2437);
    HR_CHECK(fabs(p1 - want) < 0.015, "top_p frequency %.3f, want %.3f", p1, want);
}

/* Frequencies of each of 4 tokens over n draws with params p. */
static void draw(const hr_sampler_params *p, const float *logits, int n, double *freq) {
    hr_sampler s;
    int counts[4] = {0};
    HR_CHECK_OK(hr_sampler_init(&s, p, 4));
    for (int i = 0; i < n; i++)
        counts[hr_sampler_sample(&s, logits)]++;
    hr_sampler_free(&s);
    for (int i = 0; i < 4; i++)
        freq[i] = counts[i] / (double)n;
}

/* softmax(1, 3, 2, 0.5) = .0896 .6624 .2437 .0543, entropy H = .9913 nats; surprisals
 * -ln p = 2.412 .412 1.412 2.913, so |-ln p - H| orders the tokens 2 (.42), 1 (.58), 0, 3.
 * typical_p .2 keeps {2} (not the argmax); .5 keeps {2, 1}. */
static void test_sampler_typical(void) {
    float logits[4] = {1.0f, 3.0f, 2.0f, 0.5f};
    double f[4], p1 = exp(3.0), p2 = exp(2.0);
    hr_sampler_params p = SP(1, 1, 0, 0, 5);
    p.typical_p = 0.2f;
    draw(&p, logits, 2000, f);
    HR_CHECK(f[2] == 1, "typical_p .2: token 2 freq %.3f, want 1", f[2]);
    p.typical_p = 0.5f;
    draw(&p, logits, 20000, f);
    HR_CHECK(f[0] == 0 && f[3] == 0, "typical_p .5 kept tokens 0/3 (%.3f %.3f)", f[0], f[3]);
    HR_CHECK(fabs(f[1] - p1 / (p1 + p2)) < 0.015, "typical_p .5: token 1 freq %.3f, want %.3f",
             f[1], p1 / (p1 + p2));
    p.typical_p = 1.5f;
    hr_err *e = hr_sampler_params_check(&p);
    HR_CHECK(e != NULL, "typical_p 1.5 accepted");
    hr_err_free(e);
}

/* Same distribution. XTC at threshold .2 sees two top choices (1: .66, 2: .24) and drops
 * all but the least likely: tokens {0, 2, 3} renormalized; at .3 only one token reaches it
 * and nothing changes; with probability .5 token 1 survives half the time. */
static void test_sampler_xtc(void) {
    float logits[4] = {1.0f, 3.0f, 2.0f, 0.5f};
    double f[4], e0 = exp(1.0), e1 = exp(3.0), e2 = exp(2.0), e3 = exp(0.5), z = e0 + e1 + e2 + e3;
    hr_sampler_params p = SP(1, 1, 0, 0, 9);
    p.xtc_probability = 1;
    p.xtc_threshold = 0.2f;
    draw(&p, logits, 20000, f);
    HR_CHECK(f[1] == 0, "xtc removed the top token only %.3f of the time", 1 - f[1]);
    HR_CHECK(fabs(f[2] - e2 / (e0 + e2 + e3)) < 0.015, "xtc: token 2 freq %.3f, want %.3f", f[2],
             e2 / (e0 + e2 + e3));
    p.xtc_threshold = 0.3f;
    draw(&p, logits, 20000, f);
    HR_CHECK(fabs(f[1] - e1 / z) < 0.015, "xtc with one top choice changed it: %.3f", f[1]);
    p.xtc_threshold = 0.2f;
    p.xtc_probability = 0.5f;
    draw(&p, logits, 20000, f);
    HR_CHECK(fabs(f[1] - 0.5 * e1 / z) < 0.015, "xtc probability .5: token 1 freq %.3f, want %.3f",
             f[1], 0.5 * e1 / z);
}

static void test_sampler_distribution_and_seed(void) {
    float logits[3] = {0.0f, 1.0f, 2.0f};
    hr_sampler s, s2;
    HR_CHECK_OK(hr_sampler_init(&s, &SP(2.0f, 1, 0, 0, 42), 3));
    HR_CHECK_OK(hr_sampler_init(&s2, &SP(2.0f, 1, 0, 0, 42), 3));
    int counts[3] = {0}, same = 1;
    for (int i = 0; i < 30000; i++) {
        int a = hr_sampler_sample(&s, logits);
        same &= a == hr_sampler_sample(&s2, logits);
        counts[a]++;
    }
    hr_sampler_free(&s);
    hr_sampler_free(&s2);
    HR_CHECK(same, "same seed, different tokens");
    double z = 1 + exp(0.5) + exp(1.0);
    double want[3] = {1 / z, exp(0.5) / z, exp(1.0) / z};
    for (int i = 0; i < 3; i++)
        HR_CHECK(fabs(counts[i] / 30000.0 - want[i]) < 0.012, "T=2 token %d freq %.3f want %.3f", i,
                 counts[i] / 30000.0, want[i]);
    hr_err *e = hr_sampler_params_check(&SP(-1, 1, 0, 0, 0));
    HR_CHECK(e != NULL, "negative temperature accepted");
    hr_err_free(e);
    e = hr_sampler_params_check(&SP(1, 0, 0, 0, 0));
    HR_CHECK(e != NULL, "top_p 0 accepted");
    hr_err_free(e);
}

/* The levels this CPU lacks are said, not passed: "skipped LEVEL: why". */
static void say_skipped(void) {
    if (n_variants < 1) printf("skipped avx2 kernels: this CPU lacks AVX2/FMA\n");
    if (n_variants < 2) printf("skipped avx512 kernels: this CPU lacks AVX-512 (F, BW, VL, DQ)\n");
}

int main(void) {
    pick_variants();
    printf("  SIMD variants on this CPU: %d\n", n_variants);
    say_skipped();
    if (n_variants) {
        HR_RUN(test_matmul_variants);
        HR_RUN(test_vector_variants);
        HR_RUN(test_round_bf16_variants);
    }
    HR_RUN(test_pv_variants);
    HR_RUN(test_qk_variants);
    HR_RUN(test_softmax_variants);
    HR_RUN(test_sampler_greedy_and_filters);
    HR_RUN(test_sampler_distribution_and_seed);
    HR_RUN(test_sampler_typical);
    HR_RUN(test_sampler_xtc);
    return hr_test_summary();
}
