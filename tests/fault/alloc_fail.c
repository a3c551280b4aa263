/* The allocation-failure shim (alloc_fail.h): __wrap_X for each allocator the test links
 * with --wrap=X. __real_X is the libc function (or ASan's interceptor in the sanitizer
 * build). State is under one mutex: the engine and the CPU backend allocate from their
 * own threads. The live set is an open-addressing table of the blocks allocated while
 * tracking, so a block from before tracking (or from inside libc) freed during it is
 * ignored, and what is left at hr_fault_stop is what the operation leaked. */
#include "alloc_fail.h"

#include <execinfo.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void *__real_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t n);
json_t *__real_json_loadb(const char *buf, size_t n, size_t flags, json_error_t *e);
json_t *__real_json_loads(const char *s, size_t flags, json_error_t *e);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);

typedef struct {
    void *p; /* NULL: empty; TOMB: deleted */
    size_t bytes;
    void *site;
} slot;

#define TOMB ((void *)1)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int tracking, persistent;
static long fail_at = -1, calls, failed;
static long thread_fail_at = -1, threads, threads_failed;
static slot *tab;
static size_t cap, used, live; /* used counts tombstones too */
static size_t live_bytes;
static void *sites[HR_FAULT_MAX_SITES];
static long site_first[HR_FAULT_MAX_SITES];
static int n_sites;
static void *fail_stack[16];
static int n_fail_stack, want_stack;
static _Thread_local int in_parser; /* this thread is inside json_loadb / json_loads */

static size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static void insert_slot(slot *t, size_t c, slot s) {
    size_t i = hash_ptr(s.p) & (c - 1);
    while (t[i].p && t[i].p != TOMB)
        i = (i + 1) & (c - 1);
    t[i] = s;
}

/* Grows (or rehashes away tombstones) when the table is half full; 0 when out of memory. */
static int reserve(void) {
    if (used + 1 < cap / 2) return 1;
    size_t nc = cap ? (live * 4 > cap ? cap * 2 : cap) : 1024;
    slot *nt = __real_calloc(nc, sizeof *nt);
    if (!nt) return 0;
    for (size_t i = 0; i < cap; i++)
        if (tab[i].p && tab[i].p != TOMB) insert_slot(nt, nc, tab[i]);
    __real_free(tab);
    tab = nt;
    cap = nc;
    used = live;
    return 1;
}

static void note_site(void *site) {
    for (int i = 0; i < n_sites; i++)
        if (sites[i] == site) return;
    if (n_sites == HR_FAULT_MAX_SITES) return;
    sites[n_sites] = site;
    site_first[n_sites++] = calls;
}

/* Counts one allocation from site; returns 1 when it must fail. Under mu. */
static int should_fail(void *site) {
    if (!tracking || in_parser) return 0;
    note_site(site);
    long i = calls++;
    if (fail_at >= 0 && (i == fail_at || (persistent && i > fail_at))) {
        if (!failed++) want_stack = 1;
        return 1;
    }
    return 0;
}

static void add_live(void *p, size_t bytes, void *site) {
    if (!p || !tracking || !reserve()) return;
    insert_slot(tab, cap, (slot){p, bytes, site});
    used++;
    live++;
    live_bytes += bytes;
}

static void drop_live(void *p) {
    if (!p || !cap) return;
    size_t i = hash_ptr(p) & (cap - 1);
    for (; tab[i].p; i = (i + 1) & (cap - 1))
        if (tab[i].p == p) {
            live_bytes -= tab[i].bytes;
            tab[i].p = TOMB;
            live--;
            return;
        }
}

void hr_fault_track(void) {
    pthread_mutex_lock(&mu);
    __real_free(tab);
    tab = NULL;
    cap = used = live = live_bytes = 0;
    calls = failed = 0;
    threads = threads_failed = 0;
    n_fail_stack = want_stack = 0;
    fail_at = thread_fail_at = -1;
    n_sites = 0;
    tracking = 1;
    pthread_mutex_unlock(&mu);
}

void hr_fault_arm(long n, int persist) {
    pthread_mutex_lock(&mu);
    fail_at = n;
    persistent = persist;
    pthread_mutex_unlock(&mu);
}

void hr_fault_arm_thread(long k) {
    pthread_mutex_lock(&mu);
    thread_fail_at = k;
    pthread_mutex_unlock(&mu);
}

void hr_fault_stop(hr_fault_stats *st) {
    pthread_mutex_lock(&mu);
    tracking = 0;
    fail_at = thread_fail_at = -1;
    if (st) {
        *st = (hr_fault_stats){.calls = calls,
                               .failed = failed,
                               .threads = threads,
                               .threads_failed = threads_failed,
                               .live = (long)live,
                               .live_bytes = live_bytes,
                               .n_sites = n_sites,
                               .n_fail_stack = n_fail_stack};
        memcpy(st->fail_stack, fail_stack, sizeof fail_stack);
        for (size_t i = 0; i < cap && !st->first_leak; i++)
            if (tab[i].p && tab[i].p != TOMB) {
                st->first_leak = tab[i].p;
                st->first_leak_site = tab[i].site;
            }
    }
    __real_free(tab);
    tab = NULL;
    cap = used = live = live_bytes = 0;
    pthread_mutex_unlock(&mu);
}

/* Keeps the stack of the first injected failure (outside mu: backtrace may allocate). */
static void failed_here(void) {
    pthread_mutex_lock(&mu);
    int want = want_stack;
    want_stack = 0;
    pthread_mutex_unlock(&mu);
    if (!want) return;
    void *frames[16];
    int n = backtrace(frames, 16);
    pthread_mutex_lock(&mu);
    memcpy(fail_stack, frames, sizeof frames);
    n_fail_stack = n;
    pthread_mutex_unlock(&mu);
}

long hr_fault_site_first(int i) { return site_first[i]; }
void *hr_fault_site_addr(int i) { return sites[i]; }

/* Counts an allocation from site; 1 when it must fail (its stack then kept). */
static int must_fail(void *site) {
    pthread_mutex_lock(&mu);
    int fail = should_fail(site);
    pthread_mutex_unlock(&mu);
    if (fail) failed_here();
    return fail;
}

static void record(void *p, size_t bytes, void *site) {
    pthread_mutex_lock(&mu);
    add_live(p, bytes, site);
    pthread_mutex_unlock(&mu);
}

/* One wrapper body: count, maybe fail, call the real allocator, record the block. */
#define WRAPPED(type, bytes, call)                                                                 \
    do {                                                                                           \
        void *site_ = __builtin_return_address(0);                                                 \
        if (must_fail(site_)) return NULL;                                                         \
        type r_ = call;                                                                            \
        record(r_, bytes, site_);                                                                  \
        return r_;                                                                                 \
    } while (0)

void *__wrap_malloc(size_t n) { WRAPPED(void *, n, __real_malloc(n)); }
void *__wrap_calloc(size_t k, size_t n) { WRAPPED(void *, k *n, __real_calloc(k, n)); }
char *__wrap_strdup(const char *s) { WRAPPED(char *, strlen(s) + 1, __real_strdup(s)); }
char *__wrap_strndup(const char *s, size_t n) { WRAPPED(char *, n + 1, __real_strndup(s, n)); }
void *__wrap_aligned_alloc(size_t a, size_t n) { WRAPPED(void *, n, __real_aligned_alloc(a, n)); }

void *__wrap_realloc(void *p, size_t n) {
    void *site = __builtin_return_address(0);
    if (must_fail(site)) return NULL;
    void *r = __real_realloc(p, n);
    pthread_mutex_lock(&mu);
    if (r || n == 0) {
        size_t before = live;
        if (p) drop_live(p);
        /* a block from before tracking that moved stays untracked */
        if (r && (!p || live < before)) add_live(r, n, site);
    }
    pthread_mutex_unlock(&mu);
    return r;
}

void __wrap_free(void *p) {
    if (!p) return;
    pthread_mutex_lock(&mu);
    drop_live(p);
    pthread_mutex_unlock(&mu);
    __real_free(p);
}

int __wrap_posix_memalign(void **out, size_t a, size_t n) {
    void *site = __builtin_return_address(0);
    if (must_fail(site)) return 12; /* ENOMEM */
    int rc = __real_posix_memalign(out, a, n);
    if (!rc) record(*out, n, site);
    return rc;
}

/* Only anonymous maps are memory; a file map failing is an I/O error, not tested here. */
void *__wrap_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off) {
    if (!(flags & MAP_ANONYMOUS)) return __real_mmap(addr, n, prot, flags, fd, off);
    void *site = __builtin_return_address(0);
    if (must_fail(site)) return MAP_FAILED;
    void *r = __real_mmap(addr, n, prot, flags, fd, off);
    if (r != MAP_FAILED) record(r, n, site);
    return r;
}

int __wrap_munmap(void *addr, size_t n) {
    pthread_mutex_lock(&mu);
    drop_live(addr);
    pthread_mutex_unlock(&mu);
    return __real_munmap(addr, n);
}

json_t *__wrap_json_loadb(const char *buf, size_t n, size_t flags, json_error_t *e) {
    in_parser++;
    json_t *r = __real_json_loadb(buf, n, flags, e);
    in_parser--;
    return r;
}

json_t *__wrap_json_loads(const char *str, size_t flags, json_error_t *e) {
    in_parser++;
    json_t *r = __real_json_loads(str, flags, e);
    in_parser--;
    return r;
}

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
    pthread_mutex_lock(&mu);
    int fail = tracking && threads == thread_fail_at;
    threads += tracking;
    threads_failed += fail;
    pthread_mutex_unlock(&mu);
    return fail ? 11 /* EAGAIN */ : __real_pthread_create(t, a, fn, arg);
}
