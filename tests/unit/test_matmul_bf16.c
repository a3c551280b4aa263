/* --compute bf16: y = round_bf16(x) w^T with f32 accumulation, through the CPU backend's
 * matmul on every path this CPU has (AMX tiles, VDPBF16PS, x rounded into the f32
 * kernels) against a double-precision reference at odd and real sizes; the AMX and
 * VDPBF16PS kernels alone, and on AMX that a token's result is bit-identical alone and
 * inside any batch. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul_bf16.h"
#include "base/cpu.h"
#include "harness.h"
#include "tensor/dtype.h"

static unsigned rng = 777;
static float frand(void) {
    rng = rng * 1103515245u + 12345u;
    return ((float)((rng >> 8) & 0xffff) / 65536.0f) * 2.0f - 1.0f;
}

typedef struct {
    int T, K, N;
    float *x, *y, *ref, *scale; /* scale: sum |x_r w| per output, the tolerance's unit */
    uint16_t *w;
} mm_case;

static void case_init(mm_case *c, int T, int K, int N) {
    c->T = T, c->K = K, c->N = N;
    c->x = malloc(sizeof(float) * (size_t)T * K);
    c->w = malloc(sizeof(uint16_t) * (size_t)N * K);
    c->y = calloc((size_t)T * N, sizeof(float));
    c->ref = malloc(sizeof(float) * (size_t)T * N);
    c->scale = malloc(sizeof(float) * (size_t)T * N);
    for (long i = 0; i < (long)T * K; i++)
        c->x[i] = frand() * 3.0f;
    for (long i = 0; i < (long)N * K; i++)
        c->w[i] = hr_f32_to_bf16(frand());
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++) {
            double s = 0, a = 0;
            for (int k = 0; k < K; k++) {
                double p = (double)hr_bf16_to_f32(hr_f32_to_bf16(c->x[t * K + k])) *
                           hr_bf16_to_f32(c->w[(long)n * K + k]);
                s += p;
                a += fabs(p);
            }
            c->ref[t * N + n] = (float)s;
            c->scale[t * N + n] = (float)a;
        }
}

static void case_free(mm_case *c) {
    free(c->x);
    free(c->w);
    free(c->y);
    free(c->ref);
    free(c->scale);
}

/* Largest error in units of sum|terms| (f32 accumulation of K terms stays far below 1e-5;
 * unrounded x would be off by ~1e-3). */
static double worst_err(const mm_case *c) {
    double worst = 0;
    for (long i = 0; i < (long)c->T * c->N; i++)
        worst = fmax(worst, fabs(c->y[i] - c->ref[i]) / (c->scale[i] + 1e-6));
    return worst;
}

/* One pass over the shapes through the backend on the current path. */
static void backend_shapes(const char *path) {
    hr_backend *be = NULL;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2, .compute_bf16 = 1}, &be));
    int shapes[][3] = {{1, 64, 48},  {3, 96, 80}, {16, 32, 16},    {17, 128, 144},
                       {40, 64, 64}, {5, 40, 37}, {33, 1024, 256}, {130, 96, 96}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes && !hr_t_cur_failed; i++) {
        mm_case c;
        case_init(&c, shapes[i][0], shapes[i][1], shapes[i][2]);
        hr_tensor w = {.data = c.w, .dtype = HR_BF16, .ndim = 2, .shape = {c.N, c.K}};
        hr_cpu_matmul(be, c.y, c.x, &w, NULL, c.T);
        double e = worst_err(&c);
        HR_CHECK(e < 1e-5, "%s: T=%d K=%d N=%d: error %g of sum|terms|", path, c.T, c.K, c.N, e);
        case_free(&c);
    }
    hr_backend_destroy(be);
}

/* Every path this CPU has: AMX, VDPBF16PS, x rounded into the AVX2 and generic kernels. */
static void test_backend_matmul(void) {
    if (hr_cpu()->amx) backend_shapes("amx");
    hr_cpu_set_amx(0);
    if (hr_cpu()->avx512bf16) backend_shapes("vdpbf16ps");
    hr_cpu_set_level(HR_CPU_AVX2);
    backend_shapes("avx2 rounded");
    hr_cpu_set_level(HR_CPU_GENERIC);
    backend_shapes("generic rounded");
    hr_cpu_set_level(HR_CPU_AVX512);
    hr_cpu_set_amx(1);
}

/* The VDPBF16PS kernel alone over two column ranges, K tails included. */
static void test_bx_kernel(void) {
    if (!hr_cpu()->avx512bf16) {
        printf("  note: no AVX512_BF16 on this CPU; the VDPBF16PS kernel is not exercised\n");
        return;
    }
    int shapes[][3] = {{1, 1, 5}, {2, 7, 16}, {5, 33, 37}, {9, 130, 64}, {4, 64, 9}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes && !hr_t_cur_failed; i++) {
        mm_case c;
        case_init(&c, shapes[i][0], shapes[i][1], shapes[i][2]);
        uint16_t *xb = malloc(sizeof(uint16_t) * (size_t)c.T * c.K);
        for (long j = 0; j < (long)c.T * c.K; j++)
            xb[j] = hr_f32_to_bf16(c.x[j]);
        long mid = c.N / 32 * 16;
        hr_cpu_kernels_avx512.mm_bx(c.y, c.N, xb, c.K, c.w, c.K, c.T, 0, mid);
        hr_cpu_kernels_avx512.mm_bx(c.y, c.N, xb, c.K, c.w, c.K, c.T, mid, c.N);
        double e = worst_err(&c);
        HR_CHECK(e < 1e-5, "T=%d K=%d N=%d: error %g of sum|terms|", c.T, c.K, c.N, e);
        free(xb);
        case_free(&c);
    }
}

/* The tile kernel over two column ranges (as two threads split it), and every token of a
 * batch equal to the same token computed alone. */
static void test_amx_kernel(void) {
    if (!hr_cpu()->amx || !hr_amx_init()) {
        printf("  note: no AMX on this CPU; the tile kernel is not exercised\n");
        return;
    }
    int shapes[][3] = {{1, 32, 16}, {7, 64, 80}, {16, 96, 64}, {37, 128, 112}, {150, 64, 48}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes && !hr_t_cur_failed; i++) {
        mm_case c;
        case_init(&c, shapes[i][0], shapes[i][1], shapes[i][2]);
        uint16_t *xp = malloc(sizeof(uint16_t) * (size_t)hr_amx_pack_elems(c.T, c.K));
        hr_amx_pack(xp, c.x, c.K, c.K, c.T, 0, (c.T + 15) / 16);
        long mid = c.N / 32 * 16;
        hr_amx_mm(c.y, c.N, xp, c.w, c.K, c.T, 0, mid);
        hr_amx_mm(c.y, c.N, xp, c.w, c.K, c.T, mid, c.N);
        double e = worst_err(&c);
        HR_CHECK(e < 1e-5, "T=%d K=%d N=%d: error %g of sum|terms|", c.T, c.K, c.N, e);
        float *one = malloc(sizeof(float) * (size_t)c.N);
        for (int t = 0; t < c.T && !hr_t_cur_failed; t++) {
            hr_amx_pack(xp, c.x + (long)t * c.K, c.K, c.K, 1, 0, 1);
            hr_amx_mm(one, c.N, xp, c.w, c.K, 1, 0, c.N);
            HR_CHECK(!memcmp(one, c.y + (long)t * c.N, sizeof(float) * (size_t)c.N),
                     "T=%d K=%d N=%d: token %d alone differs from the batch", c.T, c.K, c.N, t);
        }
        free(one);
        free(xp);
        case_free(&c);
    }
}

int main(void) {
    HR_RUN(test_backend_matmul);
    HR_RUN(test_bx_kernel);
    HR_RUN(test_amx_kernel);
    return hr_test_summary();
}
