/* The accept loop of a listener, outside libmicrohttpd; see acceptor.h. */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "server/acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "base/thread.h"

#define BACKOFF_FIRST_MS 10
#define BACKOFF_MAX_MS 1000

struct hr_acceptor {
    int fd;
    struct MHD_Daemon *d;
    int (*full)(void *cls);
    void *cls;
    int wake[2]; /* written by hr_acceptor_stop */
    pthread_t thread;
    int running;
};

/* A failure that lasts until descriptors or memory are given back. */
static int short_of_resources(int err) {
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

/* Waits up to ms (-1: forever) for a connection or the stop; 0 when stopped. */
static int wait_turn(hr_acceptor *a, int ms) {
    struct pollfd p[2] = {{.fd = a->wake[0], .events = POLLIN}, {.fd = a->fd, .events = POLLIN}};
    return poll(p, ms < 0 ? 2 : 1, ms) < 0 || !p[0].revents;
}

static void *run(void *arg) {
    hr_acceptor *a = arg;
    int delay_ms = 0;
    long failures = 0;
    while (wait_turn(a, -1)) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int c = accept4(a->fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
        if (c >= 0) {
            if (failures) HR_INFO("accepting again after %ld failed accepts", failures);
            delay_ms = 0, failures = 0;
            if (a->full(a->cls)) {
                close(c); /* refused at once, as libmicrohttpd refuses past its limit */
                continue;
            }
            MHD_add_connection(a->d, c, (struct sockaddr *)&ss, len); /* closes c on failure */
            continue;
        }
        if (!short_of_resources(errno)) continue; /* EAGAIN, ECONNABORTED, EINTR */
        if (!failures++)
            HR_WARN("cannot accept a connection: %s; retrying from %d ms to %d ms apart",
                    strerror(errno), BACKOFF_FIRST_MS, BACKOFF_MAX_MS);
        delay_ms = delay_ms ? delay_ms * 2 : BACKOFF_FIRST_MS;
        if (delay_ms > BACKOFF_MAX_MS) delay_ms = BACKOFF_MAX_MS;
        if (!wait_turn(a, delay_ms)) break;
    }
    return NULL;
}

hr_err *hr_acceptor_start(int listen_fd, struct MHD_Daemon *d, int (*full)(void *cls), void *cls,
                          hr_acceptor **out) {
    hr_acceptor *a = calloc(1, sizeof *a);
    if (!a) return close(listen_fd), hr_err_oom();
    *a = (hr_acceptor){.fd = listen_fd, .d = d, .full = full, .cls = cls, .wake = {-1, -1}};
    fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
    hr_err *e = NULL;
    if (pipe2(a->wake, O_CLOEXEC)) e = hr_errf("pipe: %s", strerror(errno));
    if (!e) e = hr_thread_start(&a->thread, run, a, "accept");
    if (e) return hr_acceptor_free(a), e;
    a->running = 1;
    *out = a;
    return NULL;
}

void hr_acceptor_stop(hr_acceptor *a) {
    if (!a || !a->running) return;
    ssize_t w = write(a->wake[1], "x", 1);
    (void)w;
    pthread_join(a->thread, NULL);
    a->running = 0;
    shutdown(a->fd, SHUT_RDWR);
}

void hr_acceptor_free(hr_acceptor *a) {
    if (!a) return;
    hr_acceptor_stop(a);
    close(a->fd);
    for (int i = 0; i < 2; i++)
        if (a->wake[i] >= 0) close(a->wake[i]);
    free(a);
}
