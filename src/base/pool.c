/* Spin-then-sleep thread pool with dynamic chunks; see pool.h. A run is one word,
 * claim = (chunks << 32) | next chunk: a thread owns chunk i when its fetch_add on claim returns
 * i < chunks, and then the run stays live until it adds that chunk to done, so the run's fields
 * can be read after a claim and rewritten by the caller once done reaches chunks. A worker that
 * wakes late claims from whatever run is current, or fails and waits again. Ordering relies on
 * seq_cst atomics: a worker that registers as a sleeper re-checks the generation, and the caller
 * that bumps the generation checks for sleepers, so a wake-up can never be lost. */
#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/thread.h"

struct hr_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Alignas(64) atomic_ulong gen; /* what idle workers poll, apart from the claims */
    atomic_int sleepers;
    atomic_int stop;
    _Alignas(64) atomic_uint_fast64_t claim;
    atomic_long done;
    hr_pool_range_fn fn; /* the run's: written by the caller only between runs */
    void *ctx;
    long units, grain;
};

typedef struct {
    hr_pool *pool;
    int index;
} worker_arg;

static inline void cpu_relax(void) { __builtin_ia32_pause(); }

/* Idle workers poll this long before sleeping, yielding every YIELD_EVERY polls so that a
 * thread sharing their core (the caller, with more threads than free cores) runs. */
enum { SPIN_NS = 2000000, YIELD_EVERY = 128, CALLER_SPINS = 4096 };

static unsigned long wait_for_work(hr_pool *p, unsigned long seen) {
    uint64_t t0 = hr_now_ns();
    for (int i = 0;; i++) {
        unsigned long g = atomic_load(&p->gen);
        if (g != seen || atomic_load(&p->stop)) return g;
        cpu_relax();
        if ((i & (YIELD_EVERY - 1)) == YIELD_EVERY - 1) {
            if (hr_now_ns() - t0 > SPIN_NS) break;
            sched_yield();
        }
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    unsigned long g;
    while ((g = atomic_load(&p->gen)) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->cv, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
    return g;
}

/* Runs chunks of the current run until none is left. */
static void claim_chunks(hr_pool *p, int thread) {
    for (;;) {
        uint64_t w = atomic_fetch_add(&p->claim, 1);
        long i = (long)(uint32_t)w, chunks = (long)(w >> 32);
        if (i >= chunks) return;
        long b = i * p->grain, e = p->units - b < p->grain ? p->units : b + p->grain;
        p->fn(p->ctx, thread, b, e);
        atomic_fetch_add(&p->done, 1);
    }
}

static void *worker_main(void *arg) {
    worker_arg *wa = arg;
    hr_pool *p = wa->pool;
    int index = wa->index;
    free(wa);
    unsigned long seen = 0;
    for (;;) {
        seen = wait_for_work(p, seen);
        if (atomic_load(&p->stop)) break;
        claim_chunks(p, index);
    }
    return NULL;
}

hr_err *hr_pool_create(int n_threads, hr_pool **out) {
    *out = NULL;
    if (n_threads <= 0) n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n_threads <= 0) n_threads = 1;
    hr_pool *p = aligned_alloc(_Alignof(hr_pool), sizeof *p); /* sizeof: a multiple of it */
    if (!p) return hr_err_oom();
    memset(p, 0, sizeof *p);
    p->n = n_threads;
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return hr_err_oom();
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (wa) *wa = (worker_arg){p, i};
        char what[48];
        snprintf(what, sizeof what, "thread pool's worker %d", i);
        hr_err *e = wa ? hr_thread_start(&p->threads[i], worker_main, wa, what) : hr_err_oom();
        if (e) {
            free(wa);
            p->n = i;
            hr_pool_destroy(p);
            return e;
        }
    }
    *out = p;
    return NULL;
}

void hr_pool_destroy(hr_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}

int hr_pool_size(const hr_pool *p) { return p ? p->n : 1; }

long hr_pool_grain(const hr_pool *p, long n, long align, int per_thread, long max_grain) {
    if (align < 1) align = 1;
    if (per_thread < 1) per_thread = 1;
    long g = n / ((long)hr_pool_size(p) * per_thread);
    if (max_grain > 0 && g > max_grain) g = max_grain;
    g = g / align * align;
    return g < align ? align : g;
}

void hr_pool_for(hr_pool *p, long n, long grain, hr_pool_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (n / grain >= INT32_MAX) grain = n / (INT32_MAX - 1) + 1; /* the claim word's 32 bits */
    long chunks = n / grain + (n % grain != 0);
    if (!p || p->n == 1 || chunks == 1) {
        for (long b = 0; b < n; b += grain)
            fn(ctx, 0, b, n - b < grain ? n : b + grain);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->units = n;
    p->grain = grain;
    atomic_store(&p->done, 0);
    atomic_store(&p->claim, (uint64_t)chunks << 32);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    claim_chunks(p, 0);
    /* only chunks in progress are left; if their thread is not running (more threads than
     * free cores), yield to it */
    for (long i = 0; atomic_load(&p->done) < chunks; i++) {
        if (i < CALLER_SPINS)
            cpu_relax();
        else
            sched_yield();
    }
}

typedef struct {
    hr_pool_fn fn;
    void *ctx;
    int parts;
} parts_ctx;

static void part_task(void *ctx, int thread, long begin, long end) {
    parts_ctx *c = ctx;
    for (long i = begin; i < end; i++)
        c->fn(c->ctx, (int)i, c->parts);
}

void hr_pool_run(hr_pool *p, hr_pool_fn fn, void *ctx) {
    parts_ctx c = {fn, ctx, hr_pool_size(p)};
    hr_pool_for(p, c.parts, 1, part_task, &c);
}

void hr_split_range(long n, long align, int thread, int n_threads, long *begin, long *end) {
    if (align < 1) align = 1;
    long units = (n + align - 1) / align;
    long per = units / n_threads, extra = units % n_threads;
    long b = thread * per + (thread < extra ? thread : extra);
    long e = b + per + (thread < extra ? 1 : 0);
    b *= align;
    e *= align;
    *begin = b < n ? b : n;
    *end = e < n ? e : n;
}
