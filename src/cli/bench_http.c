/* The bench-serve HTTP client (bench_http.h): connect, send, read the status line and
 * headers, then decode the body (chunked transfer coding or read-to-close) into lines
 * and pass the SSE "data: " ones on as they complete. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/bench_http.h"

hr_err *hr_bench_url_parse(const char *url, hr_bench_url *out) {
    memset(out, 0, sizeof *out);
    if (strncmp(url, "http://", 7))
        return hr_errf("--url %s: only http:// URLs are supported", url);
    const char *h = url + 7, *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    const char *colon = memchr(h, ':', hl);
    size_t namelen = colon ? (size_t)(colon - h) : hl;
    if (!namelen || namelen >= sizeof out->host) return hr_errf("--url %s: bad host", url);
    memcpy(out->host, h, namelen);
    snprintf(out->port, sizeof out->port, "%.*s", colon ? (int)(hl - namelen - 1) : 2,
             colon ? colon + 1 : "80");
    if (!atoi(out->port)) return hr_errf("--url %s: bad port", url);
    const char *prefix = slash ? slash : "";
    size_t pl = strlen(prefix);
    while (pl && prefix[pl - 1] == '/')
        pl--;
    int has_v1 = pl >= 3 && !strncmp(prefix + pl - 3, "/v1", 3);
    snprintf(out->path, sizeof out->path, "%.*s%s", (int)pl, prefix,
             has_v1 ? "/completions" : "/v1/completions");
    return NULL;
}

static hr_err *dial(const hr_bench_url *u, int *fd) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(u->host, u->port, &hints, &ai);
    if (rc) return hr_errf("%s: %s", u->host, gai_strerror(rc));
    *fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (*fd < 0 || connect(*fd, ai->ai_addr, ai->ai_addrlen)) {
        if (*fd >= 0) close(*fd);
        freeaddrinfo(ai);
        return hr_errf("cannot connect to %s:%s", u->host, u->port);
    }
    freeaddrinfo(ai);
    return NULL;
}

static hr_err *send_all(int fd, const char *s, size_t n) {
    while (n) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
        if (k <= 0) return hr_errf("send failed");
        s += k;
        n -= (size_t)k;
    }
    return NULL;
}

typedef struct {
    int fd;
    char buf[65536];
    size_t len, off; /* unread bytes are buf[off..len) */
} reader;

/* Reads more from the socket; 0 at end of stream. */
static int fill(reader *r) {
    if (r->off == r->len) r->off = r->len = 0;
    if (r->len == sizeof r->buf) {
        memmove(r->buf, r->buf + r->off, r->len - r->off);
        r->len -= r->off;
        r->off = 0;
    }
    ssize_t k = recv(r->fd, r->buf + r->len, sizeof r->buf - r->len, 0);
    if (k <= 0) return 0;
    r->len += (size_t)k;
    return 1;
}

/* Next CRLF- or LF-terminated line into line (NUL-terminated, without the ending). */
static int read_line(reader *r, char *line, size_t cap) {
    for (;;) {
        char *nl = memchr(r->buf + r->off, '\n', r->len - r->off);
        if (nl) {
            size_t n = (size_t)(nl - (r->buf + r->off));
            size_t m = n && nl[-1] == '\r' ? n - 1 : n;
            snprintf(line, cap, "%.*s", (int)(m < cap ? m : cap - 1), r->buf + r->off);
            r->off += n + 1;
            return 1;
        }
        if (!fill(r)) return 0;
    }
}

/* Body decoder state: SSE lines are accumulated across chunk boundaries in `sse`. */
typedef struct {
    char *sse;
    size_t len, cap;
    hr_sse_fn fn;
    void *ud;
    int stop;
} sse_state;

static void sse_feed(sse_state *s, const char *p, size_t n) {
    for (size_t i = 0; i < n && !s->stop; i++) {
        if (p[i] != '\n') {
            if (s->len + 2 > s->cap) {
                s->cap = s->cap ? s->cap * 2 : 4096;
                s->sse = realloc(s->sse, s->cap);
            }
            s->sse[s->len++] = p[i];
            continue;
        }
        if (s->len && s->sse[s->len - 1] == '\r') s->len--;
        if (s->sse) s->sse[s->len] = 0;
        if (s->len > 6 && !strncmp(s->sse, "data: ", 6))
            s->stop = s->fn(s->ud, s->sse + 6, hr_now_ns());
        s->len = 0;
    }
}

static void body_plain(reader *r, sse_state *s) {
    do {
        sse_feed(s, r->buf + r->off, r->len - r->off);
        r->off = r->len;
    } while (!s->stop && fill(r));
}

static hr_err *body_chunked(reader *r, sse_state *s) {
    char line[64];
    while (!s->stop) {
        if (!read_line(r, line, sizeof line)) return hr_errf("connection closed mid-chunk");
        size_t size = strtoul(line, NULL, 16);
        if (!size) return NULL;
        while (size) {
            if (r->off == r->len && !fill(r)) return hr_errf("connection closed mid-chunk");
            size_t n = r->len - r->off < size ? r->len - r->off : size;
            sse_feed(s, r->buf + r->off, n);
            r->off += n;
            size -= n;
        }
        if (!read_line(r, line, sizeof line)) return hr_errf("connection closed mid-chunk");
    }
    return NULL;
}

static hr_err *read_reply(reader *r, hr_sse_fn fn, void *ud, int *status) {
    char line[1024];
    if (!read_line(r, line, sizeof line) || sscanf(line, "HTTP/%*s %d", status) != 1)
        return hr_errf("no HTTP status line");
    int chunked = 0;
    while (read_line(r, line, sizeof line) && *line)
        if (!strncasecmp(line, "Transfer-Encoding:", 18) && strstr(line, "chunked")) chunked = 1;
    sse_state s = {.fn = fn, .ud = ud};
    hr_err *e = NULL;
    if (*status / 100 != 2) {
        size_t n = r->len - r->off;
        while (n < 400 && fill(r))
            n = r->len - r->off;
        e = hr_errf("HTTP %d: %.*s", *status, (int)(n < 400 ? n : 400), r->buf + r->off);
    } else if (chunked) {
        e = body_chunked(r, &s);
    } else {
        body_plain(r, &s);
    }
    free(s.sse);
    return e;
}

hr_err *hr_bench_post_sse(const hr_bench_url *u, const char *api_key, const char *body,
                          hr_sse_fn fn, void *ud, int *status) {
    *status = 0;
    int fd = -1;
    HR_TRY(dial(u, &fd));
    char head[1024];
    int n =
        snprintf(head, sizeof head,
                 "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                 "Accept: text/event-stream\r\nContent-Length: %zu\r\nConnection: close\r\n"
                 "%s%s%s\r\n",
                 u->path, u->host, u->port, strlen(body), api_key ? "Authorization: Bearer " : "",
                 api_key ? api_key : "", api_key ? "\r\n" : "");
    reader *r = calloc(1, sizeof *r);
    hr_err *e = r ? send_all(fd, head, (size_t)n) : hr_err_oom();
    if (!e) e = send_all(fd, body, strlen(body));
    if (!e) {
        r->fd = fd;
        e = read_reply(r, fn, ud, status);
    }
    free(r);
    close(fd);
    return e;
}
