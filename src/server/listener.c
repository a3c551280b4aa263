/* The libmicrohttpd listener and the header checks shared by the engine server and the
 * --isolate proxy; see listener.h. */
#define _GNU_SOURCE /* POLLRDHUP */
#include "server/listener.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "server/acceptor.h"
#include "server/unix_socket.h"

struct hr_listener {
    hr_listener_config cfg;
    struct MHD_Daemon *d;
    hr_conn_guard *guard; /* NULL: no deadline */
    int port;
    hr_acceptor *acc; /* accepts for d (quiesced at once), its socket closed after d stops */
    atomic_uint open; /* connections started and not closed, at most cfg.max_connections */
};

/* The socket context of a connection refused past --max-connections (the deadline guard's
 * node otherwise). */
static char refused_mark;

/* Descriptors kept beside the connections: the listener, the engine's files, logs. */
#define FD_MARGIN 32

/* --max-connections needs as many descriptors (times fds_per_connection): raises the soft
 * RLIMIT_NOFILE toward the hard one if it is short, else lowers the connection limit to
 * fit (with a warning), so accept() does not fail with EMFILE for want of them. */
static void fit_fd_limit(hr_listener_config *cfg) {
    struct rlimit rl;
    rlim_t per = cfg->fds_per_connection ? cfg->fds_per_connection : 1;
    rlim_t need = (rlim_t)cfg->max_connections * per + FD_MARGIN;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return;
    struct rlimit raised = {
        rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max, rl.rlim_max};
    if (raised.rlim_cur > rl.rlim_cur && !setrlimit(RLIMIT_NOFILE, &raised)) rl = raised;
    if (rl.rlim_cur >= need) return;
    unsigned fit = rl.rlim_cur > FD_MARGIN + per ? (unsigned)((rl.rlim_cur - FD_MARGIN) / per) : 1;
    HR_WARN("--max-connections %u needs %llu file descriptors but the limit is %llu (ulimit -n): "
            "serving at most %u connections",
            cfg->max_connections, (unsigned long long)need, (unsigned long long)rl.rlim_cur, fit);
    cfg->max_connections = fit;
}

static hr_err *resolve(const char *host, int port, struct sockaddr_storage *ss, int *v6) {
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc) return hr_errf("--host %s: %s", host, gai_strerror(rc));
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    return NULL;
}

/* The acceptor's test: every slot taken (it closes the connection instead of handing it
 * over). */
static int full(void *cls) {
    hr_listener *l = cls;
    return atomic_load(&l->open) >= l->cfg.max_connections;
}

/* MHD_OPTION_NOTIFY_CONNECTION: --max-connections is enforced here, where each connection
 * starts (in the daemon's thread), not by libmicrohttpd's own limit (see start_daemon). One
 * past it is shut down at once and marked, so that a request it had already sent is
 * refused unread; the deadline guard sees the others. */
static void on_notify(void *cls, struct MHD_Connection *c, void **ctx,
                      enum MHD_ConnectionNotificationCode code) {
    hr_listener *l = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED && *ctx == &refused_mark) {
        *ctx = NULL;
        return;
    }
    if (code == MHD_CONNECTION_NOTIFY_STARTED &&
        atomic_fetch_add(&l->open, 1) >= l->cfg.max_connections) {
        atomic_fetch_sub(&l->open, 1);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) shutdown(ci->connect_fd, SHUT_RDWR);
        *ctx = &refused_mark;
        return;
    }
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) atomic_fetch_sub(&l->open, 1);
    if (l->guard) hr_conn_guard_notify(l->guard, c, ctx, code);
}

static int refused(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci && ci->socket_context == &refused_mark;
}

/* The access handler: the owner's, but for a refused connection (closed). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    hr_listener *l = cls;
    if (refused(c)) return MHD_NO;
    return l->cfg.on_request(l->cfg.cls, c, url, method, version, upload, upload_size, con_cls);
}

/* MHD_OPTION_URI_LOG_CALLBACK: the request line is in, its deadline starts. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    hr_listener *l = cls;
    if (refused(c)) return NULL;
    if (l->guard) hr_conn_guard_request_line(l->guard, uri, c);
    return l->cfg.on_uri ? l->cfg.on_uri(l->cfg.cls, uri, c) : NULL;
}

static void listener_free(hr_listener *l) {
    hr_conn_guard_stop(l->guard);
    free(l);
}

static hr_err *start_daemon(hr_listener *l, int unix_fd, struct sockaddr_storage *ss, int v6) {
    const hr_listener_config *cfg = &l->cfg;
    /* MHD_USE_ITC lets the acceptor take the listening socket over (MHD_quiesce_daemon).
     * libmicrohttpd's connection limit is set beyond reach (each connection it counts holds
     * a descriptor): 0.9.75 leaves its connection mutex locked when a connection added with
     * MHD_add_connection finds the limit reached in the daemon's thread (fixed in 1.0.0),
     * and every thread then waits on it; on_notify enforces --max-connections instead. */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ITC | (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_OptionItem where[] = {
        unix_fd >= 0 ? (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, unix_fd, NULL}
                     : (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, ss},
        {MHD_OPTION_END, 0, NULL}};
    l->d = MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, on_request, l, MHD_OPTION_ARRAY, where,
        MHD_OPTION_NOTIFY_COMPLETED, cfg->on_completed, cfg->cls, MHD_OPTION_CONNECTION_TIMEOUT,
        cfg->timeout_s, MHD_OPTION_CONNECTION_LIMIT, UINT_MAX, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        unix_fd >= 0 ? 0u : cfg->max_connections_per_ip, MHD_OPTION_NOTIFY_CONNECTION, on_notify, l,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, l, MHD_OPTION_END);
    if (l->d) {
        MHD_socket fd = MHD_quiesce_daemon(l->d); /* the acceptor accepts from here */
        hr_err *e = fd == MHD_INVALID_SOCKET ? hr_errf("cannot take over the listening socket")
                                             : hr_acceptor_start(fd, l->d, full, l, &l->acc);
        if (e) MHD_stop_daemon(l->d), l->d = NULL;
        return e;
    }
    int err = errno; /* libmicrohttpd's: the bind's, or its listening thread's start */
    if (unix_fd >= 0) close(unix_fd);
    if (cfg->unix_socket)
        return hr_errf("cannot serve on unix:%s: %s", cfg->unix_socket, strerror(err));
    return hr_errf("cannot listen on %s:%d: %s", cfg->host, cfg->port, strerror(err));
}

hr_err *hr_listener_start(const hr_listener_config *cfg, hr_listener **out) {
    if (cfg->port < 0 || cfg->port > 65535)
        return hr_errf("--port %d is not a TCP port", cfg->port);
    hr_listener *l = calloc(1, sizeof *l);
    if (!l) return hr_err_oom();
    l->cfg = *cfg;
    if (!l->cfg.host) l->cfg.host = "127.0.0.1";
    fit_fd_limit(&l->cfg);
    struct sockaddr_storage ss;
    int v6 = 0, unix_fd = -1;
    hr_err *e = cfg->unix_socket ? hr_unix_listen(cfg->unix_socket, &unix_fd)
                                 : resolve(l->cfg.host, cfg->port, &ss, &v6);
    if (!e && cfg->request_timeout_s)
        e = hr_conn_guard_start(cfg->request_timeout_s, cfg->timeout_s, &l->guard);
    if (e && unix_fd >= 0) close(unix_fd);
    *out = l; /* before libmicrohttpd's threads start: the callbacks may read it at once */
    if (!e) e = start_daemon(l, unix_fd, &ss, v6);
    if (e) return *out = NULL, listener_free(l), e;
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(l->d, MHD_DAEMON_INFO_BIND_PORT);
    l->port = di ? di->port : cfg->port;
    return NULL;
}

unsigned hr_listener_seconds(int s, unsigned dflt) { return s < 0 ? 0 : s ? (unsigned)s : dflt; }

enum MHD_Result hr_listener_add_headers(struct MHD_Response *r, const char *const *kv) {
    for (; kv[0]; kv += 2)
        if (kv[1] && MHD_add_response_header(r, kv[0], kv[1]) != MHD_YES) return MHD_NO;
    return MHD_YES;
}

enum MHD_Result hr_listener_reply_oom_api(struct MHD_Connection *c, hr_api_kind api) {
    static const char *const headers[] = {
        "Content-Type", "application/json", "Retry-After", "1", "Connection", "close", NULL};
    const char *b = hr_oom_body(api);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(b), (void *)b, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    enum MHD_Result ok = hr_listener_add_headers(r, headers);
    if (ok == MHD_YES) ok = MHD_queue_response(c, 503, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result hr_listener_reply_oom(struct MHD_Connection *c, const char *url) {
    return hr_listener_reply_oom_api(c, hr_http_api_of(c, url, NULL));
}

int hr_listener_port(const hr_listener *l) { return l->port; }

unsigned hr_listener_max_connections(const hr_listener *l) { return l->cfg.max_connections; }

hr_conn_guard *hr_listener_guard(const hr_listener *l) { return l->guard; }

void hr_listener_quiesce(hr_listener *l) { hr_acceptor_stop(l->acc); }

void hr_listener_stop(hr_listener *l) {
    if (!l) return;
    hr_acceptor_stop(l->acc);
    MHD_stop_daemon(l->d);
    hr_acceptor_free(l->acc);
    listener_free(l);
}

int hr_listener_client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 1;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* libmicrohttpd 0.9.75 restarts the timer only when the previous timeout was 0, hence the
 * two calls. */
void hr_listener_keep_alive(struct MHD_Connection *c, unsigned timeout_s) {
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, timeout_s);
}

long hr_listener_connections(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
    const union MHD_DaemonInfo *di =
        ci ? MHD_get_daemon_info(ci->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
    return di ? (long)di->num_connections : -1;
}

/* The headers that say where a request body ends, as sent (libmicrohttpd keeps the first
 * Content-Length and reads any Transfer-Encoding but chunked up to the connection's end). */
typedef struct {
    int n_length, lengths_differ;
    const char *length, *encoding;
} framing;

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value) {
    framing *f = cls;
    if (!strcasecmp(key, "Content-Length")) {
        if (f->n_length++ && strcmp(f->length, value)) f->lengths_differ = 1;
        f->length = value;
    }
    if (!strcasecmp(key, "Transfer-Encoding")) f->encoding = value;
    return MHD_YES;
}

int hr_http_framing_status(struct MHD_Connection *c, char *msg, size_t cap) {
    framing f = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, framing_header, &f);
    if (f.lengths_differ) return snprintf(msg, cap, "conflicting Content-Length headers"), 400;
    if (f.encoding && f.n_length)
        return snprintf(msg, cap, "both Transfer-Encoding and Content-Length are set"), 400;
    if (f.encoding && strcasecmp(f.encoding, "chunked")) {
        snprintf(msg, cap, "Transfer-Encoding \"%.60s\" is not supported (only chunked)",
                 f.encoding);
        return 501;
    }
    return 0;
}

int hr_http_too_large(size_t max_body, char *msg, size_t cap) {
    snprintf(msg, cap, "request body is larger than %zu bytes (--max-body-mb)", max_body);
    return 413;
}

/* Compares in time independent of where the strings differ. */
static int key_equal(const char *given, const char *key) {
    size_t n = strlen(key), m = strlen(given);
    unsigned char diff = n != m;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(key[i] ^ given[i < m ? i : 0]);
    return !diff;
}

/* "Authorization: Bearer KEY" (OpenAI) or "x-api-key: KEY" (Anthropic). */
static int authorized(const char *key, struct MHD_Connection *c) {
    if (!key) return 1;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *xkey = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
    if (xkey && key_equal(xkey, key)) return 1;
    return auth && !strncmp(auth, "Bearer ", 7) && key_equal(auth + 7, key);
}

/* The body size the headers announce: Content-Length, or for a chunked body (no length)
 * the largest one accepted. */
static uint64_t announced_length(size_t max_body, struct MHD_Connection *c) {
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl) return strtoull(cl, NULL, 10);
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    return te ? max_body : 0;
}

int hr_http_head_status(struct MHD_Connection *c, const char *url, const char *method,
                        const char *api_key, size_t max_body, const hr_route **rt, uint64_t *len,
                        char *msg, size_t cap) {
    *rt = NULL;
    *len = 0;
    int status = hr_http_framing_status(c, msg, cap);
    if (status) return status;
    char allowed[64];
    *rt = hr_route_find(url, method, allowed, sizeof allowed);
    if (!*rt && !allowed[0]) return snprintf(msg, cap, "unknown route"), 404;
    if (!*rt) return snprintf(msg, cap, "%.80s takes %s, not %s", url, allowed, method), 405;
    if ((*rt)->auth && !authorized(api_key, c))
        return snprintf(msg, cap, "invalid or missing API key"), 401;
    *len = announced_length(max_body, c);
    return *len > max_body ? hr_http_too_large(max_body, msg, cap) : 0;
}

hr_api_kind hr_http_api_of(struct MHD_Connection *c, const char *url, const hr_route *rt) {
    if (rt) return rt->api;
    if (!strncmp(url, "/v1/messages", 12) ||
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "anthropic-version"))
        return HR_API_MESSAGES;
    return HR_API_CHAT;
}
