/* LD_PRELOAD shim for tests/cli/test_proc_fail.sh: fork, pipe2 and accept/accept4 calls of
 * the process (hearth's, the --isolate supervisor's, and libmicrohttpd's accepts) are
 * counted per function, and HEARTH_FAULT_FORK, HEARTH_FAULT_PIPE2 and HEARTH_FAULT_ACCEPT
 * ("N[:K[:ERRNO]]") make calls N to N + K - 1 (0-based, K default 1) of that function fail
 * with ERRNO (default EAGAIN for fork, EMFILE for the others); every other call is libc's.
 * The variables are read and removed before main, so a child the process runs (the
 * --isolate engine) fails nothing. */
#define _GNU_SOURCE /* RTLD_NEXT, pipe2, accept4 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
    const char *var;
    int dflt_errno;
    long from, count;
    int err;
    atomic_long calls;
} fault;

enum { F_FORK, F_PIPE2, F_ACCEPT, F_N };
static fault faults[F_N] = {{"HEARTH_FAULT_FORK", EAGAIN, -1, 0, 0, 0},
                            {"HEARTH_FAULT_PIPE2", EMFILE, -1, 0, 0, 0},
                            {"HEARTH_FAULT_ACCEPT", EMFILE, -1, 0, 0, 0}};

__attribute__((constructor)) static void read_env(void) {
    for (int i = 0; i < F_N; i++) {
        fault *f = &faults[i];
        const char *v = getenv(f->var);
        f->err = f->dflt_errno;
        if (!v) continue;
        char *end;
        f->from = strtol(v, &end, 10);
        f->count = *end == ':' ? strtol(end + 1, &end, 10) : 1;
        if (*end == ':') f->err = (int)strtol(end + 1, NULL, 10);
        unsetenv(f->var);
    }
}

/* Whether this call of fault i fails (errno set). */
static int fails(int i) {
    fault *f = &faults[i];
    long n = atomic_fetch_add(&f->calls, 1);
    if (f->from < 0 || n < f->from || n >= f->from + f->count) return 0;
    errno = f->err;
    return 1;
}

pid_t fork(void) {
    if (fails(F_FORK)) return -1;
    pid_t (*real)(void) = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
    return real();
}

int pipe2(int fds[2], int flags) {
    if (fails(F_PIPE2)) return -1;
    int (*real)(int[2], int) = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2");
    return real(fds, flags);
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    if (fails(F_ACCEPT)) return -1;
    int (*real)(int, struct sockaddr *, socklen_t *, int) =
        (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    return real(fd, addr, len, flags);
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    if (fails(F_ACCEPT)) return -1;
    int (*real)(int, struct sockaddr *, socklen_t *) =
        (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    return real(fd, addr, len);
}
