/* The engine server's HTTP side on the shared listener (listener.c: the daemon, its
 * connection limits, idle timeout and request deadline, the checks on the headers):
 * body collection with a size limit and the request memory budget, routing, JSON replies,
 * and SSE streams that notice a vanished client while waiting on the engine and cancel
 * its request. Generation routes are in routes.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "grammar/grammar_cache.h"
#include "server/http_internal.h"
#include "server/listener.h"

static const char *SSE_TYPE = "text/event-stream";

/* The Responses store's bounds (docs/server.md): most recently used responses first. */
#define HR_RESPONSE_STORE_ENTRIES 256
#define HR_RESPONSE_STORE_BYTES (64u << 20)

/* Whether a client should retry a request that got status (Anthropic's x-should-retry,
 * which Claude Code and the SDKs honour): only for load, timeouts and server faults, not
 * for a feature the server lacks (501). */
static int retryable(int status) {
    return status == 408 || status == 409 || status == 429 || (status >= 500 && status != 501);
}

/* The reply's headers; MHD_NO when libmicrohttpd could not add one. */
static enum MHD_Result add_headers(hr_http_req *q, int status, struct MHD_Response *r,
                                   const char *type) {
    const char *retry = status < 400 ? NULL : retryable(status) ? "true" : "false";
    const char *const kv[] = {"Content-Type",
                              type,
                              "Cache-Control",
                              type == SSE_TYPE ? "no-cache" : NULL,
                              "Connection",
                              atomic_load(&q->s->draining) ? "close" : NULL,
                              "x-should-retry",
                              retry,
                              "Retry-After",
                              q->retry_after,
                              NULL};
    return hr_listener_add_headers(r, kv);
}

/* r with its headers, queued and let go. */
static hr_err *queue_headed(hr_http_req *q, int status, struct MHD_Response *r) {
    q->acc.status = status;
    enum MHD_Result ok = MHD_queue_response(q->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? NULL : hr_errf("could not queue a response");
}

/* r, whose headers could not all be added, let go: api's static out-of-memory 503
 * instead, or the connection closes. */
static hr_err *headers_failed(hr_http_req *q, hr_api_kind api, struct MHD_Response *r) {
    MHD_destroy_response(r);
    q->acc.status = 503;
    snprintf(q->acc.error, sizeof q->acc.error, "out of memory");
    if (hr_listener_reply_oom_api(q->conn, api) == MHD_YES) return NULL;
    return hr_errf("could not queue a response");
}

static hr_err *queue(hr_http_req *q, hr_api_kind api, int status, struct MHD_Response *r,
                     const char *type) {
    if (add_headers(q, status, r, type) != MHD_YES) return headers_failed(q, api, r);
    return queue_headed(q, status, r);
}

/* A response of the heap text s, freed by the allocator it came from (hearth's free, which
 * tests/fault/alloc_fail.c tracks), not by libmicrohttpd's own. */
static struct MHD_Response *owned_buffer(char *s) {
    return MHD_create_response_from_buffer_with_free_callback(strlen(s), s, free);
}

hr_err *hr_http_reply_oom(hr_http_req *q, hr_api_kind api) {
    snprintf(q->acc.error, sizeof q->acc.error, "out of memory");
    q->retry_after = "1";
    const char *b = hr_oom_body(api);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(b), (void *)b, MHD_RESPMEM_PERSISTENT);
    if (!r) return hr_err_oom();
    return queue(q, api, 503, r, "application/json");
}

/* hr_http_reply_json with api's shape for an out-of-memory 503. */
static hr_err *reply_json(hr_http_req *q, hr_api_kind api, int status, json_t *body) {
    char *s = body ? hr_json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!s) return hr_http_reply_oom(q, api);
    struct MHD_Response *r = owned_buffer(s);
    if (!r) return free(s), hr_err_oom();
    return queue(q, api, status, r, "application/json");
}

hr_err *hr_http_reply_json(hr_http_req *q, int status, json_t *body) {
    return reply_json(q, q->api, status, body);
}

hr_err *hr_http_reply_text(hr_http_req *q, int status, const char *type, char *text) {
    struct MHD_Response *r = owned_buffer(text);
    if (!r) return free(text), hr_err_oom();
    return queue(q, q->api, status, r, type);
}

hr_err *hr_http_reply_error(hr_http_req *q, hr_api_kind api, int status, const char *msg) {
    snprintf(q->acc.error, sizeof q->acc.error, "%.199s", msg);
    return reply_json(q, api, status, hr_error_body(api, status, msg));
}

hr_err *hr_http_reply_err(hr_http_req *q, hr_api_kind api, int status, hr_err *e) {
    hr_err_code code = hr_err_code_of(e);
    if (code == HR_E_BUSY) status = api == HR_API_MESSAGES ? 529 : 503;
    if (code == HR_E_NOTFOUND) status = 404;
    if (code == HR_E_CONTEXT) status = 400;
    if (code == HR_E_LIMIT) status = 500;
    if (code == HR_E_OOM) status = 503, q->retry_after = "1";
    json_t *body = hr_error_body(api, status, hr_err_msg(e));
    json_t *err = json_object_get(body, "error");
    if (code == HR_E_CONTEXT && api != HR_API_MESSAGES &&
        (hr_json_set_new(err, "code", json_string("context_length_exceeded")) ||
         hr_json_set_new(err, "param", json_string(api == HR_API_CHAT ? "messages" : "input")))) {
        json_decref(body);
        body = NULL;
    }
    snprintf(q->acc.error, sizeof q->acc.error, "%.199s", hr_err_msg(e));
    hr_err_free(e);
    return reply_json(q, api, status, body);
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
    if (!g->acc.first_token_ns) {
        hr_reply_summary sum;
        hr_reply_summarize(g->reply, &sum);
        if (sum.tokens_seen) g->acc.first_token_ns = hr_now_ns();
    }
    /* The client is not the one being waited on: a long prefill or a slow engine does not
     * count as a silent client. */
    hr_listener_keep_alive(g->conn, g->timeout_s);
    if (!g->cancelled && hr_listener_client_gone(g->conn)) {
        g->cancelled = 1;
        hr_chan_cancel(g->chan, g->be->cancel, g->be->ctx);
    }
    if (!g->cancelled && !g->failed && hr_reply_failed(g->reply)) {
        g->failed = 1; /* nothing more of it can be sent: stop generating it */
        hr_chan_cancel(g->chan, g->be->cancel, g->be->ctx);
    }
    if (!g->cancelled && !g->ended && atomic_load(&g->s->ending)) {
        g->ended = 1;
        hr_chan_cut(g->chan, g->be->cancel, g->be->ctx, HR_SHUTDOWN_MSG);
    }
}

void hr_http_gen_stop(hr_http_gen *g) {
    if (g->done) return;
    hr_chan_cancel(g->chan, g->be->cancel, g->be->ctx);
    while (!g->done)
        g->done = hr_chan_drain(g->chan, g->reply, 50);
}

/* A failed reply's stream, once its whole events are out: the engine's work on it stopped,
 * then its closing error event and the end. */
static ssize_t sse_tail(hr_http_gen *g, char *buf, size_t max) {
    if (!g->tail) {
        hr_http_gen_stop(g);
        g->tail = hr_reply_fail_event(g->reply, &g->tail_len);
    }
    if (g->tail_off == g->tail_len) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = g->tail_len - g->tail_off < max ? g->tail_len - g->tail_off : max;
    memcpy(buf, g->tail + g->tail_off, n);
    g->tail_off += n;
    return (ssize_t)n;
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
        if (hr_reply_failed(g->reply) && !g->cancelled) return sse_tail(g, buf, max);
        if (g->done) return MHD_CONTENT_READER_END_OF_STREAM;
        if (g->cancelled) {
            while (!g->done)
                hr_http_gen_wait(g);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        hr_http_gen_wait(g);
    }
}

void hr_http_gen_account(const hr_http_gen *g, hr_access *acc) {
    acc->generated = 1;
    if (g->acc.first_token_ns) acc->first_token_ns = g->acc.first_token_ns;
    hr_reply_summarize(g->reply, &acc->sum);
    if (g->cancelled && !acc->sum.finish) acc->sum.finish = "cancelled";
    if (hr_reply_failed(g->reply)) snprintf(acc->error, sizeof acc->error, "out of memory");
}

static void log_access(const hr_access *a) {
    if (HR_LOG_INFO < hr_log_threshold) return;
    uint64_t now = hr_now_ns();
    /* the method and path as the client sent them (cut to fit): maybe not UTF-8 */
    json_t *f = json_pack("{s:s, s:o, s:o, s:i, s:f}", "client", a->client, "method",
                          hr_json_string_lossy(a->method, strlen(a->method)), "path",
                          hr_json_string_lossy(a->path, strlen(a->path)), "status", a->status,
                          "duration_ms", (double)(now - a->t0_ns) * 1e-6);
    hr_err *e = f ? NULL : hr_err_oom();
    if (!e && a->generated) {
        e = hr_json_set_new(f, "prompt_tokens", json_integer(a->sum.prompt_tokens));
        if (!e) e = hr_json_set_new(f, "cached_tokens", json_integer(a->sum.cached_tokens));
        if (!e) e = hr_json_set_new(f, "completion_tokens", json_integer(a->sum.completion_tokens));
        if (!e && a->first_token_ns)
            e = hr_json_set_new(f, "ttft_ms",
                                json_real((double)(a->first_token_ns - a->t0_ns) * 1e-6));
        if (!e && a->sum.finish) e = hr_json_set_new(f, "finish", json_string(a->sum.finish));
        if (!e) e = hr_json_set_new(f, "stream", json_boolean(a->stream));
    }
    if (!e && a->error[0])
        e = hr_json_set_new(f, "error", hr_json_string_lossy(a->error, strlen(a->error)));
    if (e) /* a line without its fields would say less than it seems to */
        HR_WARN("out of memory writing the access log line of %s %s (status %d)", a->method,
                a->path, a->status);
    else
        hr_log_fields(HR_LOG_INFO, "request", f);
    hr_err_free(e);
    json_decref(f);
}

/* Runs when the stream ends or the connection dies: make sure the engine stops. */
static void sse_free(void *cls) {
    hr_http_gen *g = cls;
    hr_http_gen_stop(g);
    hr_http_gen_account(g, &g->acc);
    log_access(&g->acc);
    hr_http_gen_free(g);
}

hr_err *hr_http_reply_sse(hr_http_req *q, hr_http_gen *g) {
    q->acc.status = 200;
    q->acc.stream = 1;
    g->acc = q->acc;
    q->handed = 1;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, g, sse_free);
    if (!r) {
        sse_free(g); /* stops the engine's work on it first */
        return hr_err_oom();
    }
    if (add_headers(q, 200, r, SSE_TYPE) != MHD_YES) {
        g->acc.status = 503; /* in the access line sse_free writes */
        snprintf(g->acc.error, sizeof g->acc.error, "out of memory");
        return headers_failed(q, q->api, r);
    }
    return queue_headed(q, 200, r);
}

typedef struct {
    hr_sbuf body;
    const hr_route *rt;
    int busy; /* dispatched: counted in the server's busy until completed */
    int too_large;
    int short_of_memory; /* the body could not be buffered: 503 */
    int replied;         /* an early error went out with the headers; the body is ignored */
    size_t reserved;     /* bytes of the server's request memory budget held until completed */
    hr_http_req q;
} conn_state;

/* Reserves n more bytes of request memory for st; 503 (msg set) when the budget stays
 * short for HR_BUDGET_WAIT_MS, else 0. */
static int reserve(hr_server *s, conn_state *st, size_t n, char *msg, size_t cap) {
    if (!hr_mem_budget_reserve(&s->budget, n, HR_BUDGET_WAIT_MS)) {
        st->q.retry_after = "2";
        snprintf(msg, cap, "the server is out of request memory (--request-memory-mb %zu): retry",
                 s->budget.cap >> 20);
        return 503;
    }
    st->reserved += n;
    return 0;
}

/* Before parsing: the rest of what parsing the body can cost (the body itself is held
 * since its headers: early_status). */
static int reserve_parse(hr_server *s, conn_state *st, char *msg, size_t cap) {
    size_t whole = hr_mem_budget_cost(&s->budget, st->body.len, HR_REQUEST_MEMORY_FACTOR);
    return whole > st->reserved ? reserve(s, st, whole - st->reserved, msg, cap) : 0;
}

static hr_err *route(hr_server *s, conn_state *st, const char *url, const char *method) {
    hr_http_req *q = &st->q;
    const hr_route *rt = st->rt;
    q->api = rt->api;
    char msg[192];
    if (st->too_large)
        return hr_http_reply_error(q, rt->api, hr_http_too_large(s->cfg.max_body, msg, sizeof msg),
                                   msg);
    if (st->short_of_memory) {
        q->retry_after = "1";
        return hr_http_reply_error(q, rt->api, 503, "out of memory buffering the request body");
    }
    int status = reserve_parse(s, st, msg, sizeof msg);
    if (status) return hr_http_reply_error(q, rt->api, status, msg);
    if (st->body.len && HR_LOG_DEBUG >= hr_log_threshold)
        HR_DEBUG("%s %s body (%zu bytes): %.*s%s", method, url, st->body.len,
                 st->body.len > 800 ? 800 : (int)st->body.len, st->body.s,
                 st->body.len > 800 ? "..." : "");
    return rt->fn(s, q, st->body.s ? st->body.s : "", st->body.len);
}

static enum MHD_Result dispatch(hr_server *s, struct MHD_Connection *c, const char *url,
                                const char *method, conn_state *st) {
    hr_http_req *q = &st->q;
    pthread_mutex_lock(&s->mu);
    s->busy++;
    pthread_mutex_unlock(&s->mu);
    st->busy = 1;
    hr_err *e = route(s, st, url, method);
    if (!q->handed) log_access(&q->acc);
    if (!e) return MHD_YES;
    hr_err_free(e);
    return MHD_NO;
}

/* "ADDR:PORT" of the peer, for the access log. */
static void client_addr(struct MHD_Connection *c, char *buf, size_t cap) {
    snprintf(buf, cap, "?");
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr) return;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ci->client_addr->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ci->client_addr;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        port = ntohs(a->sin_port);
    } else if (ci->client_addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ci->client_addr;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        port = ntohs(a->sin6_port);
    }
    snprintf(buf, cap, "%s:%d", host, port);
}

static conn_state *conn_state_new(hr_server *s, struct MHD_Connection *c, const char *url,
                                  const char *method) {
    conn_state *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->q = (hr_http_req){.s = s, .conn = c, .path = url};
    hr_access *a = &st->q.acc;
    a->t0_ns = hr_now_ns();
    snprintf(a->method, sizeof a->method, "%s", method);
    snprintf(a->path, sizeof a->path, "%s", url);
    client_addr(c, a->client, sizeof a->client);
    return st;
}

/* What can be refused before the body is read (hr_http_head_status), then a body the
 * request memory budget cannot take (after waiting a moment for it). 0 when the request
 * goes on (st->rt set). */
static int early_status(hr_server *s, conn_state *st, const char *url, const char *method,
                        char *msg, size_t cap) {
    uint64_t len;
    int status = hr_http_head_status(st->q.conn, url, method, s->cfg.api_key, s->cfg.max_body,
                                     &st->rt, &len, msg, cap);
    if (status) return status;
    return reserve(s, st, hr_mem_budget_cost(&s->budget, len, 1), msg, cap);
}

/* The mark of a request that got its 503 before it had a state of its own (never written). */
static conn_state stateless;

/* Out of memory for a request's state: the 503 with the static body of its API, queued
 * without it; the body that may follow is ignored. */
static enum MHD_Result reply_stateless(struct MHD_Connection *c, const char *url, void **con_cls) {
    *con_cls = &stateless;
    return hr_listener_reply_oom(c, url);
}

/* The first call for a request (headers in): its state, or an early error reply (without
 * a "100 Continue": libmicrohttpd then discards the body and closes). */
static enum MHD_Result start_request(hr_server *s, struct MHD_Connection *c, const char *url,
                                     const char *method, void **con_cls) {
    conn_state *st = conn_state_new(s, c, url, method);
    if (!st) return reply_stateless(c, url, con_cls);
    *con_cls = st;
    char msg[192];
    int status = early_status(s, st, url, method, msg, sizeof msg);
    if (!status) return MHD_YES;
    st->replied = 1;
    hr_err *e = hr_http_reply_error(&st->q, hr_http_api_of(c, url, st->rt), status, msg);
    log_access(&st->q.acc);
    if (!e) return MHD_YES;
    hr_err_free(e);
    return MHD_NO;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    hr_server *s = cls;
    conn_state *st = *con_cls;
    if (!st) return start_request(s, c, url, method, con_cls);
    if (st == &stateless || st->replied) return *upload_size = 0, MHD_YES;
    if (*upload_size) {
        if (st->body.len + *upload_size > s->cfg.max_body) st->too_large = 1;
        size_t had = st->body.len;
        if (!st->too_large && !st->short_of_memory) hr_sbuf_add(&st->body, upload, *upload_size);
        if (st->body.len == had) st->short_of_memory |= !st->too_large;
        *upload_size = 0;
        return MHD_YES;
    }
    hr_conn_guard_read(hr_listener_guard(s->lis), c);
    return dispatch(s, c, url, method, st);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    conn_state *st = *con_cls;
    hr_server *s = cls;
    if (!st || st == &stateless) return;
    hr_mem_budget_release(&s->budget, st->reserved);
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        hr_conn_guard_answered(hr_listener_guard(s->lis), c);
    if (st->busy) {
        pthread_mutex_lock(&s->mu);
        s->busy--;
        pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->mu);
    }
    free(st->body.s);
    free(st);
    *con_cls = NULL;
}

static void server_free(hr_server *s) {
    hr_grammar_cache_free(s->grammars);
    hr_mem_budget_destroy(&s->budget);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->idle);
    free(s);
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
    int gmb = cfg->grammar_cache_mb ? cfg->grammar_cache_mb : 256;
    hr_err *ge = gmb > 0 ? hr_grammar_cache_create((size_t)gmb << 20, &s->grammars) : NULL;
    if (ge) return hr_response_store_destroy(s->responses), free(s), ge;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->idle, NULL);
    if (!s->cfg.max_body) s->cfg.max_body = 8u << 20;
    if (!s->cfg.host) s->cfg.host = "127.0.0.1";
    if (!s->cfg.max_connections) s->cfg.max_connections = 512;
    if (!s->cfg.max_backlog) s->cfg.max_backlog = 16u << 20;
    hr_mem_budget_init(&s->budget,
                       s->cfg.request_memory ? s->cfg.request_memory : hr_mem_budget_default());
    s->timeout_s = hr_listener_seconds(cfg->timeout_s, 60);
    hr_listener_config lc = {.host = s->cfg.host,
                             .port = cfg->port,
                             .unix_socket = cfg->unix_socket,
                             .timeout_s = s->timeout_s,
                             .request_timeout_s = hr_listener_seconds(cfg->request_timeout_s, 30),
                             .max_connections = s->cfg.max_connections,
                             .max_connections_per_ip = s->cfg.max_connections_per_ip,
                             .on_request = on_request,
                             .on_completed = on_completed,
                             .cls = s};
    hr_err *e = hr_listener_start(&lc, &s->lis);
    if (e) return hr_response_store_destroy(s->responses), server_free(s), e;
    *out = s;
    return NULL;
}

int hr_server_port(const hr_server *s) { return hr_listener_port(s->lis); }

/* Waits until no request is in flight or until deadline_ns; returns how many still are. */
static int wait_idle(hr_server *s, uint64_t deadline_ns) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    uint64_t left = deadline_ns > hr_now_ns() ? deadline_ns - hr_now_ns() : 0;
    until.tv_sec += (time_t)(left / 1000000000u);
    until.tv_nsec += (long)(left % 1000000000u);
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&s->mu);
    while (s->busy)
        if (pthread_cond_timedwait(&s->idle, &s->mu, &until) == ETIMEDOUT) break;
    int busy = s->busy;
    pthread_mutex_unlock(&s->mu);
    return busy;
}

void hr_server_quiesce(hr_server *s) {
    atomic_store(&s->draining, 1);
    hr_listener_quiesce(s->lis);
}

void hr_server_drain(hr_server *s, double grace_s) {
    int left = wait_idle(s, hr_now_ns() + (uint64_t)(grace_s * 1e9));
    if (!left) return;
    HR_WARN("shutdown: %d request%s still running after %.0f s, ending %s", left,
            left == 1 ? "" : "s", grace_s, left == 1 ? "it" : "them");
    atomic_store(&s->ending, 1);
    /* Cut generations end within a step; a reader that stopped reading is bounded too. */
    if (wait_idle(s, hr_now_ns() + HR_SHUTDOWN_END_S * 1000000000ull))
        HR_WARN("shutdown: closing connections that did not take their last bytes");
}

void hr_server_stop(hr_server *s) {
    if (!s) return;
    hr_listener_stop(s->lis);
    hr_response_store_destroy(s->responses);
    server_free(s);
}
