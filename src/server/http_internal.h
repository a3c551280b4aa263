/* Shared by the HTTP listener (http.c) and the route handlers (routes.c). */
#ifndef HR_SERVER_HTTP_INTERNAL_H
#define HR_SERVER_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "server/conn_guard.h"
#include "server/mem_budget.h"
#include "server/reply_internal.h"
#include "server/response_store.h"
#include "server/sink.h"

/* What requests cut by a shutdown get: streams an error event, others a 503. */
#define HR_SHUTDOWN_MSG "the server is shutting down"
/* Seconds that cut requests get to send their last bytes before their connections close. */
#define HR_SHUTDOWN_END_S 10
/* How long a request waits for the request memory budget before its 503. */
#define HR_BUDGET_WAIT_MS 2000

struct hr_server {
    hr_server_config cfg;
    const hr_server_backend *be;
    hr_response_store *responses; /* stored Responses API responses (routes.c) */
    struct hr_listener *lis;      /* the daemon, its limits and the request deadline */
    unsigned timeout_s;           /* libmicrohttpd's: 0 = never */
    /* Shutdown (hr_server_drain): requests dispatched and not yet completed, under mu;
     * draining once new connections are refused, ending once the grace period is over
     * (generations still running are cancelled and end with an error). */
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int busy;
    atomic_int draining, ending;
    hr_mem_budget budget;              /* request memory (--request-memory-mb) */
    struct hr_grammar_cache *grammars; /* compiled grammars of recent requests */
};

/* What the access log line of one request says (http.c writes it when the reply is done). */
typedef struct {
    char method[16], path[160], client[64];
    uint64_t t0_ns, first_token_ns; /* request dispatched; first generated token (0: none) */
    int status;
    int generated; /* a generation route: the token fields below mean something */
    int stream;
    hr_reply_summary sum;
    char error[200]; /* the message of an error reply */
} hr_access;

/* One HTTP request being answered: its connection and access record. */
typedef struct {
    hr_server *s;
    struct MHD_Connection *conn;
    const char *path; /* without the query string */
    hr_access acc;
    int handed; /* a stream took over acc: the stream writes the log line when it ends */
    const char *retry_after; /* a Retry-After header for the reply (static), or NULL */
    hr_api_kind api;         /* the route's error shape (an out-of-memory 503 takes it) */
} hr_http_req;

/* A request in flight: its channel, reply, and SSE bytes being written. */
typedef struct {
    const hr_server_backend *be;
    const hr_server *s;
    struct MHD_Connection *conn;
    unsigned timeout_s; /* the connection's, restarted while waiting on the engine */
    hr_gen_chan *chan;
    hr_reply *reply;
    char *pending;
    size_t len, off;
    int done, cancelled;
    int ended;        /* cut by the server's shutdown: the reply ends with an error */
    int failed;       /* the reply ran out of memory: the engine request was cancelled */
    const char *tail; /* a failed stream's closing error event (in the reply), once due */
    size_t tail_len, tail_off;
    hr_access acc; /* streams: copied from the request when the stream starts */
} hr_http_gen;

typedef hr_err *(*hr_route_fn)(hr_server *s, hr_http_req *q, const char *body, size_t len);

typedef struct {
    const char *path;
    const char *method;
    hr_api_kind api; /* which error shape */
    int auth;        /* needs the API key */
    int prefix;      /* path is a prefix: the rest (e.g. an id) is the handler's to read */
    hr_route_fn fn;
} hr_route;

/* The route for path and method; NULL when none. allowed gets the methods the path takes
 * ("" for an unknown path: 404; else 405). */
const hr_route *hr_route_find(const char *path, const char *method, char *allowed, size_t cap);

/* Replies; an error means the connection should be dropped. Steals body; a NULL body (its
 * builder ran out of memory), or one that cannot be written out, gets hr_http_reply_oom. */
hr_err *hr_http_reply_json(hr_http_req *q, int status, json_t *body);
/* 503 with Retry-After and q->api's static out-of-memory body (hr_oom_body): nothing of
 * hearth's allocated. */
hr_err *hr_http_reply_oom(hr_http_req *q, hr_api_kind api);
/* Replies with text (heap, taken over) of the given Content-Type. */
hr_err *hr_http_reply_text(hr_http_req *q, int status, const char *type, char *text);
/* An error body in api's shape, with x-should-retry saying whether a retry can help. */
hr_err *hr_http_reply_error(hr_http_req *q, hr_api_kind api, int status, const char *msg);
/* An hr_err as a reply: its code picks the status (HR_E_CONTEXT 400 with OpenAI's
 * context_length_exceeded, HR_E_BUSY 503 / Anthropic 529, HR_E_NOTFOUND 404, HR_E_LIMIT
 * 500, HR_E_OOM 503 with Retry-After, else status); frees e. */
hr_err *hr_http_reply_err(hr_http_req *q, hr_api_kind api, int status, hr_err *e);
/* Streams g's reply as SSE; takes ownership of g. */
hr_err *hr_http_reply_sse(hr_http_req *q, hr_http_gen *g);
void hr_http_gen_wait(hr_http_gen *g);
/* Cancels every choice still generating and waits until the engine has finished them. */
void hr_http_gen_stop(hr_http_gen *g);
void hr_http_gen_free(hr_http_gen *g);
/* Copies g's usage, finish and first-token time into acc. */
void hr_http_gen_account(const hr_http_gen *g, hr_access *acc);

#endif
