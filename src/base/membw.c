/* Read-bandwidth probe (membw.h): every thread sums its slice of one buffer with wide loads
 * so the loop is bound by memory, not by the adds. */
#include "base/membw.h"

#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/clock.h"
#include "base/cpu.h"
#include "base/pool.h"

typedef struct {
    const char *buf;
    size_t bytes;
    double sink[256];
} bw_ctx;

__attribute__((target("avx512f"))) static double sum512(const char *p, size_t n) {
    __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
    for (size_t i = 0; i + 256 <= n; i += 256) {
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
    for (size_t i = 0; i < n / 8; i += 8)
        s += d[i];
    return s;
}

static void bw_task(void *ctx, int t, int nt) {
    bw_ctx *c = ctx;
    long b, e;
    hr_split_range((long)c->bytes, 4096, t, nt, &b, &e);
    double s = hr_cpu()->level == HR_CPU_AVX512 ? sum512(c->buf + b, (size_t)(e - b))
                                                : sum_scalar(c->buf + b, (size_t)(e - b));
    c->sink[t & 255] = s;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double hr_read_bandwidth(int n_threads, size_t bytes, double *lo, double *hi) {
    bytes = (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
    char *buf = aligned_alloc(2u << 20, bytes);
    hr_pool *pool = NULL;
    hr_err *err = buf ? hr_pool_create(n_threads, &pool) : NULL;
    if (!buf || err) {
        hr_err_free(err);
        free(buf);
        return 0;
    }
    madvise(buf, bytes, MADV_HUGEPAGE);
    memset(buf, 1, bytes);
    bw_ctx c = {buf, bytes, {0}};
    double gbs[5];
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = hr_now_ns();
        hr_pool_run(pool, bw_task, &c);
        gbs[r] = (double)bytes / (double)(hr_now_ns() - t0);
    }
    qsort(gbs, 5, sizeof *gbs, cmp_double);
    hr_pool_destroy(pool);
    free(buf);
    if (lo) *lo = gbs[0];
    if (hi) *hi = gbs[4];
    return gbs[2];
}
