/* The public side of an HTTP listener on libmicrohttpd, shared by the engine server
 * (http.c) and the --isolate proxy (proxy.c), so both enforce the same limits: the bind
 * (host:port, or a unix socket for the --isolate child), one thread per connection, the
 * idle timeout, --max-connections (fitted to the descriptor limit), the per-address limit,
 * the whole-request deadline (conn_guard.c), quiesce and stop; and the checks on a
 * request's headers that both make before any of its body is read. */
#ifndef HR_SERVER_LISTENER_H
#define HR_SERVER_LISTENER_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "server/conn_guard.h"
#include "server/http_internal.h"

typedef struct {
    const char *host;                /* with port; ignored for a unix socket */
    int port;                        /* 0 = any free port */
    const char *unix_socket;         /* listen here instead (no per-address limit: one peer) */
    unsigned timeout_s;              /* idle timeout (0 = never) */
    unsigned request_timeout_s;      /* a request's headers and body (0 = no deadline) */
    unsigned max_connections;        /* > 0; lowered to fit ulimit -n, with a warning */
    unsigned max_connections_per_ip; /* 0 = none beyond max_connections */
    unsigned fds_per_connection;     /* descriptors one connection holds (0 = 1) */
    MHD_AccessHandlerCallback on_request;
    MHD_RequestCompletedCallback on_completed;
    /* The first callback of a request (its raw target), after the deadline starts; its
     * result is the request's first context. NULL: none. */
    void *(*on_uri)(void *cls, const char *uri, struct MHD_Connection *c);
    void *cls; /* of the three callbacks */
} hr_listener_config;

typedef struct hr_listener hr_listener;

/* A seconds setting as hr_server_config has them: 0 the default, negative none (0). */
unsigned hr_listener_seconds(int s, unsigned dflt);
/* Binds and starts serving. *out is set before the first callback can run (the owner's
 * callbacks may use it); NULL on failure. */
hr_err *hr_listener_start(const hr_listener_config *cfg, hr_listener **out);
int hr_listener_port(const hr_listener *l);
/* max_connections as fitted to the descriptor limit. */
unsigned hr_listener_max_connections(const hr_listener *l);
/* The request deadline (NULL: none), for hr_conn_guard_read / _answered / _cut. */
hr_conn_guard *hr_listener_guard(const hr_listener *l);
/* Stops accepting (connects are refused at once; the socket stays open until stop). */
void hr_listener_quiesce(hr_listener *l);
/* Waits for the connections to end and frees (NULL: nothing). */
void hr_listener_stop(hr_listener *l);
/* Adds the headers kv (name, value, ..., up to a NULL name; a NULL value skips its name):
 * MHD_NO when libmicrohttpd could not add one. A reply missing a header (its Content-Type,
 * Connection: close) is never sent: the caller destroys it and answers otherwise. */
enum MHD_Result hr_listener_add_headers(struct MHD_Response *r, const char *const *kv);
/* Out of memory before a request has a state, or for a reply's headers: the 503 with the
 * API's static body (hr_oom_body) and Connection: close, queued without allocating
 * anything of hearth's; MHD_NO (close the connection) when libmicrohttpd cannot make it. */
enum MHD_Result hr_listener_reply_oom(struct MHD_Connection *c, const char *url);
enum MHD_Result hr_listener_reply_oom_api(struct MHD_Connection *c, hr_api_kind api);
/* The client of c closed its end (poll RDHUP without blocking). */
int hr_listener_client_gone(struct MHD_Connection *c);
/* Restarts c's idle timer at timeout_s: waiting on the engine is not the client's
 * silence. */
void hr_listener_keep_alive(struct MHD_Connection *c, unsigned timeout_s);
/* The connections open now on the daemon c belongs to (-1: unknown). */
long hr_listener_connections(struct MHD_Connection *c);

/* What the headers alone can refuse, cheapest first: framing (400 ambiguous length, 501 a
 * transfer coding but chunked), an unknown route or method (404 / 405), a missing or
 * wrong API key (401; api_key NULL: none needed), an announced body over max_body (413).
 * 0 when the request goes on; msg is set otherwise. *rt: the route (NULL for 404), *len:
 * the announced body size (a chunked body: max_body). */
int hr_http_head_status(struct MHD_Connection *c, const char *url, const char *method,
                        const char *api_key, size_t max_body, const hr_route **rt, uint64_t *len,
                        char *msg, size_t cap);
/* 400 for an ambiguous body length (two Content-Lengths that differ, or one beside a
 * Transfer-Encoding: what request smuggling behind a proxy needs), 501 for a transfer
 * coding other than chunked; 0 when the framing is fine (msg then untouched). */
int hr_http_framing_status(struct MHD_Connection *c, char *msg, size_t cap);
/* The 413 of a body over max_body, its message into msg. */
int hr_http_too_large(size_t max_body, char *msg, size_t cap);
/* The error shape of a request: its route's, else Anthropic's for its paths and for
 * clients that send its version header, else OpenAI's. */
hr_api_kind hr_http_api_of(struct MHD_Connection *c, const char *url, const hr_route *rt);

#endif
