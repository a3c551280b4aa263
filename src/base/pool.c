/* Spin-then-sleep thread pool; see pool.h. Ordering relies on seq_cst atomics: a worker
 * that registers as a sleeper re-checks the generation, and the caller that bumps the
 * generation checks for sleepers, so a wake-up can never be lost. */
#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/thread.h"

struct hr_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_ulong gen;
    atomic_int pending;
    atomic_int sleepers;
    atomic_int stop;
    hr_pool_fn fn;
    void *ctx;
};

typedef struct {
    hr_pool *pool;
    int index;
} worker_arg;

static inline void cpu_relax(void) { __builtin_ia32_pause(); }

enum { SPIN_NS = 2000000 };

static unsigned long wait_for_work(hr_pool *p, unsigned long seen) {
    uint64_t t0 = hr_now_ns();
    for (int i = 0;; i++) {
        unsigned long g = atomic_load(&p->gen);
        if (g != seen || atomic_load(&p->stop)) return g;
        cpu_relax();
        if ((i & 1023) == 1023) {
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

static void *worker_main(void *arg) {
    worker_arg *wa = arg;
    hr_pool *p = wa->pool;
    int index = wa->index;
    free(wa);
    unsigned long seen = 0;
    for (;;) {
        seen = wait_for_work(p, seen);
        if (atomic_load(&p->stop)) break;
        p->fn(p->ctx, index, p->n);
        atomic_fetch_sub(&p->pending, 1);
    }
    return NULL;
}

hr_err *hr_pool_create(int n_threads, hr_pool **out) {
    *out = NULL;
    if (n_threads <= 0) n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n_threads <= 0) n_threads = 1;
    hr_pool *p = calloc(1, sizeof *p);
    if (!p) return hr_err_oom();
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

void hr_pool_run(hr_pool *p, hr_pool_fn fn, void *ctx) {
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->pending, p->n - 1);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(ctx, 0, p->n);
    /* spin; if a worker is not running (more threads than free cores), yield to it */
    for (long i = 0; atomic_load(&p->pending) > 0; i++) {
        if (i < 20000)
            cpu_relax();
        else
            sched_yield();
    }
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
