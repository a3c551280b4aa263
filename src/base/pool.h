/* A fixed thread pool for data-parallel kernels. hr_pool_run calls fn(ctx, i, n) once
 * for every i in [0, n) with n the pool size, the caller acting as thread 0, and returns
 * when all calls are done. Workers spin briefly between runs (a decode step issues
 * hundreds of runs), then sleep on a condition variable. */
#ifndef HR_BASE_POOL_H
#define HR_BASE_POOL_H

#include "base/err.h"

typedef struct hr_pool hr_pool;
typedef void (*hr_pool_fn)(void *ctx, int thread, int n_threads);

/* n_threads counts the caller; n_threads <= 0 means the number of online CPUs. */
hr_err *hr_pool_create(int n_threads, hr_pool **out);
void hr_pool_destroy(hr_pool *pool);
int hr_pool_size(const hr_pool *pool);
void hr_pool_run(hr_pool *pool, hr_pool_fn fn, void *ctx);

/* Splits [0, n) into n_threads near-equal parts, aligned to `align`; returns thread's part. */
void hr_split_range(long n, long align, int thread, int n_threads, long *begin, long *end);

#endif
