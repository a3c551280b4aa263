/* Quantized-weight matmul on the CPU backend, per GGUF type (bf16 as the baseline): decode
 * (T = 1) through a qwen3-0.6b-shaped weight set (28 layers of q, k, v, o, gate, up, down
 * plus the tied lm_head, random blocks), as weight GB/s against this machine's read
 * bandwidth and the tok/s that matmul time alone allows; T = 1 in cache (one [1024, 1024]
 * matrix IN_CACHE times over, the kernel's speed without the memory wall); and prefill GFLOP/s
 * of one gate-shaped [3072, 1024] matrix at T = 64. Median of 5 passes.
 *   bench_quant [threads (default: all CPUs)] [types, comma-separated (default: all)] */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/qdot.h"
#include "common.h"
#include "tensor/quant.h"

enum { LAYERS = 28, HIDDEN = 1024, VOCAB = 151936, PREFILL_T = 64, IN_CACHE = 64 };
static const long shapes[7][2] = {{2048, HIDDEN}, {1024, HIDDEN}, {1024, HIDDEN}, {HIDDEN, 2048},
                                  {3072, HIDDEN}, {3072, HIDDEN}, {HIDDEN, 3072}};
static const hr_dtype types[] = {HR_BF16, HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0,   HR_Q5_1,  HR_Q2_K,
                                 HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_NL, HR_IQ4_XS};

static unsigned rng = 1;
static uint8_t rnd(void) {
    rng = rng * 1103515245u + 12345u;
    return (uint8_t)(rng >> 16);
}

/* Random bytes with every 16-bit word a small f16 (scales stay sane, as do bf16 weights). */
static void *random_tensor(hr_dtype t, long N, long K, hr_tensor *host) {
    size_t bytes = hr_dtype_bytes(t, N * K);
    uint8_t *p = malloc(bytes);
    if (!p) return NULL;
    for (size_t i = 0; i < bytes; i++)
        p[i] = rnd();
    for (size_t i = 0; i + 1 < bytes; i += 2)
        if (t == HR_BF16 || (p[i] & 1)) p[i + 1] = t == HR_BF16 ? 0x3c : (p[i + 1] & 0x83) | 0x20;
    *host = (hr_tensor){.data = p, .dtype = t, .ndim = 2, .shape = {N, K}};
    return p;
}

/* Uploads a random [N, K] weight; *host keeps the source (small ones are used in place). */
static hr_err *upload(hr_backend *be, hr_dtype t, long N, long K, hr_tensor *dev, void **host) {
    hr_tensor h;
    *host = random_tensor(t, N, K, &h);
    return *host ? be->vt->upload(be, &h, dev) : hr_err_oom();
}

static double median5(double *t) {
    qsort(t, 5, sizeof *t, cmp_double);
    return t[2];
}

static hr_err *bench_type(hr_backend *be, hr_dtype t, double bw) {
    hr_tensor w[LAYERS * 7 + 1];
    void *host[LAYERS * 7 + 1] = {0};
    int n = 0;
    hr_err *e = NULL;
    for (int l = 0; l < LAYERS && !e; l++)
        for (int m = 0; m < 7 && !e; m++, n++)
            e = upload(be, t, shapes[m][0], shapes[m][1], &w[n], &host[n]);
    if (!e) e = upload(be, t, VOCAB, HIDDEN, &w[n], &host[n]), n++;
    float *x = malloc(sizeof(float) * PREFILL_T * 3072),
          *y = malloc(sizeof(float) * PREFILL_T * VOCAB);
    if (!e && (!x || !y)) e = hr_err_oom();
    if (!e) {
        for (int i = 0; i < PREFILL_T * 3072; i++)
            x[i] = (float)(rnd() - 128) / 128.0f;
        size_t bytes = 0;
        for (int i = 0; i < n; i++)
            bytes += hr_tensor_bytes(&w[i]);
        double dt[5], ct[5], pt[5];
        for (int r = 0; r < 5; r++) {
            uint64_t t0 = hr_now_ns();
            for (int i = 0; i < n; i++)
                be->vt->matmul(be, y, x, &w[i], NULL, 1);
            dt[r] = (double)(hr_now_ns() - t0) * 1e-9;
            t0 = hr_now_ns();
            be->vt->matmul(be, y, x, &w[4], NULL, PREFILL_T);
            pt[r] = (double)(hr_now_ns() - t0) * 1e-9;
            t0 = hr_now_ns();
            for (int i = 0; i < IN_CACHE; i++)
                be->vt->matmul(be, y, x, &w[1], NULL, 1);
            ct[r] = (double)(hr_now_ns() - t0) * 1e-9;
        }
        double d = median5(dt), p = median5(pt), gbs = (double)bytes / d * 1e-9;
        double cgbs = (double)hr_tensor_bytes(&w[1]) * IN_CACHE / median5(ct) * 1e-9;
        const hr_cpu_qdots *q = hr_cpu_qdots_get();
        printf("%-7s %-6s %7.1f MB %8.2f ms %6.1f GB/s %5.0f%% of read bw %7.1f tok/s | in cache "
               "%6.1f GB/s | T=%d %6.1f GFLOP/s\n",
               hr_dtype_name(t),
               t == HR_BF16 ? "f32"
               : q->dot[t]  ? "q8"
                            : "dequant",
               (double)bytes * 1e-6, d * 1e3, gbs, 100.0 * gbs / bw, 1.0 / d, cgbs, PREFILL_T,
               2.0 * PREFILL_T * 3072 * HIDDEN / p * 1e-9);
    }
    for (int i = 0; i < n; i++) {
        if (w[i].data) be->vt->release(be, &w[i]);
        free(host[i]);
    }
    free(x);
    free(y);
    return e;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    hr_backend *be;
    hr_err *e = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = threads}, &be);
    if (e) {
        fprintf(stderr, "%s\n", hr_err_msg(e));
        return 1;
    }
    double lo, hi, bw = bench_read_bandwidth(threads, &lo, &hi);
    printf("qwen3-0.6b-shaped decode matmuls, %s threads, %s dots; read bandwidth %.1f GB/s "
           "(%.1f-%.1f)\n",
           threads > 0 ? argv[1] : "all", hr_cpu_qdots_get()->name, bw, lo, hi);
    for (size_t i = 0; i < sizeof types / sizeof *types && !e; i++) {
        if (argc > 2 && !strstr(argv[2], hr_dtype_name(types[i]))) continue;
        e = bench_type(be, types[i], bw);
    }
    hr_backend_destroy(be);
    if (e) fprintf(stderr, "%s\n", hr_err_msg(e));
    return e != NULL;
}
