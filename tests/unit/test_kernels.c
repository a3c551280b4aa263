/* CPU kernels: every SIMD variant the machine supports against the plain C reference on
 * random inputs at several sizes, odd ones included; the sampler's distributions. */
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
    for (int i = 0; i < T * K; i++) x[i] = frand();
    for (int i = 0; i < N * K; i++) {
        float v = frand();
        if (dtype == 0) ((float *)w)[i] = v;
        else if (dtype == 1) ((uint16_t *)w)[i] = hr_f32_to_bf16(v);
        else ((uint16_t *)w)[i] = hr_f32_to_f16(v);
    }
    hr_mm_fn ref = dtype == 0 ? hr_cpu_kernels_ref.mm_f32 : dtype == 1 ? hr_cpu_kernels_ref.mm_bf16 : hr_cpu_kernels_ref.mm_f16;
    hr_mm_fn fast = dtype == 0 ? k->mm_f32 : dtype == 1 ? k->mm_bf16 : k->mm_f16;
    ref(y0, N, x, K, w, K, T, 0, N);
    /* two halves, as two threads would split it */
    long mid = (N / 2) / 16 * 16;
    fast(y1, N, x, K, w, K, T, 0, mid);
    fast(y1, N, x, K, w, K, T, mid, N);
    float worst = 0;
    for (int i = 0; i < T * N; i++) worst = fmaxf(worst, fabsf(y0[i] - y1[i]) / (1.0f + fabsf(y0[i])));
    free(x);
    free(w);
    free(y0);
    free(y1);
    HR_CHECK(worst < 1e-4f, "%s dtype %d T=%d K=%d N=%d: rel diff %g", k->name, dtype, T, K, N, worst);
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
            for (int i = 0; i < n; i++) HR_CHECK(fabsf(y0[i] - y1[i]) < 1e-5f, "%s axpy/scale n=%d", variants[v]->name, n);
        }
}

static void test_sampler_greedy_and_filters(void) {
    float logits[4] = {1.0f, 3.0f, 2.0f, 0.5f};
    hr_sampler s;
    HR_CHECK_OK(hr_sampler_init(&s, &(hr_sampler_params){0, 1, 0, 0, 1}, 4));
    HR_CHECK(hr_sampler_sample(&s, logits) == 1, "greedy");
    hr_sampler_free(&s);
    HR_CHECK_OK(hr_sampler_init(&s, &(hr_sampler_params){1, 1, 1, 0, 7}, 4));
    for (int i = 0; i < 50; i++) HR_CHECK(hr_sampler_sample(&s, logits) == 1, "top_k 1");
    hr_sampler_free(&s);
    /* probabilities: softmax(1,3,2,0.5) = .0896,.6624,.2437,.0543; top_p .8 keeps {1,2} */
    HR_CHECK_OK(hr_sampler_init(&s, &(hr_sampler_params){1, 0.8f, 0, 0, 3}, 4));
    int counts[4] = {0};
    for (int i = 0; i < 20000; i++) counts[hr_sampler_sample(&s, logits)]++;
    hr_sampler_free(&s);
    HR_CHECK(counts[0] == 0 && counts[3] == 0, "top_p kept excluded tokens");
    double p1 = counts[1] / 20000.0, want = 0.6624 / (0.6624 + 0.2437);
    HR_CHECK(fabs(p1 - want) < 0.015, "top_p frequency %.3f, want %.3f", p1, want);
}

static void test_sampler_distribution_and_seed(void) {
    float logits[3] = {0.0f, 1.0f, 2.0f};
    hr_sampler s, s2;
    HR_CHECK_OK(hr_sampler_init(&s, &(hr_sampler_params){2.0f, 1, 0, 0, 42}, 3));
    HR_CHECK_OK(hr_sampler_init(&s2, &(hr_sampler_params){2.0f, 1, 0, 0, 42}, 3));
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
        HR_CHECK(fabs(counts[i] / 30000.0 - want[i]) < 0.012, "T=2 token %d freq %.3f want %.3f", i, counts[i] / 30000.0, want[i]);
    hr_err *e = hr_sampler_params_check(&(hr_sampler_params){-1, 1, 0, 0, 0});
    HR_CHECK(e != NULL, "negative temperature accepted");
    hr_err_free(e);
    e = hr_sampler_params_check(&(hr_sampler_params){1, 0, 0, 0, 0});
    HR_CHECK(e != NULL, "top_p 0 accepted");
    hr_err_free(e);
}

int main(void) {
    pick_variants();
    printf("  SIMD variants on this CPU: %d\n", n_variants);
    HR_RUN(test_matmul_variants);
    HR_RUN(test_vector_variants);
    HR_RUN(test_sampler_greedy_and_filters);
    HR_RUN(test_sampler_distribution_and_seed);
    return hr_test_summary();
}
