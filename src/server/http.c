/* The HTTP listener on libmicrohttpd, one thread per connection up to a connection limit,
 * each closed after a timeout of client silence (not counting time spent waiting on the
 * engine): body collection with a size limit, API-key check, routing (404 unknown path,
 * 405 wrong method), JSON replies, and SSE streams that notice a vanished client (poll for
 * RDHUP while waiting on the engine) and cancel its request. Generation routes are in
 * routes.c. */
#define _GNU_SOURCE /* POLLRDHUP */
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "server/http_internal.h"

static const char *SSE_TYPE = "text/event-stream";

/* The Responses store's bounds (docs/server.md): most recently used responses first. */
#define HR_RESPONSE_STORE_ENTRIES 256
#define HR_RESPONSE_STORE_BYTES (64u << 20)

hr_err *hr_http_reply_json(struct MHD_Connection *c, int status, json_t *body) {
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!s) return hr_err_oom();
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    if (!r) return free(s), hr_err_oom();
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? NULL : hr_errf("could not queue a response");
}

hr_err *hr_http_reply_text(struct MHD_Connection *c, int status, const char *type, char *text) {
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) return free(text), hr_err_oom();
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? NULL : hr_errf("could not queue a response");
}

hr_err *hr_http_reply_error(struct MHD_Connection *c, hr_api_kind api, int status,
                            const char *msg) {
    return hr_http_reply_json(c, status, hr_error_body(api, status, msg));
}

/* The client closed its end (poll RDHUP without blocking). */
static int client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 1;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

void hr_http_gen_free(hr_http_gen *g) {
    if (!g) return;
    free(g->pending);
    hr_reply_free(g->reply);
    hr_chan_release(g->chan);
    free(g);
}

/* Waits for the engine's next events; on a vanished client cancels the request and
 * keeps draining until the engine finishes it (it borrows the request until then). */
void hr_http_gen_wait(hr_http_gen *g) {
    if (g->done) return;
    g->done = hr_chan_drain(g->chan, g->reply, 50);
    /* The client is not the one being waited on: restart its idle timer, so a long
     * prefill or a slow engine does not count as a silent client. libmicrohttpd 0.9.75
     * restarts it only when the previous timeout was 0, hence the two calls. */
    MHD_set_connection_option(g->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    MHD_set_connection_option(g->conn, MHD_CONNECTION_OPTION_TIMEOUT, g->timeout_s);
    if (!g->cancelled && client_gone(g->conn)) {
        g->cancelled = 1;
        hr_chan_cancel(g->chan, g->be->cancel, g->be->ctx);
    }
}

void hr_http_gen_stop(hr_http_gen *g) {
    if (g->done) return;
    hr_chan_cancel(g->chan, g->be->cancel, g->be->ctx);
    while (!g->done)
        g->done = hr_chan_drain(g->chan, g->reply, 50);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
    hr_http_gen *g = cls;
    for (;;) {
        if (g->off < g->len) {
            size_t n = g->len - g->off < max ? g->len - g->off : max;
            memcpy(buf, g->pending + g->off, n);
            g->off += n;
            return (ssize_t)n;
        }
        free(g->pending);
        g->pending = hr_reply_take(g->reply, &g->len);
        g->off = 0;
        if (g->len) continue;
        if (g->done) return MHD_CONTENT_READER_END_OF_STREAM;
        if (g->cancelled) {
            while (!g->done)
                hr_http_gen_wait(g);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        hr_http_gen_wait(g);
    }
}

/* Runs when the stream ends or the connection dies: make sure the engine stops. */
static void sse_free(void *cls) {
    hr_http_gen *g = cls;
    hr_http_gen_stop(g);
    hr_http_gen_free(g);
}

hr_err *hr_http_reply_sse(struct MHD_Connection *c, hr_http_gen *g) {
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, g, sse_free);
    if (!r) {
        sse_free(g); /* stops the engine's work on it first */
        return hr_err_oom();
    }
    MHD_add_response_header(r, "Content-Type", SSE_TYPE);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? NULL : hr_errf("could not queue a response");
}

typedef struct {
    hr_sbuf body;
    int too_large;
} conn_state;

/* Compares in time independent of where the strings differ. */
static int key_equal(const char *given, const char *key) {
    size_t n = strlen(key), m = strlen(given);
    unsigned char diff = n != m;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(key[i] ^ given[i < m ? i : 0]);
    return !diff;
}

/* "Authorization: Bearer KEY" (OpenAI) or "x-api-key: KEY" (Anthropic). */
static int authorized(const hr_server *s, struct MHD_Connection *c) {
    if (!s->cfg.api_key) return 1;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *xkey = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
    if (xkey && key_equal(xkey, s->cfg.api_key)) return 1;
    return auth && !strncmp(auth, "Bearer ", 7) && key_equal(auth + 7, s->cfg.api_key);
}

static enum MHD_Result dispatch(hr_server *s, struct MHD_Connection *c, const char *url,
                                const char *method, conn_state *st) {
    char allowed[64];
    const hr_route *rt = hr_route_find(url, method, allowed, sizeof allowed);
    hr_err *e;
    if (!rt && !allowed[0]) {
        e = hr_http_reply_error(c, HR_API_CHAT, 404, "unknown route");
    } else if (!rt) {
        char msg[300];
        snprintf(msg, sizeof msg, "%.200s takes %s", url, allowed);
        e = hr_http_reply_error(c, HR_API_CHAT, 405, msg);
    } else if (rt->auth && !authorized(s, c)) {
        e = hr_http_reply_error(c, rt->api, 401, "invalid or missing API key");
    } else if (st->too_large) {
        char msg[96];
        snprintf(msg, sizeof msg, "request body is larger than %zu bytes", s->cfg.max_body);
        e = hr_http_reply_error(c, rt->api, 413, msg);
    } else if (rt->prefix) {
        const char *rest = url + strlen(rt->path);
        e = rt->fn(s, c, rest, strlen(rest));
    } else {
        e = rt->fn(s, c, st->body.s ? st->body.s : "", st->body.len);
    }
    if (!e) return MHD_YES;
    hr_err_free(e);
    return MHD_NO;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    hr_server *s = cls;
    conn_state *st = *con_cls;
    if (!st) {
        if (!(st = calloc(1, sizeof *st))) return MHD_NO;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        st->too_large = cl && strtoull(cl, NULL, 10) > s->cfg.max_body;
        *con_cls = st;
        return MHD_YES;
    }
    if (*upload_size) {
        if (st->body.len + *upload_size > s->cfg.max_body) st->too_large = 1;
        if (!st->too_large) hr_sbuf_add(&st->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    return dispatch(s, c, url, method, st);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    conn_state *st = *con_cls;
    if (!st) return;
    free(st->body.s);
    free(st);
    *con_cls = NULL;
}

static hr_err *resolve(const char *host, int port, struct sockaddr_storage *ss, int *v6) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *ai;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc) return hr_errf("--host %s: %s", host, gai_strerror(rc));
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    return NULL;
}

hr_err *hr_server_start(const hr_server_config *cfg, const hr_server_backend *backend,
                        hr_server **out) {
    if (cfg->port < 0 || cfg->port > 65535)
        return hr_errf("--port %d is not a TCP port", cfg->port);
    hr_server *s = calloc(1, sizeof *s);
    if (!s) return hr_err_oom();
    s->cfg = *cfg;
    s->be = backend;
    s->responses = hr_response_store_create(HR_RESPONSE_STORE_ENTRIES, HR_RESPONSE_STORE_BYTES);
    if (!s->responses) return free(s), hr_err_oom();
    if (!s->cfg.max_body) s->cfg.max_body = 8u << 20;
    if (!s->cfg.host) s->cfg.host = "127.0.0.1";
    if (!s->cfg.max_connections) s->cfg.max_connections = 512;
    s->timeout_s = cfg->timeout_s < 0 ? 0 : cfg->timeout_s ? (unsigned)cfg->timeout_s : 60;
    struct sockaddr_storage ss;
    int v6 = 0;
    hr_err *e = resolve(s->cfg.host, cfg->port, &ss, &v6);
    if (e) return hr_response_store_destroy(s->responses), free(s), e;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0);
    s->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_CONNECTION_TIMEOUT, s->timeout_s,
                            MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_connections,
                            MHD_OPTION_END);
    if (!s->d) {
        hr_response_store_destroy(s->responses);
        free(s);
        return hr_errf("cannot listen on %s:%d (address in use or not available?)",
                       cfg->host ? cfg->host : "127.0.0.1", cfg->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : cfg->port;
    *out = s;
    return NULL;
}

int hr_server_port(const hr_server *s) {
    return s->port;
}

void hr_server_stop(hr_server *s) {
    if (!s) return;
    MHD_stop_daemon(s->d);
    hr_response_store_destroy(s->responses);
    free(s);
}
