/* A minimal HTTP/1.1 client for `hearth bench-serve`: one POST per connection over a
 * plain TCP socket (no TLS), the response decoded (chunked or not) and split into SSE
 * data lines as they arrive, each handed to a callback with its arrival time. */
#ifndef HR_CLI_BENCH_HTTP_H
#define HR_CLI_BENCH_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct {
    char host[256];
    char port[8];
    char path[512]; /* the completions route, e.g. /v1/completions */
} hr_bench_url;

/* Parses http://host[:port][/prefix] into the /v1/completions route under it. */
hr_err *hr_bench_url_parse(const char *url, hr_bench_url *out);

/* Called with each SSE data payload (NUL-terminated, without "data: ") and the
 * monotonic time it arrived; returns nonzero to stop reading. */
typedef int (*hr_sse_fn)(void *ud, const char *data, uint64_t t_ns);

/* POSTs body (JSON) and streams the reply into fn. *status gets the HTTP status; a
 * non-2xx body is returned in the error message. */
hr_err *hr_bench_post_sse(const hr_bench_url *u, const char *api_key, const char *body,
                          hr_sse_fn fn, void *ud, int *status);

#endif
