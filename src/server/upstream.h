/* Reading an HTTP/1.1 response that the engine child of `hearth serve --isolate` writes
 * to the supervisor's proxy: the head (status line and headers) and a body delimited by
 * Content-Length or chunked transfer coding. Pure parsing over bytes given in any pieces,
 * so a truncated body (the child died) is told apart from a finished one. */
#ifndef HR_SERVER_UPSTREAM_H
#define HR_SERVER_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define HR_UPSTREAM_HEAD_MAX 16384 /* bytes of status line + headers */
#define HR_UPSTREAM_HEADERS_MAX 64

typedef struct {
    const char *name, *value; /* NUL-terminated, inside the head's own buffer */
} hr_upstream_header;

typedef struct {
    char buf[HR_UPSTREAM_HEAD_MAX + 1];
    size_t len;
    int status;
    int n_headers;
    hr_upstream_header headers[HR_UPSTREAM_HEADERS_MAX];
    int chunked;            /* Transfer-Encoding: chunked */
    int64_t content_length; /* -1: none (then the body ends with the connection) */
} hr_upstream_head;

/* Feeds bytes of the response's start. Returns 1 once the head is complete (*used: the
 * bytes of data it took; the rest are body), 0 when it needs more, and an error for a
 * head that does not parse or is larger than HR_UPSTREAM_HEAD_MAX. */
hr_err *hr_upstream_head_feed(hr_upstream_head *h, const char *data, size_t len, size_t *used,
                              int *done);
/* The value of header name (case-insensitive), NULL when absent. */
const char *hr_upstream_header_get(const hr_upstream_head *h, const char *name);

/* A chunked body being decoded. */
typedef struct {
    int state;     /* where in the chunk grammar (upstream.c) */
    uint64_t left; /* bytes left in the current chunk's data */
    int digits;    /* hex digits read of the current size line */
    int done;      /* the last chunk and trailer section were read */
} hr_chunked;

/* Decodes in[0..in_len) into out (in place is fine: out may equal in), *out_len bytes of
 * payload; stops after the terminating chunk (dec->done; later bytes are ignored).
 * Returns an error for malformed framing. */
hr_err *hr_chunked_feed(hr_chunked *dec, const char *in, size_t in_len, char *out, size_t *out_len);

#endif
