/* Shared by the benchmark programs: streaming read bandwidth of this machine (the decode
 * roofline) and a median helper. */
#ifndef HR_BENCH_COMMON_H
#define HR_BENCH_COMMON_H

#include <stdlib.h>

#include "base/clock.h"
#include "base/cpu.h"
#include "base/membw.h"

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median GB/s of 5 passes over a 1 GiB buffer with n_threads (base/membw.h). */
static inline double bench_read_bandwidth(int n_threads, double *lo, double *hi) {
    return hr_read_bandwidth(n_threads, (size_t)1 << 30, lo, hi);
}

#endif
