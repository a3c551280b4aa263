/* Allocation-failure injection for tests (docs/reliability.md): the test binary links with
 * -Wl,--wrap for malloc, calloc, realloc, free, strdup, strndup, posix_memalign,
 * aligned_alloc, mmap and munmap, and json_loadb and json_loads (CMakeLists.txt), so every such
 * call in libhearth goes through tests/fault/alloc_fail.c. While tracking, the shim counts
 * allocations, records the distinct call sites (return addresses) and the live blocks allocated
 * since tracking began; armed, it makes allocation number n (0-based) fail, once or from then on.
 * pthread_create is wrapped too (libhearth starts every thread through hr_thread_start,
 * src/base/thread.c): while tracking it counts thread starts and can fail number k (EAGAIN).
 * Allocations inside jansson's parser (json_loadb, json_loads) are left alone and not counted:
 * jansson 2.14 mishandles them itself (its lexer ignores a failed append and returns a short token;
 * a failure in an object frees a pointer it never allocated), nothing hearth can handle. */
#ifndef HR_TESTS_ALLOC_FAIL_H
#define HR_TESTS_ALLOC_FAIL_H

#include <stddef.h>

enum { HR_FAULT_MAX_SITES = 4096 };

typedef struct {
    long calls;        /* allocations since hr_fault_track */
    long failed;       /* of them, made to fail */
    long live;         /* blocks allocated since hr_fault_track and not yet freed */
    size_t live_bytes; /* their bytes */
    int n_sites;       /* distinct call sites seen (at most HR_FAULT_MAX_SITES) */
    void *first_leak;  /* one of the live blocks, or NULL */
    void *first_leak_site;
    void *fail_stack[16]; /* the return addresses of the first injected failure */
    int n_fail_stack;
    long threads;        /* pthread_create calls since hr_fault_track */
    long threads_failed; /* of them, made to fail */
} hr_fault_stats;

/* Starts tracking: counters and the live set restart from zero, nothing armed. */
void hr_fault_track(void);
/* Arms a failure of allocation number n since tracking began; persistent: every later one
 * fails too. n < 0 disarms. */
void hr_fault_arm(long n, int persistent);
/* Arms a failure (EAGAIN) of thread start number k since tracking began; k < 0 disarms. */
void hr_fault_arm_thread(long k);
/* Stops tracking and injection; fills *st (may be NULL). */
void hr_fault_stop(hr_fault_stats *st);
/* The call index at which site i was first seen in the current tracking (i < n_sites). */
long hr_fault_site_first(int i);
/* The return address of site i. */
void *hr_fault_site_addr(int i);

#endif
