/* Streaming read bandwidth of this machine: sums a 1 GiB buffer (hugepage-advised) with
 * 1..N threads using the widest loads available; prints GB/s (median of 5 runs). This is
 * the roofline that CPU decode figures are reported against. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/clock.h"
#include "base/cpu.h"
#include "base/pool.h"

typedef struct {
    const char *buf;
    size_t bytes;
    double sink[64];
} bw_ctx;

__attribute__((target("avx512f"))) static double sum512(const char *p, size_t n) {
    __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
    for (size_t i = 0; i < n; i += 256) {
        a = _mm512_add_ps(a, _mm512_load_ps((const float *)(p + i)));
        b = _mm512_add_ps(b, _mm512_load_ps((const float *)(p + i + 64)));
        c = _mm512_add_ps(c, _mm512_load_ps((const float *)(p + i + 128)));
        d = _mm512_add_ps(d, _mm512_load_ps((const float *)(p + i + 192)));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
}

static double sum_scalar(const char *p, size_t n) {
    const double *d = (const double *)p;
    double s = 0;
    for (size_t i = 0; i < n / 8; i += 8) s += d[i];
    return s;
}

static void bw_task(void *ctx, int t, int nt) {
    bw_ctx *c = ctx;
    long b, e;
    hr_split_range((long)c->bytes, 4096, t, nt, &b, &e);
    c->sink[t] = hr_cpu()->level == HR_CPU_AVX512 ? sum512(c->buf + b, (size_t)(e - b))
                                                   : sum_scalar(c->buf + b, (size_t)(e - b));
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    size_t bytes = (size_t)1 << 30;
    int max_threads = argc > 1 ? atoi(argv[1]) : 2;
    char *buf = aligned_alloc(2u << 20, bytes);
    if (!buf) return 1;
    madvise(buf, bytes, MADV_HUGEPAGE);
    memset(buf, 1, bytes);
    printf("streaming read, 1 GiB buffer, %s loads\n", hr_cpu_level_name(hr_cpu()->level));
    for (int nt = 1; nt <= max_threads; nt++) {
        hr_pool *pool;
        if (hr_pool_create(nt, &pool)) return 1;
        bw_ctx c = {buf, bytes, {0}};
        double gbs[5];
        for (int r = 0; r < 5; r++) {
            uint64_t t0 = hr_now_ns();
            hr_pool_run(pool, bw_task, &c);
            gbs[r] = (double)bytes / (double)(hr_now_ns() - t0);
        }
        qsort(gbs, 5, sizeof *gbs, cmp_double);
        printf("threads %d: %.1f GB/s (min %.1f, max %.1f)\n", nt, gbs[2], gbs[0], gbs[4]);
        hr_pool_destroy(pool);
    }
    free(buf);
    return 0;
}
