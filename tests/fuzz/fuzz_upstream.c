/* libFuzzer target: the --isolate proxy's reading of an engine child's reply
 * (server/upstream.c). The input is a response head and body; the first byte seeds the
 * piece sizes. The head parser and the chunked decoder must never crash or read outside
 * the input, and must give the same result (bytes, done, error) whole and in pieces. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/upstream.h"

typedef struct {
    int done, failed, head_done;
    size_t head_used, out_len;
    char *out;
} outcome;

/* Feeds data in pieces of 1 + (seed-driven) bytes; step 0: whole. */
static void run(const uint8_t *data, size_t len, unsigned step, outcome *o) {
    hr_upstream_head *h = calloc(1, sizeof *h);
    hr_chunked dec = {0};
    *o = (outcome){.out = malloc(len + 1)};
    unsigned r = step;
    size_t off = 0;
    while (off < len && !o->failed && !dec.done) {
        size_t n = step ? 1 + (r = r * 1103515245u + 12345u) % 13 : len;
        if (n > len - off) n = len - off;
        char piece[64], *p = n <= sizeof piece ? piece : malloc(n);
        memcpy(p, data + off, n);
        size_t used = 0, got = 0;
        hr_err *e = NULL;
        if (!o->head_done) {
            e = hr_upstream_head_feed(h, p, n, &used, &o->head_done);
            o->head_used += used;
        }
        if (!e && o->head_done && used < n)
            e = hr_chunked_feed(&dec, p + used, n - used, p + used, &got);
        if (got) memcpy(o->out + o->out_len, p + used, got);
        o->out_len += got;
        if (e) o->failed = 1;
        hr_err_free(e);
        if (p != piece) free(p);
        off += n;
    }
    o->done = dec.done;
    if (o->head_done && !o->failed) {
        volatile size_t sink = 0;
        for (int i = 0; i < h->n_headers; i++)
            sink += strlen(h->headers[i].name) + strlen(h->headers[i].value);
        sink += hr_upstream_header_get(h, "content-type") != NULL;
        (void)sink;
    }
    free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
    if (!len) return 0;
    unsigned seed = data[0] | 1u;
    outcome whole, split;
    run(data + 1, len - 1, 0, &whole);
    run(data + 1, len - 1, seed, &split);
    int same = whole.failed == split.failed && whole.head_done == split.head_done;
    if (same && !whole.failed)
        same = whole.done == split.done && whole.head_used == split.head_used &&
               whole.out_len == split.out_len && !memcmp(whole.out, split.out, whole.out_len);
    free(whole.out);
    free(split.out);
    if (!same) abort();
    return 0;
}
