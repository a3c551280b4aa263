/* The --isolate proxy's reading of the engine child's responses (server/upstream.c): heads
 * and chunked bodies whole, byte by byte and in random splits; truncated and malformed
 * input; and unix socket listen/connect errors (server/unix_socket.c). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "server/unix_socket.h"
#include "server/upstream.h"

static const char HEAD[] = "HTTP/1.1 200 OK\r\nDate: x\r\nContent-Type: text/event-stream\r\n"
                           "Transfer-Encoding: chunked\r\nx-empty:\r\n\r\nBODY";

/* Feeds s in pieces of at most step bytes (0: random pieces); returns the bytes used. */
static size_t feed_head(hr_upstream_head *h, const char *s, size_t len, size_t step, int *done,
                        hr_err **e) {
    size_t off = 0;
    *done = 0;
    while (off < len && !*done) {
        size_t n = step ? step : 1 + (size_t)rand() % 7;
        if (n > len - off) n = len - off;
        size_t used;
        *e = hr_upstream_head_feed(h, s + off, n, &used, done);
        off += used;
        if (*e) break;
    }
    return off;
}

static void test_head_splits(void) {
    size_t steps[] = {1, 3, 1000, 0};
    for (int k = 0; k < 4; k++) {
        hr_upstream_head *h = calloc(1, sizeof *h);
        int done;
        hr_err *e = NULL;
        size_t used = feed_head(h, HEAD, strlen(HEAD), steps[k], &done, &e);
        HR_CHECK_OK(e);
        HR_CHECK(done && used == strlen(HEAD) - 4, "step %zu: done %d used %zu", steps[k], done,
                 used);
        HR_CHECK(h->status == 200 && h->chunked && h->content_length == -1, "status %d", h->status);
        HR_CHECK(!strcmp(hr_upstream_header_get(h, "content-type"), "text/event-stream"), "type");
        HR_CHECK(!strcmp(hr_upstream_header_get(h, "X-Empty"), ""), "empty value");
        HR_CHECK(!hr_upstream_header_get(h, "Content-Length"), "absent header");
        free(h);
    }
}

static void test_head_length(void) {
    hr_upstream_head h = {0};
    const char *s = "HTTP/1.1 404 Not Found\r\nContent-Length: 12\r\n\r\n";
    size_t used;
    int done;
    HR_CHECK_OK(hr_upstream_head_feed(&h, s, strlen(s), &used, &done));
    HR_CHECK(done && h.status == 404 && !h.chunked && h.content_length == 12, "parsed");
    hr_upstream_head p = {0};
    HR_CHECK_OK(hr_upstream_head_feed(&p, s, 20, &used, &done));
    HR_CHECK(!done && used == 20, "a partial head needs more");
}

static void expect_head_error(const char *s, const char *what) {
    hr_upstream_head *h = calloc(1, sizeof *h);
    size_t used;
    int done;
    hr_err *e = hr_upstream_head_feed(h, s, strlen(s), &used, &done);
    free(h);
    HR_CHECK(e && strstr(hr_err_msg(e), what), "%s: %s", s, e ? hr_err_msg(e) : "accepted");
    hr_err_free(e);
}

static void test_head_errors(void) {
    expect_head_error("SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP status line");
    expect_head_error("HTTP/1.1 20 OK\r\n\r\n", "not an HTTP status line");
    expect_head_error("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed response header");
    expect_head_error("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", "bad Content-Length");
    expect_head_error("HTTP/1.1 200 OK\r\nContent-Length: 9x\r\n\r\n", "bad Content-Length");
    hr_upstream_head *h = calloc(1, sizeof *h);
    size_t used;
    int done;
    hr_err *e = hr_upstream_head_feed(h, "HTTP/1.1 200 OK\r\nA\0: b\r\n\r\n", 24, &used, &done);
    free(h);
    HR_CHECK(e && strstr(hr_err_msg(e), "NUL byte"), "a NUL in the head: %s",
             e ? hr_err_msg(e) : "accepted");
    hr_err_free(e);
    char *big = malloc(HR_UPSTREAM_HEAD_MAX + 100);
    memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
    memset(big + 20, 'a', HR_UPSTREAM_HEAD_MAX + 50);
    big[HR_UPSTREAM_HEAD_MAX + 70] = 0;
    expect_head_error(big, "larger than");
    free(big);
    char many[8192] = "HTTP/1.1 200 OK\r\n";
    for (int i = 0; i <= HR_UPSTREAM_HEADERS_MAX; i++)
        strcat(many, "A: b\r\n");
    strcat(many, "\r\n");
    expect_head_error(many, "more than");
}

static const char BODY[] = "9\r\ndata: 1\n\n\r\n1A;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n"
                           "0\r\nTrailer: t\r\n\r\nAFTER";

/* Decodes BODY in pieces (0: random), out must be the payload; returns whether done. */
static int decode(size_t step, char *out, size_t *out_len, hr_err **e) {
    hr_chunked d = {0};
    size_t len = strlen(BODY), off = 0;
    *out_len = 0;
    *e = NULL;
    while (off < len) {
        size_t n = step ? step : 1 + (size_t)rand() % 9;
        if (n > len - off) n = len - off;
        char piece[64];
        memcpy(piece, BODY + off, n);
        size_t got;
        *e = hr_chunked_feed(&d, piece, n, piece, &got); /* in place */
        memcpy(out + *out_len, piece, got);
        *out_len += got;
        off += n;
        if (*e) break;
    }
    return d.done;
}

static void test_chunked_splits(void) {
    const char *want = "data: 1\n\nabcdefghijklmnopqrstuvwxyz";
    for (int k = 0; k < 60; k++) {
        size_t step = k < 10 ? (size_t)k + 1 : 0;
        char out[128];
        size_t n;
        hr_err *e;
        int done = decode(step, out, &n, &e);
        HR_CHECK_OK(e);
        HR_CHECK(done && n == strlen(want) && !memcmp(out, want, n), "step %zu: %.*s", step, (int)n,
                 out);
    }
}

static void test_chunked_truncated(void) {
    hr_chunked d = {0};
    char buf[64];
    size_t n;
    memcpy(buf, BODY, 20);
    HR_CHECK_OK(hr_chunked_feed(&d, buf, 20, buf, &n));
    HR_CHECK(!d.done && n == 9, "a body cut mid-chunk is not done (%zu)", n);
}

static void test_chunked_errors(void) {
    const char *bad[] = {"x\r\n", "5\r\nabcdeXY", "5\n",
                         "\r\n",  "0\r\n\rX",     "1234567890abcdef0\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hr_chunked d = {0};
        char buf[64];
        size_t n;
        memcpy(buf, bad[i], strlen(bad[i]));
        hr_err *e = hr_chunked_feed(&d, buf, strlen(bad[i]), buf, &n);
        HR_CHECK(e && !d.done, "%zu: %s accepted", i, bad[i]);
        hr_err_free(e);
    }
}

static void test_unix_socket(void) {
    char dir[] = "/tmp/hearth-test-XXXXXX", path[128];
    HR_CHECK(mkdtemp(dir), "mkdtemp");
    snprintf(path, sizeof path, "%s/s.sock", dir);
    int fd, c;
    hr_err *e = hr_unix_connect(path, &c);
    HR_CHECK(e && strstr(hr_err_msg(e), "cannot connect"), "no listener: %s",
             e ? hr_err_msg(e) : "connected");
    hr_err_free(e);
    HR_CHECK_OK(hr_unix_listen(path, &fd));
    HR_CHECK_OK(hr_unix_connect(path, &c));
    close(c);
    close(fd);
    HR_CHECK_OK(hr_unix_listen(path, &fd)); /* the stale socket file is replaced */
    close(fd);
    unlink(path);
    char longp[200];
    memset(longp, 'a', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = 0;
    e = hr_unix_listen(longp, &fd);
    HR_CHECK(e && strstr(hr_err_msg(e), "longer than"), "long path: %s", e ? hr_err_msg(e) : "ok");
    hr_err_free(e);
    snprintf(path, sizeof path, "%s/no/such/dir.sock", dir);
    e = hr_unix_listen(path, &fd);
    HR_CHECK(e && strstr(hr_err_msg(e), "cannot listen"), "missing dir: %s",
             e ? hr_err_msg(e) : "ok");
    hr_err_free(e);
    rmdir(dir);
}

int main(void) {
    srand(7);
    HR_RUN(test_head_splits);
    HR_RUN(test_head_length);
    HR_RUN(test_head_errors);
    HR_RUN(test_chunked_splits);
    HR_RUN(test_chunked_truncated);
    HR_RUN(test_chunked_errors);
    HR_RUN(test_unix_socket);
    return hr_test_summary();
}
