/* The pooled matmul gives the same bytes on 1, 2, 3 and 7 threads (hr_pool_for hands its
 * chunks to whichever thread is free, and the chunk size follows the thread count): f32 (with a
 * bias), bf16 (exact and --compute bf16), f16, Q8_0, Q4_K (plain and repacked) and a
 * head-shaped Q6_K at T = 1 and 5. Attention's thread counts: test_attention. */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "harness.h"
#include "tensor/quant.h"

static const int threads[] = {1, 2, 3, 7};
enum { N_THREADS = 4, MAX_T = 5 };

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

typedef struct {
    hr_dtype dtype;
    long N, K;
    int bias;
} mm_shape;

static const mm_shape shapes[] = {
    {HR_F32, 300, 256, 1},     {HR_BF16, 517, 384, 0}, {HR_F16, 200, 128, 0},
    {HR_Q8_0, 1000, 512, 0},   {HR_Q4_K, 300, 512, 0}, /* under the repack threshold */
    {HR_Q4_K, 2053, 1024, 0},                          /* repacked, a 5-row tail */
    {HR_Q6_K, 15193, 1024, 0},                         /* the head's K, ~50 chunks of 256 KiB */
};
enum { N_SHAPES = sizeof shapes / sizeof *shapes };

/* The weight of shape s in its dtype (seeded by the shape: the same on every backend). */
static void *weight(const mm_shape *s, unsigned seed) {
    long n = s->N * s->K;
    float *f = malloc(sizeof(float) * (size_t)n);
    void *w = malloc(hr_dtype_bytes(s->dtype, n));
    if (!f || !w) return free(f), free(w), NULL;
    for (long i = 0; i < n; i++)
        f[i] = frand(&seed) * 0.1f;
    if (s->dtype == HR_F32)
        memcpy(w, f, sizeof(float) * (size_t)n);
    else if (s->dtype == HR_BF16 || s->dtype == HR_F16)
        for (long i = 0; i < n; i++)
            ((uint16_t *)w)[i] = s->dtype == HR_BF16 ? hr_f32_to_bf16(f[i]) : hr_f32_to_f16(f[i]);
    else
        hr_quant_row(s->dtype, f, w, n);
    free(f);
    return w;
}

/* y[T, N] = x wq^T + b of shape s on a backend of nt threads; 0 when something could not be
 * had. Uploads a copy (upload may drop the source's pages). */
static int product(const mm_shape *s, const void *wq, int nt, int bf16, const float *x,
                   const float *b, int T, float *y) {
    hr_backend *be = NULL;
    hr_err *e =
        hr_backend_cpu_create(&(hr_cpu_options){.n_threads = nt, .compute_bf16 = bf16}, &be);
    if (e) return hr_err_free(e), 0;
    size_t bytes = hr_dtype_bytes(s->dtype, s->N * s->K);
    void *w = malloc(bytes);
    if (w) memcpy(w, wq, bytes);
    float *bias = s->bias ? malloc(sizeof(float) * (size_t)s->N) : NULL;
    hr_tensor hw = {.data = w, .dtype = s->dtype, .ndim = 2, .shape = {s->N, s->K}}, dw = {0};
    hr_tensor hb = {.data = bias, .dtype = HR_F32, .ndim = 1, .shape = {s->N}}, db = {0};
    int ok = w && (!s->bias || bias);
    if (bias) memcpy(bias, b, sizeof(float) * (size_t)s->N);
    if (ok) e = be->vt->upload(be, &hw, &dw);
    if (ok && !e && bias) e = be->vt->upload(be, &hb, &db);
    if (e) hr_err_free(e), ok = 0;
    if (ok) be->vt->matmul(be, y, x, &dw, bias ? &db : NULL, T);
    if (dw.data) be->vt->release(be, &dw);
    if (db.data) be->vt->release(be, &db);
    free(w), free(bias);
    hr_backend_destroy(be);
    return ok;
}

static void check_matmul(const mm_shape *s, int bf16) {
    unsigned seed = 5;
    float *x = malloc(sizeof(float) * MAX_T * (size_t)s->K), *b = malloc(sizeof(float) * s->N);
    float *want = malloc(sizeof(float) * MAX_T * (size_t)s->N);
    float *got = malloc(sizeof(float) * MAX_T * (size_t)s->N);
    void *wq = weight(s, (unsigned)(s->N * 7 + s->K));
    HR_CHECK(x && b && want && got && wq, "out of memory");
    for (long i = 0; got && i < MAX_T * s->K; i++)
        x[i] = frand(&seed);
    for (long i = 0; got && i < s->N; i++)
        b[i] = frand(&seed);
    for (int T = 1; !hr_t_cur_failed && T <= MAX_T; T += MAX_T - 1) {
        HR_CHECK(product(s, wq, threads[0], bf16, x, b, T, want), "%s: no product",
                 hr_dtype_name(s->dtype));
        for (int i = 1; !hr_t_cur_failed && i < N_THREADS; i++) {
            memset(got, 0xff, sizeof(float) * MAX_T * (size_t)s->N); /* NaNs where nothing writes */
            HR_CHECK(product(s, wq, threads[i], bf16, x, b, T, got), "no product");
            HR_CHECK(!memcmp(want, got, sizeof(float) * (size_t)T * (size_t)s->N),
                     "%s [%ld, %ld] T=%d bf16 %d: %d threads differ from 1",
                     hr_dtype_name(s->dtype), s->N, s->K, T, bf16, threads[i]);
        }
    }
    free(x), free(b), free(want), free(got), free(wq);
}

static void test_matmul_threads(void) {
    for (int i = 0; i < N_SHAPES; i++)
        check_matmul(&shapes[i], 0);
    check_matmul(&shapes[1], 1);
}

int main(void) {
    HR_RUN(test_matmul_threads);
    return hr_test_summary();
}
