/* The --isolate reverse proxy; see proxy.h. Each client request gets its own upstream
 * connection to the child (HTTP/1.1, Connection: close), so the child's chunked framing
 * tells a finished reply from one cut by the child's death. Forwarded: the raw request
 * target (query included), the client's headers but hop-by-hop ones, the body as it
 * comes (re-chunked when the client sent it chunked); back: status, headers but
 * hop-by-hop ones and Date, the body as decoded. */
#include "server/proxy.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "server/http_internal.h"
#include "server/listener.h"
#include "server/unix_socket.h"
#include "server/upstream.h"

#define TICK_MS 50
#define SSE_HOLD_MAX (1u << 20) /* bytes of one event held back before it goes out anyway */
#define RECV_MAX 16384          /* bytes of one read from the child */

struct hr_proxy {
    hr_proxy_config cfg;
    hr_supervisor *sup;
    hr_listener *lis;
    unsigned timeout_s;
    atomic_int draining;
};

/* One client request and its upstream connection. Freed when both the request is
 * complete and its streamed response (if one was made) is destroyed. */
typedef struct {
    hr_proxy *p;
    struct MHD_Connection *conn;
    char *target; /* the raw request target, query included */
    int refs;
    int started; /* the headers were handled */
    int replied; /* the proxy answered itself: the body is discarded */
    hr_api_kind api;
    int up;          /* upstream socket, -1: none */
    int up_failed;   /* a write to the child failed: the rest of the body is discarded */
    int body_coming; /* the client sends a body after the headers (no Expect: 100-continue) */
    int later;       /* a reply (later_msg) that waits for the body's end: reply_later */
    char later_msg[512];
    char *up_head; /* the request head for the child (built once, sent to each try) */
    size_t up_head_len;
    int chunked_req;
    int expect; /* Expect: 100-continue, forwarded: the child's 100 or early reply decides */
    hr_upstream_head *head;
    hr_chunked dec;
    int64_t left; /* Content-Length bytes still to come; -1: by chunks or to the end */
    int sse;
    int body_done;      /* the reply's last byte came */
    int cut;            /* the reply cannot go on: the child went away, or memory ran out here */
    int oom;            /* cut for memory: a stream's last event says out of memory */
    int ended;          /* a cut stream's error event is in end */
    long events;        /* whole SSE events passed on */
    uint64_t looked_ns; /* when reply_read last looked at the client (hr_now_ns) */
    hr_sbuf out;        /* decoded reply bytes not yet given to libmicrohttpd */
    char end[512];      /* a cut stream's error event (hr_error_event: nothing allocated) */
    size_t end_len, end_off;
} px_req;

/* The mark of a request that got its 503 before it had a state (never written). */
static px_req stateless;

static void req_unref(px_req *r) {
    if (--r->refs) return;
    if (r->up >= 0) close(r->up);
    free(r->up_head);
    free(r->head);
    free(r->out.s);
    free(r->target);
    free(r);
}

/* Waiting on the child is not the client's silence. */
static void keep_alive(px_req *r) { hr_listener_keep_alive(r->conn, r->p->timeout_s); }

/* The body as JSON, or, when it could not be built or written out (NULL: out of memory),
 * a 503 with the API's static out-of-memory body. */
static enum MHD_Result reply_json(px_req *r, int status, json_t *body) {
    r->replied = 1;
    char *s = body ? hr_json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    const char *oom = hr_oom_body(r->api);
    if (!s) status = 503;
    struct MHD_Response *res =
        s ? MHD_create_response_from_buffer_with_free_callback(strlen(s), s, free)
          : MHD_create_response_from_buffer(strlen(oom), (void *)oom, MHD_RESPMEM_PERSISTENT);
    if (!res) return free(s), MHD_NO;
    const char *const kv[] = {"Content-Type",
                              "application/json",
                              "Retry-After",
                              s ? NULL : "1",
                              "x-should-retry",
                              status < 400    ? NULL
                              : status >= 500 ? "true"
                                              : "false",
                              "Connection",
                              atomic_load(&r->p->draining) ? "close" : NULL,
                              NULL};
    enum MHD_Result ok = hr_listener_add_headers(res, kv);
    if (ok == MHD_YES) ok = MHD_queue_response(r->conn, (unsigned)status, res);
    MHD_destroy_response(res);
    if (ok != MHD_YES && s) return hr_listener_reply_oom_api(r->conn, r->api);
    return ok;
}

static enum MHD_Result reply_error(px_req *r, int status, const char *msg) {
    return reply_json(r, status, hr_error_body(r->api, status, msg));
}

/* GET /health: the supervisor's state, and the child's own fields once it is ready (when
 * ready, no fields means they could not be copied). Any part that could not be allocated:
 * the static 503, never a reply with a field missing. */
static enum MHD_Result reply_health(px_req *r) {
    json_t *state, *child;
    int ready;
    hr_supervisor_health(r->p->sup, &state, &child, &ready);
    json_t *o = child ? child : ready ? NULL : json_object();
    int ok = o && state;
    if (ok && !child) ok = !json_object_set(o, "status", json_object_get(state, "state"));
    /* The public listener's connections, not the child's (which has room for the probe). */
    long conns = hr_listener_connections(r->conn);
    if (ok && conns >= 0) ok = !json_object_set_new(o, "connections", json_integer(conns));
    if (ok)
        ok = !json_object_set_new(o, "max_connections",
                                  json_integer(hr_listener_max_connections(r->p->lis)));
    if (ok)
        ok = !json_object_set_new(o, "isolate", state);
    else
        json_decref(state);
    if (!ok) json_decref(o);
    return reply_json(r, ready ? 200 : 503, ok ? o : NULL);
}

/* Writes all of buf to the child, waiting while its socket is full; -1 when the child's
 * end is gone or the client left meanwhile. */
static int up_write(px_req *r, const char *buf, size_t len) {
    while (len) {
        ssize_t n = send(r->up, buf, len, MSG_NOSIGNAL);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR) return -1;
        struct pollfd pf = {.fd = r->up, .events = POLLOUT};
        poll(&pf, 1, TICK_MS);
        if (pf.revents & (POLLERR | POLLHUP)) return -1;
        if (hr_listener_client_gone(r->conn)) return -1;
        keep_alive(r);
    }
    return 0;
}

static int is_hop_by_hop(const char *k) {
    static const char *const names[] = {"Connection", "Keep-Alive", "Proxy-Connection",  "TE",
                                        "Upgrade",    "Expect",     "Transfer-Encoding", "Trailer"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcasecmp(k, names[i])) return 1;
    return 0;
}

typedef struct {
    hr_sbuf b;
    int host, length;
    int expect; /* pass Expect on */
    int ok;     /* every piece fit (out of memory: the head is not sent cut short) */
} head_build;

static void put(head_build *h, const char *s) { h->ok &= hr_sbuf_add(&h->b, s, strlen(s)); }

static void add_line(head_build *h, const char *k, const char *v) {
    put(h, k);
    put(h, ": ");
    put(h, v);
    put(h, "\r\n");
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *k,
                                  const char *v) {
    head_build *h = cls;
    if (!strcasecmp(k, "Expect") && h->expect) return add_line(h, k, v), MHD_YES;
    if (is_hop_by_hop(k)) return MHD_YES;
    if (!strcasecmp(k, "Content-Length") && h->length++) return MHD_YES; /* equal repeats */
    if (!strcasecmp(k, "Host")) h->host = 1;
    add_line(h, k, v);
    return MHD_YES;
}

/* The request head for the child, into r->up_head; 0 when out of memory. */
static int build_head(px_req *r, const char *method) {
    head_build h = {.expect = r->expect, .ok = 1};
    put(&h, method);
    put(&h, " ");
    put(&h, r->target);
    put(&h, " HTTP/1.1\r\n");
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, add_header, &h);
    if (!h.host) put(&h, "Host: localhost\r\n");
    if (r->chunked_req) put(&h, "Transfer-Encoding: chunked\r\n");
    put(&h, "Connection: close\r\n\r\n");
    if (!h.ok) return free(h.b.s), 0;
    r->up_head = h.b.s;
    r->up_head_len = h.b.len;
    return 1;
}

/* Connects to the child at path and sends the request head; -1 when it cannot. */
static int open_upstream(px_req *r, const char *path) {
    hr_err *e = hr_unix_connect(path, &r->up);
    if (e) {
        HR_DEBUG("isolate proxy: %s", hr_err_msg(e));
        hr_err_free(e);
        r->up = -1;
        return -1;
    }
    int rc = up_write(r, r->up_head, r->up_head_len);
    if (rc) {
        close(r->up);
        r->up = -1;
    }
    return rc;
}

/* The proxy's own error reply to a request whose body may still be coming: at once when
 * none is, else after the rest of the body is read and dropped (bounded by --max-body-mb
 * and --request-timeout). Replied at once, the connection closes with the body unread,
 * and the kernel's reset can drop the reply before the client reads it (libmicrohttpd has
 * no lingering close): the soak's clients saw a broken pipe, not the 503 or 502. */
static enum MHD_Result reply_later(px_req *r, int status, const char *msg) {
    if (!r->body_coming) return reply_error(r, status, msg);
    r->replied = 1; /* the body is dropped as it comes; on_request replies at its end */
    r->later = status;
    snprintf(r->later_msg, sizeof r->later_msg, "%s", msg);
    return MHD_YES;
}

/* The request reaches a ready child, or once more the next child when the first attempt
 * could not (nothing of it was taken). Else the reply is a 503 (not ready) or 502. */
static enum MHD_Result forward_start(px_req *r, const char *method) {
    char path[256];
    uint64_t gen;
    if (!hr_supervisor_ready(r->p->sup, path, sizeof path, &gen)) {
        json_t *state, *child;
        int ready;
        hr_supervisor_health(r->p->sup, &state, &child, &ready);
        json_decref(child);
        if (!state) return reply_json(r, 503, NULL);
        char msg[512];
        const char *reason = json_string_value(json_object_get(state, "reason"));
        const char *st = json_string_value(json_object_get(state, "state"));
        snprintf(msg, sizeof msg, "the engine is not ready (%s), retry shortly%s%.400s",
                 st && !strcmp(st, "failed") ? "it keeps failing" : st, reason ? ": " : "",
                 reason ? reason : "");
        json_decref(state);
        return reply_later(r, 503, msg);
    }
    if (!build_head(r, method)) return reply_json(r, 503, NULL);
    if (!open_upstream(r, path)) return MHD_YES;
    uint64_t deadline = hr_now_ns() + (uint64_t)(r->p->cfg.retry_wait_s * 1e9);
    int got = 0;
    while (!got && hr_now_ns() < deadline && !hr_listener_client_gone(r->conn)) {
        got = hr_supervisor_wait_ready(r->p->sup, gen, TICK_MS * 1e-3, path, sizeof path, &gen);
        if (got < 0) break;
        keep_alive(r);
    }
    if (got > 0 && !open_upstream(r, path)) return MHD_YES;
    return reply_later(r, got > 0 ? 502 : 503,
                       "the engine process went away before it took the request and no "
                       "replacement was ready in time, retry shortly");
}

/* The headers are in: answer /health, refuse what the engine server would refuse from
 * the headers alone (the same checks: framing, route, API key, size), or start
 * forwarding. */
static enum MHD_Result on_headers(px_req *r, const char *url, const char *method,
                                  const char *version) {
    r->started = 1;
    if (!strcmp(url, "/health") && !strcmp(method, "GET")) return reply_health(r);
    char msg[192];
    const hr_route *rt;
    uint64_t len;
    int status = hr_http_head_status(r->conn, url, method, r->p->cfg.api_key, r->p->cfg.max_body,
                                     &rt, &len, msg, sizeof msg);
    r->api = hr_http_api_of(r->conn, url, rt);
    if (status) return reply_error(r, status, msg);
    const char *te = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Transfer-Encoding");
    r->chunked_req = te != NULL; /* the framing check let only chunked through */
    const char *expect = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Expect");
    r->expect = expect && !strcasecmp(expect, "100-continue") && !strcmp(version, "HTTP/1.1");
    r->body_coming = len > 0 && !r->expect;
    return forward_start(r, method);
}

static void forward_body(px_req *r, const char *data, size_t len) {
    if (r->up_failed) return;
    char size[24];
    int n = snprintf(size, sizeof size, "%zx\r\n", len);
    if ((r->chunked_req && up_write(r, size, (size_t)n)) || up_write(r, data, len) ||
        (r->chunked_req && up_write(r, "\r\n", 2)))
        r->up_failed = 1;
}

/* Reads what the child sent; 0 on data or nothing yet, -1 at its end (EOF or reset). */
static int up_read(px_req *r, char *buf, size_t cap, size_t *n) {
    *n = 0;
    ssize_t k = recv(r->up, buf, cap, 0); /* non-blocking: bytes waiting need no poll */
    if (k < 0 && errno == EAGAIN) {
        struct pollfd pf = {.fd = r->up, .events = POLLIN};
        if (poll(&pf, 1, TICK_MS) <= 0) return 0;
        k = recv(r->up, buf, cap, 0);
    }
    if (k > 0) return *n = (size_t)k, 0;
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    return -1;
}

/* Takes reply body bytes: decoded into out; sets body_done at the reply's end, cut (and
 * oom) when out could not take them. */
static void take_body(px_req *r, char *data, size_t len) {
    if (r->body_done || !len) return;
    if (r->head->chunked) {
        size_t n;
        hr_err *e = hr_chunked_feed(&r->dec, data, len, data, &n);
        if (!hr_sbuf_add(&r->out, data, n)) r->oom = r->cut = 1;
        if (e) {
            HR_WARN("isolate proxy: %s", hr_err_msg(e));
            hr_err_free(e);
            r->cut = 1;
        }
        r->body_done = r->dec.done;
        return;
    }
    if (r->left >= 0 && (int64_t)len > r->left) len = (size_t)r->left;
    if (!hr_sbuf_add(&r->out, data, len)) r->oom = r->cut = 1;
    if (r->left >= 0) r->left -= (int64_t)len;
    r->body_done = r->left == 0;
}

/* After the last whole event in out (SSE; 0: none), else all of out. */
static size_t releasable(const px_req *r) {
    if (!r->sse || r->out.len > SSE_HOLD_MAX || r->body_done) return r->out.len;
    for (size_t i = r->out.len; i >= 2; i--)
        if (r->out.s[i - 1] == '\n' && r->out.s[i - 2] == '\n') return i;
    return 0;
}

static long count_events(const char *s, size_t n) {
    long k = 0;
    for (size_t i = 1; i < n; i++)
        k += s[i] == '\n' && s[i - 1] == '\n';
    return k;
}

/* The last event of a cut stream, in its API's error shape, after the whole events before
 * it (one cut in the middle is dropped): the child's death, or memory that ran out here.
 * Written into r->end, so it needs no memory. */
static void end_stream(px_req *r) {
    static const char gone[] = "the engine process stopped during this reply (it is being "
                               "restarted); the reply is incomplete";
    r->out.len = releasable(r);
    long seq = r->events + count_events(r->out.s, r->out.len);
    r->end_len = hr_error_event(r->api, r->oom ? 503 : 502, r->oom ? "out of memory" : gone, seq,
                                r->end, sizeof r->end);
    r->end_off = 0;
    r->ended = 1;
}

/* Up to max bytes of the n releasable ones of out into buf. */
static ssize_t give_out(px_req *r, char *buf, size_t max, size_t n) {
    if (n > max) n = max;
    memcpy(buf, r->out.s, n);
    r->events += count_events(r->out.s, n);
    memmove(r->out.s, r->out.s + n, r->out.len - n);
    r->out.len -= n;
    return (ssize_t)n;
}

static ssize_t give_end(px_req *r, char *buf, size_t max) {
    size_t n = r->end_len - r->end_off;
    if (n > max) n = max;
    memcpy(buf, r->end + r->end_off, n);
    r->end_off += n;
    return (ssize_t)n;
}

/* libmicrohttpd asks for reply bytes: give what the child sent, waiting for more. A cut
 * stream ends with its error event; any other cut reply is cut short (the client sees its
 * framing end early). */
static ssize_t reply_read(void *cls, uint64_t pos, char *buf, size_t max) {
    px_req *r = cls;
    for (;;) {
        size_t n = releasable(r);
        if (n) return give_out(r, buf, max, n);
        if (r->end_off < r->end_len) return give_end(r, buf, max);
        if (r->cut && !r->ended) {
            if (!r->sse) return MHD_CONTENT_READER_END_WITH_ERROR;
            end_stream(r);
            continue;
        }
        if (r->body_done || r->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        char in[RECV_MAX];
        size_t got;
        if (up_read(r, in, sizeof in, &got)) {
            /* the end: of a body delimited by the connection, else too early */
            if (r->head->chunked || r->left >= 0)
                r->cut = 1;
            else
                r->body_done = 1;
        }
        take_body(r, in, got);
        /* The client and its timer are looked at in quiet ticks and at most a tick apart
         * while the child's bytes flow: a poll per token cost 11-24 us of the parent's CPU,
         * but a stream with no 50 ms gap would never see a client that half-closed (it
         * still takes the bytes, so nothing else ends the reply; the child generated on). */
        uint64_t now = hr_now_ns();
        if (got && now - r->looked_ns < TICK_MS * 1000000ull) continue;
        r->looked_ns = now;
        if (hr_listener_client_gone(r->conn)) { /* the child sees its client gone and cancels */
            close(r->up);
            r->up = -1;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        keep_alive(r);
    }
}

static void reply_free(void *cls) { req_unref(cls); }

static enum MHD_Result copy_header(struct MHD_Response *res, const hr_upstream_header *h) {
    if (is_hop_by_hop(h->name) || !strcasecmp(h->name, "Content-Length") ||
        !strcasecmp(h->name, "Date"))
        return MHD_YES;
    return MHD_add_response_header(res, h->name, h->value);
}

/* The child's head is in: the client's reply starts, its body streamed by reply_read. */
static enum MHD_Result queue_reply(px_req *r) {
    const hr_upstream_head *h = r->head;
    uint64_t size =
        h->chunked || h->content_length < 0 ? MHD_SIZE_UNKNOWN : (uint64_t)h->content_length;
    struct MHD_Response *res =
        MHD_create_response_from_callback(size, 16384, reply_read, r, reply_free);
    if (!res) return MHD_NO;
    r->refs++;
    enum MHD_Result ok = MHD_YES;
    for (int i = 0; i < h->n_headers && ok == MHD_YES; i++)
        ok = copy_header(res, &h->headers[i]);
    if (ok == MHD_YES && atomic_load(&r->p->draining))
        ok = MHD_add_response_header(res, "Connection", "close");
    if (ok == MHD_YES) ok = MHD_queue_response(r->conn, (unsigned)h->status, res);
    MHD_destroy_response(res);
    return ok == MHD_YES ? ok : reply_json(r, 503, NULL); /* not queued whole */
}

/* The child's head is complete: the body's framing and kind, room for one read of a body
 * that is not a stream (so it never needs more: out is empty at each read; a stream's
 * buffer grows, and when it cannot the stream ends with the out-of-memory event), and the
 * body bytes that came with the head. 0 when out of memory. */
static int head_done(px_req *r, char *data, size_t len) {
    const char *type = hr_upstream_header_get(r->head, "Content-Type");
    r->sse = type && !strncasecmp(type, "text/event-stream", 17);
    r->left = r->head->chunked ? -1 : r->head->content_length;
    r->body_done = r->left == 0;
    if (!r->sse && !hr_sbuf_reserve(&r->out, RECV_MAX)) return 0;
    take_body(r, data, len);
    return 1;
}

/* Room for the child's reply head; 0 when out of memory. */
static int head_alloc(px_req *r) {
    if (!r->head) r->head = calloc(1, sizeof *r->head);
    return r->head != NULL;
}

static const char died_msg[] = "the engine process stopped before it answered this request (it "
                               "is being restarted); retry";

/* The body went out (body_in), or the child stopped reading it: wait for the child's
 * reply head (the client leaving meanwhile closes the upstream connection, which cancels
 * the request in the child). A child that died before the body was in: its 502 once the
 * rest of the body is read (reply_later). */
static enum MHD_Result await_reply(px_req *r, int body_in) {
    if (r->chunked_req && !r->up_failed && up_write(r, "0\r\n\r\n", 5)) r->up_failed = 1;
    if (!head_alloc(r)) return reply_json(r, 503, NULL);
    for (int done = 0; !done;) {
        if (hr_listener_client_gone(r->conn)) return MHD_NO;
        keep_alive(r);
        char in[RECV_MAX];
        size_t got, used;
        if (up_read(r, in, sizeof in, &got)) {
            if (body_in) return reply_error(r, 502, died_msg);
            r->body_coming = 1; /* after a 100 Continue too */
            return reply_later(r, 502, died_msg);
        }
        hr_err *e = hr_upstream_head_feed(r->head, in, got, &used, &done);
        if (e) {
            HR_WARN("isolate proxy: %s", hr_err_msg(e));
            hr_err_free(e);
            return reply_error(r, 502, "the engine process sent a malformed reply");
        }
        if (done && !head_done(r, in + used, got - used)) return reply_json(r, 503, NULL);
    }
    return queue_reply(r);
}

/* Expect: 100-continue went to the child: its 100 lets the body come (libmicrohttpd then
 * sends the client its own 100), its final reply (an early 413 or 401) goes out at once
 * and the body is never read. */
static enum MHD_Result await_continue(px_req *r) {
    if (!head_alloc(r)) return reply_json(r, 503, NULL);
    char in[RECV_MAX];
    size_t got = 0, off = 0;
    for (int interim = 0;;) {
        if (off == got) {
            if (hr_listener_client_gone(r->conn)) return MHD_NO;
            keep_alive(r);
            off = 0;
            if (up_read(r, in, sizeof in, &got)) return reply_error(r, 502, died_msg);
            continue;
        }
        size_t used;
        int done;
        hr_err *e = hr_upstream_head_feed(r->head, in + off, got - off, &used, &done);
        off += used;
        if (e) {
            HR_WARN("isolate proxy: %s", hr_err_msg(e));
            hr_err_free(e);
            return reply_error(r, 502, "the engine process sent a malformed reply");
        }
        if (done && r->head->status == 100 && !interim) {
            interim = 1; /* the final head comes after the body: await_reply reads it */
            memset(r->head, 0, sizeof *r->head);
            if (off == got) return MHD_YES;
            continue;
        }
        if (!done) {
            if (interim) return MHD_YES; /* part of the final head, kept in r->head */
            continue;
        }
        if (!head_done(r, in + off, got - off)) return reply_json(r, 503, NULL);
        r->replied = 1;
        return queue_reply(r);
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    px_req *r = *con_cls;
    if (!r) { /* its state could not be allocated (on_uri) */
        *con_cls = &stateless;
        return hr_listener_reply_oom(c, url);
    }
    if (r == &stateless) return *upload_size = 0, MHD_YES;
    if (!r->started) {
        r->conn = c;
        enum MHD_Result rc = on_headers(r, url, method, version);
        return rc == MHD_YES && !r->replied && r->expect ? await_continue(r) : rc;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (r->replied) return MHD_YES;
        forward_body(r, upload, n);
        if (!r->up_failed) return MHD_YES;
        /* The child stopped reading (an early 413 or 401, or it died): its reply now,
         * rather than reading the rest of the body for nothing (but a death's, below). */
        r->replied = 1;
        return await_reply(r, 0);
    }
    hr_conn_guard_read(hr_listener_guard(r->p->lis), c); /* the body is in */
    if (r->later) { /* reply_later's reply, now that the body is in */
        int status = r->later;
        r->later = 0;
        return reply_error(r, status, r->later_msg);
    }
    return r->replied ? MHD_YES : await_reply(r, 1);
}

/* The first callback of a request: its state, with the raw target libmicrohttpd's url
 * argument lacks (the query string). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    px_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->p = cls;
    r->up = -1;
    r->refs = 1;
    r->target = strdup(uri);
    if (!r->target) return free(r), NULL;
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    px_req *r = *con_cls;
    hr_proxy *p = cls;
    *con_cls = NULL;
    if (!r || r == &stateless) return;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        hr_conn_guard_answered(hr_listener_guard(p->lis), c);
    if (r->up >= 0) { /* the child sees its client gone and cancels */
        close(r->up);
        r->up = -1;
    }
    req_unref(r);
}

hr_err *hr_proxy_start(const hr_proxy_config *cfg, hr_supervisor *sup, hr_proxy **out) {
    hr_proxy *p = calloc(1, sizeof *p);
    if (!p) return hr_err_oom();
    p->cfg = *cfg;
    p->sup = sup;
    if (!p->cfg.max_connections) p->cfg.max_connections = 512;
    if (!p->cfg.max_body) p->cfg.max_body = 8u << 20;
    if (!(p->cfg.retry_wait_s > 0)) p->cfg.retry_wait_s = 30;
    p->timeout_s = hr_listener_seconds(cfg->timeout_s, 60);
    hr_listener_config lc = {.host = cfg->host,
                             .port = cfg->port,
                             .timeout_s = p->timeout_s,
                             .request_timeout_s = hr_listener_seconds(cfg->request_timeout_s, 30),
                             .max_connections = p->cfg.max_connections,
                             .max_connections_per_ip = cfg->max_connections_per_ip,
                             .fds_per_connection = 2, /* the client's and the child's */
                             .on_request = on_request,
                             .on_completed = on_completed,
                             .on_uri = on_uri,
                             .cls = p};
    hr_err *e = hr_listener_start(&lc, &p->lis);
    if (e) return free(p), e;
    *out = p;
    return NULL;
}

int hr_proxy_port(const hr_proxy *p) { return hr_listener_port(p->lis); }

void hr_proxy_quiesce(hr_proxy *p) {
    atomic_store(&p->draining, 1);
    hr_listener_quiesce(p->lis);
}

void hr_proxy_stop(hr_proxy *p) {
    if (!p) return;
    hr_listener_stop(p->lis);
    free(p);
}
