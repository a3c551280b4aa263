/* HTTP/1.1 response head and chunked body parsing for the --isolate proxy; see upstream.h.
 * Only what hearth's own server writes needs to pass, but anything else must fail cleanly
 * rather than be misread. */
#include "server/upstream.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Splits the complete head in h->buf (ending "\r\n\r\n", no NUL inside, so every
 * strstr below finds its line end) into status and headers. */
static hr_err *parse_head(hr_upstream_head *h) {
    char *line = h->buf, *end = strstr(line, "\r\n");
    *end = 0;
    if (strncmp(line, "HTTP/1.", 7) || !isdigit((unsigned char)line[7]) || line[8] != ' ' ||
        !isdigit((unsigned char)line[9]) || !isdigit((unsigned char)line[10]) ||
        !isdigit((unsigned char)line[11]) || (line[12] && line[12] != ' '))
        return hr_errf("the engine's response starts with \"%.40s\", not an HTTP status line",
                       line);
    h->status = atoi(line + 9);
    h->content_length = -1;
    for (line = end + 2; strncmp(line, "\r\n", 2); line = end + 2) {
        end = strstr(line, "\r\n");
        *end = 0;
        char *colon = strchr(line, ':');
        if (!colon || colon == line) return hr_errf("malformed response header \"%.60s\"", line);
        if (h->n_headers == HR_UPSTREAM_HEADERS_MAX)
            return hr_errf("the engine's response has more than %d headers",
                           HR_UPSTREAM_HEADERS_MAX);
        *colon = 0;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        h->headers[h->n_headers++] = (hr_upstream_header){line, v};
        if (!strcasecmp(line, "Transfer-Encoding")) h->chunked = !strcasecmp(v, "chunked");
        if (!strcasecmp(line, "Content-Length")) {
            char *e;
            errno = 0;
            long long n = strtoll(v, &e, 10);
            if (errno || e == v || *e || n < 0) return hr_errf("bad Content-Length \"%.30s\"", v);
            h->content_length = n;
        }
    }
    return NULL;
}

hr_err *hr_upstream_head_feed(hr_upstream_head *h, const char *data, size_t len, size_t *used,
                              int *done) {
    *done = 0;
    *used = 0;
    while (*used < len) {
        if (h->len == HR_UPSTREAM_HEAD_MAX)
            return hr_errf("the engine's response head is larger than %d bytes",
                           HR_UPSTREAM_HEAD_MAX);
        if (!data[*used]) return hr_errf("the engine's response head holds a NUL byte");
        h->buf[h->len++] = data[(*used)++];
        if (h->len >= 4 && !memcmp(h->buf + h->len - 4, "\r\n\r\n", 4)) {
            h->buf[h->len] = 0;
            *done = 1;
            return parse_head(h);
        }
    }
    return NULL;
}

const char *hr_upstream_header_get(const hr_upstream_head *h, const char *name) {
    for (int i = 0; i < h->n_headers; i++)
        if (!strcasecmp(h->headers[i].name, name)) return h->headers[i].value;
    return NULL;
}

/* Chunk grammar states: size digits, extension up to CR, LF after the size line, data,
 * CR and LF after data, then after the zero chunk trailer lines up to an empty one. */
enum { C_SIZE, C_EXT, C_SIZE_LF, C_DATA, C_DATA_CR, C_DATA_LF, C_TRAILER, C_TRAILER_LF, C_LAST_LF };

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One framing byte (not chunk data); returns nonzero on malformed framing. */
static int framing_byte(hr_chunked *d, char c) {
    switch (d->state) {
    case C_SIZE: {
        int v = hex_value(c);
        if (v >= 0 && d->digits < 15) {
            d->left = d->left * 16 + (uint64_t)v;
            d->digits++;
            return 0;
        }
        if (!d->digits) return 1;
        if (c == ';') return d->state = C_EXT, 0;
        if (c == '\r') return d->state = C_SIZE_LF, 0;
        return 1;
    }
    case C_EXT:
        if (c == '\r') d->state = C_SIZE_LF;
        return 0;
    case C_SIZE_LF:
        if (c != '\n') return 1;
        d->state = d->left ? C_DATA : C_TRAILER;
        return 0;
    case C_DATA_CR: return c == '\r' ? (d->state = C_DATA_LF, 0) : 1;
    case C_DATA_LF:
        if (c != '\n') return 1;
        d->state = C_SIZE;
        d->digits = 0;
        return 0;
    case C_TRAILER: /* at the start of a trailer line: CR ends the section */
        d->state = c == '\r' ? C_LAST_LF : C_TRAILER_LF;
        return 0;
    case C_TRAILER_LF:
        if (c == '\n') d->state = C_TRAILER;
        return 0;
    case C_LAST_LF:
        if (c != '\n') return 1;
        d->done = 1;
        return 0;
    }
    return 1;
}

hr_err *hr_chunked_feed(hr_chunked *d, const char *in, size_t in_len, char *out, size_t *out_len) {
    size_t i = 0, w = 0;
    while (i < in_len && !d->done) {
        if (d->state == C_DATA) {
            size_t n = in_len - i < d->left ? in_len - i : (size_t)d->left;
            memmove(out + w, in + i, n);
            w += n;
            i += n;
            d->left -= n;
            if (!d->left) d->state = C_DATA_CR;
            continue;
        }
        if (framing_byte(d, in[i++])) {
            *out_len = w;
            return hr_errf("the engine's chunked response is malformed");
        }
    }
    *out_len = w;
    return NULL;
}
