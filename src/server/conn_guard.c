/* The request deadline watcher (conn_guard.h). Each connection has a node (its
 * socket_context) with the time its current request must be read by (0: none, the request
 * is being answered); a thread checks the list every 100 ms and shuts down the sockets
 * that are late. libmicrohttpd reports a connection closed before it closes the socket,
 * so a node never names a reused descriptor. */
#include "server/conn_guard.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/thread.h"

typedef struct guard_node {
    struct guard_node *prev, *next;
    MHD_socket fd;
    uint64_t deadline_ns; /* 0: not reading a request */
    int cut;
} guard_node;

struct hr_conn_guard {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t thread;
    guard_node *head;
    uint64_t timeout_ns, idle_ns;
    uint64_t n_cut;
    int stopping;
};

static void cut_late(hr_conn_guard *g, uint64_t now) {
    for (guard_node *n = g->head; n; n = n->next) {
        if (n->cut || !n->deadline_ns || now < n->deadline_ns) continue;
        n->cut = 1;
        g->n_cut++;
        shutdown(n->fd, SHUT_RDWR);
        HR_WARN(
            "closed a connection whose request did not arrive within %.0f s (--request-timeout)",
            (double)g->timeout_ns * 1e-9);
    }
}

static void *watch(void *arg) {
    hr_conn_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stopping) {
        cut_late(g, hr_now_ns());
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 100000000L;
        t.tv_sec += t.tv_nsec / 1000000000L;
        t.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&g->wake, &g->mu, &t);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

hr_err *hr_conn_guard_start(unsigned timeout_s, unsigned idle_s, hr_conn_guard **out) {
    hr_conn_guard *g = calloc(1, sizeof *g);
    if (!g) return hr_err_oom();
    g->timeout_ns = (uint64_t)timeout_s * 1000000000u;
    g->idle_ns = (uint64_t)idle_s * 1000000000u;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->wake, NULL);
    hr_err *e = hr_thread_start(&g->thread, watch, g, "request deadline");
    if (e) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->wake);
        free(g);
        return e;
    }
    *out = g;
    return NULL;
}

void hr_conn_guard_stop(hr_conn_guard *g) {
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stopping = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    while (g->head) {
        guard_node *n = g->head;
        g->head = n->next;
        free(n);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->wake);
    free(g);
}

static void link_node(hr_conn_guard *g, guard_node *n) {
    n->next = g->head;
    if (g->head) g->head->prev = n;
    g->head = n;
}

static void unlink_node(hr_conn_guard *g, guard_node *n) {
    if (n->prev)
        n->prev->next = n->next;
    else
        g->head = n->next;
    if (n->next) n->next->prev = n->prev;
}

void hr_conn_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    hr_conn_guard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        guard_node *n = ci ? calloc(1, sizeof *n) : NULL;
        if (!n) return; /* out of memory: this connection has only the idle timeout */
        n->fd = ci->connect_fd;
        n->deadline_ns = hr_now_ns() + g->timeout_ns;
        pthread_mutex_lock(&g->mu);
        link_node(g, n);
        pthread_mutex_unlock(&g->mu);
        *socket_context = n;
        return;
    }
    guard_node *n = *socket_context;
    if (!n) return;
    pthread_mutex_lock(&g->mu);
    unlink_node(g, n);
    pthread_mutex_unlock(&g->mu);
    free(n);
    *socket_context = NULL;
}

/* Sets c's deadline to now + after_ns (0: none). */
static void set_deadline(hr_conn_guard *g, struct MHD_Connection *c, uint64_t after_ns, int none) {
    if (!g) return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    guard_node *n = ci ? ci->socket_context : NULL;
    if (!n) return;
    pthread_mutex_lock(&g->mu);
    n->deadline_ns = none ? 0 : hr_now_ns() + after_ns;
    pthread_mutex_unlock(&g->mu);
}

void *hr_conn_guard_request_line(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)uri;
    hr_conn_guard *g = cls;
    set_deadline(g, c, g->timeout_ns, 0);
    return NULL;
}

void hr_conn_guard_read(hr_conn_guard *g, struct MHD_Connection *c) { set_deadline(g, c, 0, 1); }

/* Without an idle timeout a kept-alive connection may wait forever for its next request,
 * so the deadline starts only with its request line. */
void hr_conn_guard_answered(hr_conn_guard *g, struct MHD_Connection *c) {
    set_deadline(g, c, g->idle_ns + g->timeout_ns, g->idle_ns == 0);
}

uint64_t hr_conn_guard_cut(hr_conn_guard *g) {
    if (!g) return 0;
    pthread_mutex_lock(&g->mu);
    uint64_t n = g->n_cut;
    pthread_mutex_unlock(&g->mu);
    return n;
}
