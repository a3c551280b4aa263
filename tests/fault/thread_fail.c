/* LD_PRELOAD shim for tests/cli/test_thread_fail.sh: thread start number HEARTH_FAULT_THREAD
 * (0-based, counted over the whole process: hearth's, all through hr_thread_start, and
 * libmicrohttpd's own) fails with EAGAIN; every other start is libc's pthread_create. The
 * variable is read and removed before main, so a child the process runs (the --isolate
 * engine) inherits the shim but fails nothing. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static atomic_long starts;
static long fail_at = -1;

__attribute__((constructor)) static void read_env(void) {
    const char *n = getenv("HEARTH_FAULT_THREAD");
    if (n) fail_at = atol(n);
    unsetenv("HEARTH_FAULT_THREAD");
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
    create_fn real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (atomic_fetch_add(&starts, 1) == fail_at) return EAGAIN;
    return real(t, a, fn, arg);
}
