/* LD_PRELOAD shim for tests/cli/test_mhd_alloc_fail.sh: malloc, calloc, realloc and strdup
 * called from libmicrohttpd's code (the caller's return address in its executable
 * segments) are counted, and numbers HEARTH_FAULT_MHD_ALLOC to HEARTH_FAULT_MHD_ALLOC +
 * HEARTH_FAULT_MHD_COUNT - 1 (0-based, default count 1) fail with ENOMEM; hearth's own
 * allocations and every other library's go through untouched. The blocks libmicrohttpd
 * holds are tracked, and at exit the shim prints to stderr
 * "mhd_alloc_fail: A allocations, F failed, L live" (L: blocks it allocated and nobody
 * freed, after MHD_stop_daemon: a leak). The variables are read and removed before main,
 * so a child the process runs (the --isolate engine) fails nothing. Everything forwards to
 * the next definition (libc's, or the sanitizer's interceptors). */
#define _GNU_SOURCE /* RTLD_NEXT, dl_iterate_phdr */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);

static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static free_fn real_free;

/* dlsym may allocate while the real functions are being looked up: from here, never freed. */
static _Alignas(16) char boot[4096];
static size_t boot_used;
static int resolving;

#define MAX_SEGS 8
static uintptr_t seg_lo[MAX_SEGS], seg_hi[MAX_SEGS];
static int n_segs;

static long fail_from = -1, fail_count = 1;
static atomic_long allocs, failed;

/* The live blocks libmicrohttpd allocated: open addressing, 1 marks a deleted slot. */
#define LIVE_SLOTS (1u << 16)
static void *live[LIVE_SLOTS];
static long n_live;
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;

static void *boot_alloc(size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (boot_used + n > sizeof boot) return NULL;
    void *p = boot + boot_used;
    boot_used += n;
    return p;
}

static int in_boot(const void *p) {
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static void resolve(void) {
    if (real_free) return;
    resolving = 1;
    real_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
    real_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
    real_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
    real_free = (free_fn)dlsym(RTLD_NEXT, "free");
    resolving = 0;
}

static int find_mhd(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size, (void)data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libmicrohttpd")) return 0;
    for (int i = 0; i < info->dlpi_phnum && n_segs < MAX_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        seg_lo[n_segs] = info->dlpi_addr + ph->p_vaddr;
        seg_hi[n_segs++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    return 1;
}

static int from_mhd(const void *ret) {
    for (int i = 0; i < n_segs; i++)
        if ((uintptr_t)ret >= seg_lo[i] && (uintptr_t)ret < seg_hi[i]) return 1;
    return 0;
}

static size_t slot_of(const void *p) { return ((uintptr_t)p >> 4) * 2654435761u % LIVE_SLOTS; }

static void live_add(void *p) {
    pthread_mutex_lock(&live_mu);
    size_t i = slot_of(p);
    while (live[i] && live[i] != (void *)1)
        i = (i + 1) % LIVE_SLOTS;
    live[i] = p;
    n_live++;
    pthread_mutex_unlock(&live_mu);
}

static void live_remove(void *p) {
    if (!p || !__atomic_load_n(&n_live, __ATOMIC_RELAXED)) return;
    pthread_mutex_lock(&live_mu);
    for (size_t i = slot_of(p), k = 0; live[i] && k < LIVE_SLOTS; i = (i + 1) % LIVE_SLOTS, k++)
        if (live[i] == p) {
            live[i] = (void *)1;
            n_live--;
            break;
        }
    pthread_mutex_unlock(&live_mu);
}

/* A call from libmicrohttpd: whether this one fails (counted either way). */
static int should_fail(const void *ret) {
    if (!from_mhd(ret)) return 0;
    long n = atomic_fetch_add(&allocs, 1);
    if (fail_from < 0 || n < fail_from || n >= fail_from + fail_count) return 0;
    atomic_fetch_add(&failed, 1);
    return 1;
}

/* The result of an allocation for the caller at ret: tracked when libmicrohttpd's. */
static void *track(void *p, const void *ret) {
    if (p && from_mhd(ret)) live_add(p);
    return p;
}

/* Calls from elsewhere are tail calls (the shim is built with -O2 and no sanitizer), so
 * the sanitizer sees their real caller: LeakSanitizer treats the dynamic loader's blocks
 * as live only when the loader called it. */
void *malloc(size_t n) {
    if (resolving) return boot_alloc(n);
    resolve();
    const void *ret = __builtin_return_address(0);
    if (!from_mhd(ret)) return real_malloc(n);
    if (should_fail(ret)) return errno = ENOMEM, NULL;
    return track(real_malloc(n), ret);
}

void *calloc(size_t n, size_t size) {
    if (resolving) return boot_alloc(n * size); /* static: zeroed */
    resolve();
    const void *ret = __builtin_return_address(0);
    if (!from_mhd(ret)) return real_calloc(n, size);
    if (should_fail(ret)) return errno = ENOMEM, NULL;
    return track(real_calloc(n, size), ret);
}

void *realloc(void *p, size_t n) {
    resolve();
    const void *ret = __builtin_return_address(0);
    if (should_fail(ret)) return errno = ENOMEM, NULL;
    void *q = real_realloc(p, n);
    if (q || !n) live_remove(p);
    return track(q, ret);
}

char *strdup(const char *s) {
    resolve();
    const void *ret = __builtin_return_address(0);
    if (should_fail(ret)) return errno = ENOMEM, NULL;
    size_t n = strlen(s) + 1;
    char *d = real_malloc(n);
    if (d) memcpy(d, s, n);
    return track(d, ret);
}

void free(void *p) {
    if (!p || in_boot(p)) return;
    resolve();
    live_remove(p);
    real_free(p);
}

__attribute__((constructor)) static void setup(void) {
    resolve();
    const char *n = getenv("HEARTH_FAULT_MHD_ALLOC"), *c = getenv("HEARTH_FAULT_MHD_COUNT");
    if (n) fail_from = atol(n);
    if (c) fail_count = atol(c);
    unsetenv("HEARTH_FAULT_MHD_ALLOC");
    unsetenv("HEARTH_FAULT_MHD_COUNT");
    dl_iterate_phdr(find_mhd, NULL);
}

__attribute__((destructor)) static void report(void) {
    char line[160];
    int len = snprintf(line, sizeof line, "mhd_alloc_fail: %ld allocations, %ld failed, %ld live\n",
                       atomic_load(&allocs), atomic_load(&failed), n_live);
    ssize_t w = write(2, line, (size_t)len);
    (void)w;
}
