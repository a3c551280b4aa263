/* Shared by the HTTP listener (http.c) and the route handlers (routes.c). */
#ifndef HR_SERVER_HTTP_INTERNAL_H
#define HR_SERVER_HTTP_INTERNAL_H

#include <microhttpd.h>

#include "server/reply_internal.h"
#include "server/response_store.h"
#include "server/sink.h"

struct hr_server {
    hr_server_config cfg;
    const hr_server_backend *be;
    hr_response_store *responses; /* stored Responses API responses (routes.c) */
    struct MHD_Daemon *d;
    int port;
    unsigned timeout_s; /* libmicrohttpd's: 0 = never */
};

/* A request in flight: its channel, reply, and SSE bytes being written. */
typedef struct {
    const hr_server_backend *be;
    struct MHD_Connection *conn;
    unsigned timeout_s; /* the connection's, restarted while waiting on the engine */
    hr_gen_chan *chan;
    hr_reply *reply;
    char *pending;
    size_t len, off;
    int done, cancelled;
} hr_http_gen;

typedef hr_err *(*hr_route_fn)(hr_server *s, struct MHD_Connection *c, const char *body,
                               size_t len);

typedef struct {
    const char *path;
    const char *method;
    hr_api_kind api; /* which error shape */
    int auth;        /* needs the API key */
    int prefix;      /* path is a prefix: fn gets the rest of the path (an id) as its body */
    hr_route_fn fn;
} hr_route;

/* The route for path and method; NULL when none. allowed gets the methods the path takes
 * ("" for an unknown path: 404; else 405). */
const hr_route *hr_route_find(const char *path, const char *method, char *allowed, size_t cap);

/* Replies; an error means the connection should be dropped. Steals body. */
hr_err *hr_http_reply_json(struct MHD_Connection *c, int status, json_t *body);
/* Replies with text (heap, taken over) of the given Content-Type. */
hr_err *hr_http_reply_text(struct MHD_Connection *c, int status, const char *type, char *text);
hr_err *hr_http_reply_error(struct MHD_Connection *c, hr_api_kind api, int status, const char *msg);
/* Streams g's reply as SSE; takes ownership of g. */
hr_err *hr_http_reply_sse(struct MHD_Connection *c, hr_http_gen *g);
void hr_http_gen_wait(hr_http_gen *g);
/* Cancels every choice still generating and waits until the engine has finished them. */
void hr_http_gen_stop(hr_http_gen *g);
void hr_http_gen_free(hr_http_gen *g);

#endif
