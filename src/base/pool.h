/* A fixed thread pool for data-parallel kernels. hr_pool_for cuts [0, n) into chunks of
 * `grain` units that the caller and whichever workers are awake claim from one shared
 * counter; it returns when every chunk is done, so a descheduled worker delays a run by at
 * most the chunk it holds, never by not having started. Workers spin briefly between runs
 * (a decode step issues hundreds), yielding their core often, then sleep on a condition
 * variable. */
#ifndef HR_BASE_POOL_H
#define HR_BASE_POOL_H

#include "base/err.h"

typedef struct hr_pool hr_pool;
/* One chunk [begin, end); thread in [0, size) is the claiming thread, the caller 0: scratch
 * indexed by it is exclusive (a thread runs one chunk at a time). */
typedef void (*hr_pool_range_fn)(void *ctx, int thread, long begin, long end);
typedef void (*hr_pool_fn)(void *ctx, int part, int n_parts);

/* n_threads counts the caller; n_threads <= 0 means the number of online CPUs. */
hr_err *hr_pool_create(int n_threads, hr_pool **out);
void hr_pool_destroy(hr_pool *pool);
int hr_pool_size(const hr_pool *pool);

/* Calls fn once for every chunk [i * grain, min(n, (i + 1) * grain)), in any order on any
 * threads (a NULL pool: the caller, in order); n <= 0 calls nothing, grain < 1 means 1. An
 * output must depend on its own unit only, not on the chunk that computes it. */
void hr_pool_for(hr_pool *pool, long n, long grain, hr_pool_range_fn fn, void *ctx);

/* Chunk size for n units: about per_thread chunks per thread, at most max_grain units
 * (<= 0: no limit), a multiple of align (the kernel's tile), never below align. */
long hr_pool_grain(const hr_pool *pool, long n, long align, int per_thread, long max_grain);

/* Calls fn(ctx, part, n_parts) once for every part in [0, n_parts) with n_parts the pool
 * size: hr_pool_for over the parts, so a part is not a thread (one thread may run several)
 * but scratch indexed by it is still exclusive. */
void hr_pool_run(hr_pool *pool, hr_pool_fn fn, void *ctx);

/* Splits [0, n) into n_threads near-equal parts, aligned to `align`; returns thread's part. */
void hr_split_range(long n, long align, int thread, int n_threads, long *begin, long *end);

#endif
