/* The request memory budget (mem_budget.h): a counter under a mutex, with a condvar that
 * wakes requests waiting for memory when another one gives its reservation back. */
#include "server/mem_budget.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

void hr_mem_budget_init(hr_mem_budget *b, size_t cap) {
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->freed, NULL);
    b->cap = cap;
    b->used = 0;
}

void hr_mem_budget_destroy(hr_mem_budget *b) {
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->freed);
}

size_t hr_mem_budget_cost(const hr_mem_budget *b, uint64_t body_len, unsigned factor) {
    uint64_t most = b->cap / (factor ? factor : 1);
    if (body_len >= most) return b->cap;
    return (size_t)body_len * factor;
}

static struct timespec after_ms(int ms) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

int hr_mem_budget_reserve(hr_mem_budget *b, size_t n, int wait_ms) {
    struct timespec until = after_ms(wait_ms);
    pthread_mutex_lock(&b->mu);
    int timed_out = 0;
    while (n > b->cap - b->used && !timed_out)
        timed_out = pthread_cond_timedwait(&b->freed, &b->mu, &until) == ETIMEDOUT;
    int ok = n <= b->cap - b->used;
    if (ok) b->used += n;
    pthread_mutex_unlock(&b->mu);
    return ok;
}

void hr_mem_budget_release(hr_mem_budget *b, size_t n) {
    if (!n) return;
    pthread_mutex_lock(&b->mu);
    b->used -= n;
    pthread_cond_broadcast(&b->freed);
    pthread_mutex_unlock(&b->mu);
}

size_t hr_mem_budget_used(hr_mem_budget *b) {
    pthread_mutex_lock(&b->mu);
    size_t n = b->used;
    pthread_mutex_unlock(&b->mu);
    return n;
}

size_t hr_mem_budget_default(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0) return (size_t)1 << 30;
    return (size_t)pages / 4 * (size_t)size;
}
